"""Running the demo as a user would: `python -m demo.main ARGS` against this worktree's code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path:
    """`shared/corpus` beside the clone (CI) or beside an ancestor (a worktree); fail loudly if absent."""
    for folder in REPO_ROOT.parents:
        if (folder / "shared" / "corpus").is_dir():
            return folder / "shared" / "corpus"
    raise FileNotFoundError(f"shared/corpus not found beside {REPO_ROOT} or any parent")


def demo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "demo.main", *args]


def demo_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def run_demo(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(demo_command(*args), capture_output=True, text=True, env=demo_env(), timeout=timeout,
                          cwd=REPO_ROOT)


def popen_demo(*args: str, stderr: IO[str]) -> subprocess.Popen[str]:
    """The demo in the background; its stderr goes to a file, so a chatty demo never blocks on a
    full pipe and a failing test can show what it said."""
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": stderr, "text": True,
                               "env": demo_env(), "cwd": REPO_ROOT}
    return subprocess.Popen(demo_command(*args), **options)
