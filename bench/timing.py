"""The micro-benchmarks' one way to time a call: mean wall seconds over many calls in a row."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def seconds_per_call(run: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - start) / calls
