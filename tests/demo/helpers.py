"""Running the demo as a user would: `python -m demo.main ARGS` against this worktree's code, or
`make demo` in a clone of it alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def demo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "demo.main", *args]


def demo_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), **extra}


def run_demo(*args: str, timeout: float, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The demo to its end; `env`: variables to set for it (e.g. an empty BATCHGATE_CACHE)."""
    return subprocess.run(demo_command(*args), capture_output=True, text=True, env=demo_env(**(env or {})),
                          timeout=timeout, cwd=REPO_ROOT)


def popen_demo(*args: str, stderr: IO[str], env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """The demo in the background; its stderr goes to a file, so a chatty demo never blocks on a
    full pipe and a failing test can show what it said."""
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": stderr, "text": True,
                               "env": demo_env(**(env or {})), "cwd": REPO_ROOT}
    return subprocess.Popen(demo_command(*args), **options)


def clone_alone(destination: Path) -> Path:
    """This checkout as a user clones it, at `destination` (under /tmp in the tests), with nothing
    beside it (no shared/corpus) and its own `.venv` inside, as `make` leaves one.

    The files are git's (tracked, and new ones not ignored, so uncommitted work is what runs).
    The virtualenv is this interpreter's, made with `venv`; instead of fetching the pinned
    packages again as pip would, it reads them from the running virtualenv's site-packages,
    after the clone itself (its packages, as an editable install puts them), and has the
    `batchgate` console script. Make's stamp is touched so that `make demo` runs at once."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    venv = destination / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "batchgate-clone.pth").write_text(f"{destination}\n{sysconfig.get_paths()['purelib']}\n")
    script = venv / "bin" / "batchgate"
    script.write_text(f"#!{python}\nimport sys\nfrom batchgate.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    (venv / ".installed").touch()
    return destination
