"""How the demo talks: a line per step with the seconds since it began, kubectl's own words indented."""

from __future__ import annotations

import sys
from typing import TextIO

from batchgate.clock import Clock

INDENT = "         "


class Narrator:
    def __init__(self, clock: Clock, out: TextIO = sys.stdout) -> None:
        self.clock = clock
        self.out = out
        self.started = clock.monotonic()

    def section(self, title: str) -> None:
        print(f"\n== {title} ==", file=self.out, flush=True)

    def say(self, text: str) -> None:
        elapsed = self.clock.monotonic() - self.started
        print(f"[{elapsed:5.1f}s] {text}", file=self.out, flush=True)

    def quote(self, text: str) -> None:
        """Output of a command, verbatim, indented under the step that ran it."""
        for line in text.rstrip("\n").splitlines():
            print(f"{INDENT}{line}", file=self.out)
        self.out.flush()
