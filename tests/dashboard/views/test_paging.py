"""Paging a list: the rows on a page, the page count and the links either side."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.views.paging import page_of


@pytest.mark.parametrize("items, number, size, rows, pages, previous, next_", [
    pytest.param(list(range(250)), 1, 100, (0, 99), 3, None, 2, id="the first page has no previous page"),
    pytest.param(list(range(250)), 3, 100, (200, 249), 3, 2, None, id="the last page holds the remainder"),
    pytest.param(list(range(250)), 99, 100, (200, 249), 3, 2, None, id="a page past the end shows the last page"),
    pytest.param(list(range(250)), 0, 100, (0, 99), 3, None, 2, id="page zero shows the first page"),
    pytest.param([], 1, 100, None, 1, None, None, id="an empty list is one empty page"),
])
def test_paging(items: list[int], number: int, size: int, rows: Any, pages: int, previous: Any, next_: Any) -> None:
    page = page_of(items, number, size)
    assert (page.rows[0], page.rows[-1]) == rows if rows else page.rows == ()
    assert (page.pages, page.previous, page.next, page.total) == (pages, previous, next_, len(items))
