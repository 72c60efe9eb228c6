"""What the file-reading `batchgate` commands share: bad input is one line naming the fix, never
a traceback or argparse's exit from inside the process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn


class BadInput(Exception):
    """Input a command cannot use; its message is the one line the user sees."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are BadInput, so `main` prints them and returns 2."""

    def error(self, message: str) -> NoReturn:
        raise BadInput(message)


def read_source(source: str) -> str:
    """A file's text, or stdin's for `-`; BadInput saying why it cannot be read."""
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
