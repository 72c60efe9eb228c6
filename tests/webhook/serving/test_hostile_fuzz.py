"""The hostile-review fuzzer (bench/hostile_reviews.py) at a small count, in-process: every shape
that once ended in a 500, an exception's name or unbounded work gets a clear answer.

bench/hostile_reviews.py runs the same generator at 100,000 against the real gateway over TLS.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.hostile_reviews import HostileReviews, unclear
from tests.webhook.serving.test_app import build_app

COUNT = 400


@pytest.mark.parametrize("seed", [19, 2026])
def test_hostile_reviews_all_get_clear_answers(tmp_path: Path, seed: int) -> None:
    app, _ = build_app(tmp_path)
    client = app.test_client()
    generator = HostileReviews(seed)
    problems = []
    for i in range(COUNT):
        body = generator.next()
        path = "/mutate" if i % 2 else "/validate"
        response = client.post(path, data=body, content_type="application/json")
        problem = unclear(response.status_code, response.data, body)
        if problem:
            problems.append((i, problem, body[:200]))
    assert problems == []


def test_every_shape_is_generated() -> None:
    generator = HostileReviews(19)
    for shape in generator.shapes:
        assert isinstance(shape(), bytes)
