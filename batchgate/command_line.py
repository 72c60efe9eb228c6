"""What the file-reading `batchgate` commands share: bad input is one line naming the fix, never
a traceback or argparse's exit from inside the process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, NoReturn


def kubectl_plugin(program: str) -> bool:
    """Whether the program runs under a kubectl plugin's name (`kubectl-batchgate`, as kubectl
    runs it: argv[0] is the plugin's path), where errors read as kubectl's."""
    return Path(program).name.startswith("kubectl-")


def error_line(prog: str, message: str, program: str) -> tuple[str, int]:
    """Bad input's line and exit status: kubectl's `error: MESSAGE`, 1, under the plugin name;
    `PROG: MESSAGE`, 2, as batchgate's own commands print it."""
    return (f"error: {message}", 1) if kubectl_plugin(program) else (f"{prog}: {message}", 2)


def fail(prog: str, message: str) -> int:
    """Print bad input's line on stderr (as `error_line` words it for this program); its exit status."""
    line, code = error_line(prog, message, sys.argv[0])
    print(line, file=sys.stderr)
    return code


class BadInput(Exception):
    """Input a command cannot use; its message is the one line the user sees."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are BadInput, so `main` prints them (`fail`) and returns."""

    def error(self, message: str) -> NoReturn:
        raise BadInput(message)


def read_source(source: str) -> str:
    """A file's text, or stdin's for `-`; BadInput saying why it cannot be read."""
    try:
        return sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None


class Refused(Exception):
    """What stops a command's output, one line each; `code` is its exit status."""

    def __init__(self, lines: list[str] | tuple[str, ...], code: int = 2) -> None:
        super().__init__("\n".join(lines))
        self.code = code


def run_command(prog: str, produce: Callable[[list[str]], str], argv: list[str] | None) -> int:
    """Print what `produce` makes of the arguments, exit 0; or its BadInput (as `fail` words it)
    or Refused lines on stderr with nothing on stdout, so a pipe never applies half an answer."""
    try:
        text = produce(sys.argv[1:] if argv is None else argv)
    except BadInput as exc:
        return fail(prog, str(exc))
    except Refused as exc:
        print(exc, file=sys.stderr)
        return exc.code
    sys.stdout.write(text)
    return 0
