"""The status of a pod whose containers run as real processes, from what the runtime observed.

The runtime keeps one `ContainerRecord` per container (started, exited, probe verdicts, why it
waits) and asks here what to report: container statuses, phase, conditions; and after an exit,
whether and when to restart (restartPolicy, the kubelet's crash-loop backoff shared with the
simulated kubelet).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.sim.images import image_matches
from localcluster.sim.kubelet import Exit, restart_delay, restarts_after
from localcluster.sim.units import format_time

Obj = Mapping[str, Any]
CREATING = "ContainerCreating"
CONFIG_ERROR = "CreateContainerConfigError"
CRASH_LOOP = "CrashLoopBackOff"


@dataclass(frozen=True)
class ContainerRecord:
    name: str
    image: str
    restarts: int = 0
    running_since: dt.datetime | None = None
    started: bool = False  # the startup probe passed (true at once without one)
    ready: bool = False
    last_exit: Exit | None = None
    final: bool = False  # exited and will not restart
    waiting_reason: str = CREATING
    waiting_message: str = ""


@dataclass(frozen=True)
class Restart:
    """What follows an exit: restart at `at` (None: the container stays terminated)."""

    at: dt.datetime | None
    record: ContainerRecord


def runs_as_processes(pod: Obj, run_images: Sequence[str]) -> bool:
    """A pod runs for real when every one of its containers uses a run image (mixed pods stay simulated)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    return bool(run_images) and bool(containers) and all(image_matches(str(c.get("image", "")), run_images)
                                                         for c in containers)


def after_exit(record: ContainerRecord, code: int, finished: dt.datetime, restart_policy: str,
               pod_name: str, namespace: str, uid: str) -> Restart:
    started = record.running_since or finished
    exit_ = Exit(code, started, finished)
    exited = functools.partial(ContainerRecord, record.name, record.image, record.restarts, last_exit=exit_)
    if not restarts_after(code, restart_policy):
        return Restart(None, exited(final=True, waiting_reason=""))
    delay = restart_delay(record.restarts + 1, finished - started)
    if delay <= dt.timedelta(0):
        return Restart(finished, exited(waiting_reason=CREATING))
    message = (f"back-off {int(delay.total_seconds())}s restarting failed container={record.name} "
               f"pod={pod_name}_{namespace}({uid})")
    return Restart(finished + delay, exited(waiting_reason=CRASH_LOOP, waiting_message=message))


def _terminated(exit_: Exit, container_id: str) -> dict[str, Any]:
    return {"terminated": {"exitCode": exit_.code, "reason": exit_.reason, "startedAt": format_time(exit_.started),
                           "finishedAt": format_time(exit_.finished), "containerID": container_id}}


def log_file(root: Path, pod: Obj, container: str, attempt: int) -> Path:
    """Where the kubelet keeps one run's output: `<root>/<ns>_<pod>_<uid>/<container>/<attempt>.log`."""
    meta = pod.get("metadata") or {}
    return root / f"{meta.get('namespace', '')}_{meta.get('name', '')}_{meta.get('uid', '')}" / container / f"{attempt}.log"


def container_id(uid: str, name: str, restarts: int) -> str:
    return f"localcluster://{uid}/{name}/{restarts}"


def container_status(uid: str, record: ContainerRecord) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": record.name, "image": record.image, "imageID": f"{record.image}@localcluster",
        "restartCount": record.restarts, "ready": record.ready and record.running_since is not None,
        "started": record.started and record.running_since is not None, "lastState": {},
    }
    if record.running_since is not None:
        status["containerID"] = container_id(uid, record.name, record.restarts)
        status["state"] = {"running": {"startedAt": format_time(record.running_since)}}
    elif record.final and record.last_exit is not None:
        status["containerID"] = container_id(uid, record.name, record.restarts)
        status["state"] = _terminated(record.last_exit, status["containerID"])
        return status
    else:
        waiting: dict[str, Any] = {"reason": record.waiting_reason}
        if record.waiting_message:
            waiting["message"] = record.waiting_message
        status["state"] = {"waiting": waiting}
    if record.last_exit is not None:
        previous = record.restarts - 1 if record.running_since is not None else record.restarts
        status["lastState"] = _terminated(record.last_exit, container_id(uid, record.name, max(previous, 0)))
    return status


def _condition(kind: str, ok: bool, since: dt.datetime, reason: str = "", message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": format_time(since)}
    if not ok and reason:
        out["reason"] = reason
        if message:
            out["message"] = message
    return out


def phase(records: Sequence[ContainerRecord]) -> str:
    if records and all(r.final for r in records):
        return "Succeeded" if all(r.last_exit is not None and r.last_exit.code == 0 for r in records) else "Failed"
    if any(r.running_since is not None or r.last_exit is not None for r in records):
        return "Running"
    return "Pending"


def pod_status(pod: Obj, records: Sequence[ContainerRecord], *, start_time: dt.datetime, host_ip: str,
               pod_ip: str, previous: Obj, now: dt.datetime, mounted: bool) -> dict[str, Any]:
    """The pods/status the kubelet posts; a condition's time moves only when its value changes."""
    uid = (pod.get("metadata") or {}).get("uid", "")
    statuses = [container_status(uid, r) for r in records]
    current = phase(records)
    ready = all(s["ready"] for s in statuses) and current == "Running"
    unready = [s["name"] for s in statuses if not s["ready"]]
    message = f"containers with unready status: [{' '.join(unready)}]"
    old = {c.get("type"): c for c in previous.get("conditions") or []}

    def keep_time(cond: dict[str, Any]) -> dict[str, Any]:
        before = old.get(cond["type"])
        if before and before.get("status") == cond["status"]:
            cond["lastTransitionTime"] = before.get("lastTransitionTime", cond["lastTransitionTime"])
        return cond

    reason = "PodCompleted" if current in ("Succeeded", "Failed") else "ContainersNotReady"
    conditions = [
        _condition("PodReadyToStartContainers", mounted, now),
        _condition("Initialized", True, start_time),
        _condition("Ready", ready, now, reason, "" if reason == "PodCompleted" else message),
        _condition("ContainersReady", ready, now, reason, "" if reason == "PodCompleted" else message),
        _condition("PodScheduled", True, start_time),
    ]
    return {
        "phase": current,
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": format_time(start_time),
        "qosClass": previous.get("qosClass", "BestEffort"),
        "conditions": [keep_time(c) for c in conditions],
        "containerStatuses": statuses,
    }
