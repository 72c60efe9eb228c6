"""Server-side paging: a page of a long list and what the page links need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Sequence, TypeVar

T = TypeVar("T")

PAGE_SIZE = 100
"""Rows per page: a page of 15,000 Workloads renders in milliseconds and reads on one screen."""


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: tuple[T, ...]
    number: int  # 1-based, clamped into range
    pages: int
    total: int
    first: int  # 1-based position of rows[0] in the whole list (0 when empty)

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


def page_of(items: Sequence[T], number: int, size: int = PAGE_SIZE) -> Page[T]:
    """Page `number` of `items`; a number out of range gives the nearest page, never an error."""
    pages = max(1, -(-len(items) // size))
    number = min(max(1, number), pages)
    start = (number - 1) * size
    rows = tuple(items[start:start + size])
    return Page(rows, number, pages, len(items), start + 1 if rows else 0)
