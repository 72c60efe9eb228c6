"""The collector settings both long-running processes start with, checked in a fresh interpreter
(the test process's own collector is left as it is)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc
before = gc.get_freeze_count()
from batchgate.collector import YOUNG_THRESHOLD, settle_started_process
kept = [[i] for i in range(1000)]  # alive when the process has started
settle_started_process()
print(gc.get_threshold()[0] == YOUNG_THRESHOLD, gc.get_freeze_count() >= before + 1000,
      gc.get_threshold()[1:] == (10, 10))
"""


def test_settling_raises_the_young_threshold_and_freezes_what_is_alive() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]

