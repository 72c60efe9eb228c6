"""Writes a projected volume's files as the kubelet's atomic writer does, so a running process
sees a Secret or ConfigMap change all at once:

  <dir>/..2026_11_26_18_40_01.123456/<files>   the current payload
  <dir>/..data -> ..2026_...                   swapped by rename(2), atomically
  <dir>/<top-level name> -> ..data/<name>      one symlink per top-level entry
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

from localcluster.sim.volumes import Projection

DATA = "..data"


def payload(projection: Projection) -> dict[str, tuple[bytes, int]]:
    return {f.path: (f.data, f.mode) for f in projection.files}


def current(directory: Path) -> dict[str, tuple[bytes, int]]:
    """What the volume holds now (empty if never written)."""
    data = directory / DATA
    if not data.is_symlink():
        return {}
    root = data.resolve()
    out = {}
    for path in root.rglob("*"):
        if path.is_file():
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mode & 0o777)
    return out


def write(directory: Path, projection: Projection, now: dt.datetime) -> bool:
    """Bring the volume to the projection's content; True if anything changed."""
    directory.mkdir(parents=True, exist_ok=True)
    if projection.kind == "emptyDir":
        return False
    wanted = payload(projection)
    if (directory / DATA).is_symlink() and current(directory) == wanted:
        return False
    stamp = now.strftime("..%Y_%m_%d_%H_%M_%S.%f")
    staged = directory / stamp
    suffix = 0
    while staged.exists():
        suffix += 1
        staged = directory / f"{stamp}{suffix}"
    staged.mkdir(mode=0o755)
    for rel, (data, mode) in wanted.items():
        target = staged / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)
    old = (directory / DATA).resolve() if (directory / DATA).is_symlink() else None
    tmp = directory / "..data_tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(staged.name)
    os.rename(tmp, directory / DATA)
    tops = {rel.split("/", 1)[0] for rel in wanted}
    for top in tops:
        link = directory / top
        if not link.is_symlink():
            link.symlink_to(f"{DATA}/{top}")
    for entry in directory.iterdir():
        if entry.is_symlink() and not entry.name.startswith("..") and entry.name not in tops:
            entry.unlink()
    if old is not None and old != staged.resolve() and old.parent == directory.resolve():
        shutil.rmtree(old, ignore_errors=True)
    return True
