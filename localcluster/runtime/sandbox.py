"""The first moments of a container process, run as a script by the process kubelet:

  python sandbox.py SPEC.json

It dies with its parent (PR_SET_PDEATHSIG, so a crashed cluster leaves no orphans), enters a
private mount namespace (the bind mounts the kubelet laid out, `sim/sandbox_layout.py`: the pod's
volumes and the image's own paths they cover, are made there and nowhere else), changes to the
working directory, and execs the container's argv with its environment. Standard library only:
it runs before anything else in the new process.
SPEC is JSON: {"parent": pid, "argv": [...], "env": {...}, "workingDir": "/", "mounts":
[{"source": "/abs/path", "target": "/mount/path", "readOnly": true}]}, mounts in the order to
make them. Mount failures and an argv that cannot be executed print the reason and exit 128, as a
container runtime's StartError.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import sys

PR_SET_PDEATHSIG = 1
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
START_ERROR = 128


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, flags: int) -> None:
    _check(libc.mount(source.encode() if source else None, target.encode(), None, flags, None),
           f"mount {source or ''} on {target}")


def _open_source(path: str) -> str:
    """A path that keeps naming `path`'s file whatever is mounted over its directories later."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as err:
        raise OSError(err.errno, f"mount {path}: {os.strerror(err.errno or 0)}") from None
    return f"/proc/self/fd/{fd}"


def _mount_point(source: str, target: str) -> None:
    """Create what a bind mount needs to land on: a directory, or an empty file for a file."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    elif not os.path.exists(target):
        os.makedirs(os.path.dirname(target) or "/", exist_ok=True)
        with open(target, "a"):
            pass


def main(spec_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    libc = _libc()
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    if os.getppid() != spec["parent"]:  # the parent died before we asked to die with it
        os._exit(START_ERROR)
    try:
        _check(libc.unshare(CLONE_NEWNS), "unshare")
        _mount(libc, None, "/", MS_REC | MS_PRIVATE)
        mounts = spec.get("mounts") or []
        # Every source is held open before the first mount: an emptyDir at /tmp would otherwise
        # hide the kubelet's own directory when it lies under /tmp, as a workdir often does.
        sources = [_open_source(m["source"]) for m in mounts]
        for m, source in zip(mounts, sources):
            _mount_point(source, m["target"])
            _mount(libc, source, m["target"], MS_BIND | MS_REC)
        # Read-only last: a later mount may need its mount point made inside a read-only volume.
        for m in mounts:
            if m.get("readOnly"):
                _mount(libc, None, m["target"], MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)
        working_dir = spec.get("workingDir") or "/"
        os.makedirs(working_dir, exist_ok=True)
        os.chdir(working_dir)
    except OSError as err:
        print(f"failed to create containerd task: failed to create shim task: OCI runtime create failed: {err}",
              file=sys.stderr, flush=True)
        os._exit(START_ERROR)
    argv, env = spec["argv"], spec["env"]
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH", os.defpath))
    try:
        if program is None:
            raise FileNotFoundError(argv[0])
        os.execve(program, argv, env)
    except OSError:
        print(f'failed to create containerd task: failed to create shim task: OCI runtime create failed: '
              f'exec: "{argv[0]}": executable file not found in $PATH', file=sys.stderr, flush=True)
        os._exit(START_ERROR)


if __name__ == "__main__":
    main(sys.argv[1])
