"""A container's log as the kubelet serves it: a process pod's output from the kubelet's log
files (`<logs>/<ns>_<pod>_<uid>/<container>/<restart>.log`), with `previous`, `tailLines`,
`limitBytes` and `follow`; a simulated pod's couple of lines about what its script did.

One reader for both ways a log is asked for: the stand-in API server's pods/log, and the kubelet
server a real kube-apiserver proxies `kubectl logs` to (runtime/kubelet_server.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.sim.kubelet import log_lines
from localcluster.sim.process_pod import log_file

FOLLOW_POLL_SECONDS = 0.2


class LogError(Exception):
    """A log that cannot be served; the message is the one kubectl prints (HTTP 400)."""


def container_name(pod: dict[str, Any], requested: str | None) -> str:
    spec = pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []] + [c["name"] for c in spec.get("initContainers") or []]
    name = pod["metadata"]["name"]
    if not requested:
        if len(names) != 1:
            raise LogError(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")
        return names[0]
    if requested not in names:
        raise LogError(f"container {requested} is not valid for pod {name}")
    return requested


def _status(pod: dict[str, Any], container: str) -> dict[str, Any]:
    return next((cs for cs in (pod.get("status") or {}).get("containerStatuses") or [] if cs.get("name") == container), {})


def _tail(data: bytes, lines: int | None) -> bytes:
    if lines is None:
        return data
    if lines <= 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


@dataclass(frozen=True)
class Log:
    """What to send first, and for a process pod's running container where to follow from."""

    data: bytes
    path: Path | None = None
    offset: int = 0
    attempt: int = 0


def read(root: Path | None, pod: dict[str, Any], container: str, now: dt.datetime, *, previous: bool = False,
         tail: int | None = None, limit: int | None = None) -> Log:
    name = pod["metadata"]["name"]
    if root is None or not log_file(root, pod, container, 0).exists():
        if not (pod.get("spec") or {}).get("nodeName"):
            raise LogError(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
        if previous:
            raise LogError(f'previous terminated container "{container}" in pod "{name}" not found')
        text = _tail(("\n".join(log_lines(pod, container, now)) + "\n").encode(), tail)
        return Log(text[:limit] if limit else text)
    restarts = int(_status(pod, container).get("restartCount") or 0)
    attempt = restarts - 1 if previous else restarts
    path = log_file(root, pod, container, attempt)
    if attempt < 0 or not path.exists():
        if previous:
            raise LogError(f'previous terminated container "{container}" in pod "{name}" not found')
        raise LogError(f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
    full = path.read_bytes()
    data = _tail(full, tail)
    return Log(data[:limit] if limit else data, None if previous else path, len(full), attempt)


def _read_from(path: Path, offset: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read()


async def follow(log: Log, container: str, uid: str, current: Callable[[], dict[str, Any] | None],
                 write: Callable[[bytes], Awaitable[Any]]) -> None:
    """Write the file as it grows until this run of the container has ended (or the pod is gone);
    `current` reads the pod as it is now."""
    assert log.path is not None
    offset = log.offset
    await write(log.data)
    while True:
        pod = current()
        status = _status(pod, container) if pod is not None and pod["metadata"].get("uid") == uid else {}
        ended = "running" not in (status.get("state") or {}) or int(status.get("restartCount") or 0) != log.attempt
        chunk = _read_from(log.path, offset)  # read after the status: a process's output is written before it ends
        if chunk:
            offset += len(chunk)
            await write(chunk)
        if ended:
            break
        if not chunk:
            await asyncio.sleep(FOLLOW_POLL_SECONDS)
