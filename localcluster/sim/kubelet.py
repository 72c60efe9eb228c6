"""A simulated kubelet's view of one pod, computed from the pod's script and the time.

The whole life of a pod is a pure function of when the kubelet first saw it (status.startTime),
its behaviour annotation, its restartPolicy and `now`: runs, exits, restarts with the kubelet's
crash-loop backoff (first restart at once, then 10s doubling to 5m; a run of 10m or more resets
it). So a restarted kubelet (or a paused test) resumes exactly, and every timestamp in the
status is the instant the thing happened, not the instant we noticed. All containers of a pod
follow the same script; init containers complete the moment the pod starts.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from localcluster.sim.behavior import Behavior, BehaviorError, Run, parse_behavior
from localcluster.sim.units import format_time

BACKOFF_INITIAL = dt.timedelta(seconds=10)
BACKOFF_MAX = dt.timedelta(minutes=5)
BACKOFF_RESET = 2 * BACKOFF_MAX
BACKOFF_DOUBLINGS = 5  # 10 s doubled 5 times passes BACKOFF_MAX
TERMINATED_BY_SIGNAL = 143  # 128 + SIGTERM: simulated processes stop promptly when asked

Obj = Mapping[str, Any]
Stage = Literal["creating", "running", "backoff", "exited"]


@dataclass(frozen=True)
class Exit:
    code: int
    started: dt.datetime
    finished: dt.datetime

    @property
    def reason(self) -> str:
        return "Completed" if self.code == 0 else "Error"


@dataclass(frozen=True)
class Moment:
    """Where the containers are at one instant."""

    stage: Stage
    restarts: int
    since: dt.datetime  # when this stage began
    last_exit: Exit | None
    next_change: dt.datetime | None
    backoff: dt.timedelta = dt.timedelta(0)


@dataclass(frozen=True)
class KubeletView:
    """The status the kubelet reports now, and when it must look again (None: nothing scheduled)."""

    status: dict[str, Any]
    wake_at: dt.datetime | None
    moment: Moment | None = None
    error: str | None = None


def restart_delay(restart: int, ran_for: dt.timedelta) -> dt.timedelta:
    """Delay before restart number `restart` (1-based) after a run that lasted `ran_for`."""
    if restart <= 1 or ran_for >= BACKOFF_RESET:
        return dt.timedelta(0)
    # capped before it is multiplied: a pod crash-looping for hours of a long run's simulated time
    # reaches restart numbers whose doubling overflows timedelta (a full run's kubelet raised so)
    return min(BACKOFF_INITIAL * 2 ** min(restart - 2, BACKOFF_DOUBLINGS), BACKOFF_MAX)


def restarts_after(code: int, restart_policy: str) -> bool:
    return restart_policy == "Always" or (restart_policy == "OnFailure" and code != 0)


def moment(first_start: dt.datetime, run: Run | None, restart_policy: str, now: dt.datetime) -> Moment:
    if now < first_start:
        return Moment("creating", 0, first_start, None, first_start)
    if run is None:
        return Moment("running", 0, first_start, None, None)
    started, restarts, last_exit = first_start, 0, None
    while True:
        finished = started + run.length
        if now < finished:
            return Moment("running", restarts, started, last_exit, finished)
        last_exit = Exit(run.exit_code, started, finished)
        if not restarts_after(run.exit_code, restart_policy):
            return Moment("exited", restarts, finished, last_exit, None)
        delay = restart_delay(restarts + 1, run.length)
        if now < finished + delay:
            return Moment("backoff", restarts, finished, last_exit, finished + delay, delay)
        started, restarts = finished + delay, restarts + 1


def _terminated(exit_: Exit, container_id: str) -> dict[str, Any]:
    return {
        "terminated": {
            "exitCode": exit_.code,
            "reason": exit_.reason,
            "startedAt": format_time(exit_.started),
            "finishedAt": format_time(exit_.finished),
            "containerID": container_id,
        }
    }


def _condition(kind: str, ok: bool, since: dt.datetime, reason: str = "", message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastTransitionTime": format_time(since),
    }
    if not ok and reason:
        out["reason"] = reason
        out["message"] = message
    return out


def _container_id(pod: Obj, name: str, restarts: int) -> str:
    return f"localcluster://{pod['metadata'].get('uid', '')}/{name}/{restarts}"


def _container_status(pod: Obj, container: Obj, m: Moment, behavior: Behavior) -> dict[str, Any]:
    name = container["name"]
    status: dict[str, Any] = {
        "name": name,
        "image": container.get("image", ""),
        "imageID": f"{container.get('image', '')}@localcluster",
        "restartCount": m.restarts,
        "ready": m.stage == "running" and not behavior.never_ready,
        "started": m.stage == "running",
        "lastState": {},
    }
    meta = pod["metadata"]
    if m.stage == "creating":
        status["state"] = {"waiting": {"reason": "ContainerCreating"}}
    elif m.stage == "running":
        status["containerID"] = _container_id(pod, name, m.restarts)
        status["state"] = {"running": {"startedAt": format_time(m.since)}}
    elif m.stage == "backoff":
        status["state"] = {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off {int(m.backoff.total_seconds())}s restarting failed container={name} "
                f"pod={meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})",
            }
        }
    if m.last_exit is not None:
        container_id = _container_id(pod, name, m.restarts if m.stage != "running" else m.restarts - 1)
        if m.stage == "exited":
            status["containerID"] = container_id
            status["state"] = _terminated(m.last_exit, container_id)
        else:
            status["lastState"] = _terminated(m.last_exit, container_id)
    return status


def _phase(m: Moment) -> str:
    if m.stage == "creating":
        return "Pending"
    if m.stage == "exited":
        assert m.last_exit is not None
        return "Succeeded" if m.last_exit.code == 0 else "Failed"
    return "Running"


def _ready_since(m: Moment, start_time: dt.datetime) -> dt.datetime:
    return m.since if m.stage in ("running", "backoff", "exited") else start_time


def _base_status(pod: Obj, start_time: dt.datetime, host_ip: str, pod_ip: str) -> dict[str, Any]:
    return {
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": format_time(start_time),
        "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
    }


def observe(pod: Obj, *, start_time: dt.datetime, host_ip: str, pod_ip: str, now: dt.datetime) -> KubeletView:
    """The kubelet's status for a bound, live pod at `now`."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    try:
        behavior = parse_behavior((pod.get("metadata") or {}).get("annotations"))
    except BehaviorError as err:
        return _invalid(pod, str(err), start_time, host_ip, pod_ip)
    first_start = start_time + behavior.start_after
    m = moment(first_start, behavior.run(), spec.get("restartPolicy") or "Always", now)
    ready = m.stage == "running" and not behavior.never_ready
    not_ready = f"containers with unready status: [{' '.join(c['name'] for c in containers)}]"
    started = m.stage != "creating"
    status = _base_status(pod, start_time, host_ip, pod_ip)
    status["phase"] = _phase(m)
    status["conditions"] = [
        _condition("PodReadyToStartContainers", True, start_time),
        _initialized(spec, started, start_time, first_start),
        _condition("Ready", ready, _ready_since(m, start_time), "ContainersNotReady", not_ready),
        _condition("ContainersReady", ready, _ready_since(m, start_time), "ContainersNotReady", not_ready),
        _condition("PodScheduled", True, start_time),
    ]
    if m.stage == "exited":
        for cond in status["conditions"][2:4]:
            cond["reason"] = "PodCompleted"
            cond.pop("message", None)
    status["containerStatuses"] = [_container_status(pod, c, m, behavior) for c in containers]
    if spec.get("initContainers"):
        status["initContainerStatuses"] = [_init_status(pod, c, m, first_start) for c in spec["initContainers"]]
    return KubeletView(status, m.next_change, m)


def _initialized(spec: Obj, started: bool, start_time: dt.datetime, first_start: dt.datetime) -> dict[str, Any]:
    inits = [c["name"] for c in spec.get("initContainers") or []]
    if not inits:
        return _condition("Initialized", True, start_time)
    return _condition("Initialized", started, first_start if started else start_time, "ContainersNotInitialized",
                      f"containers with incomplete status: [{' '.join(inits)}]")


def _init_status(pod: Obj, container: Obj, m: Moment, first_start: dt.datetime) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": f"{container.get('image', '')}@localcluster",
        "restartCount": 0,
        "ready": m.stage != "creating",
        "started": False,
        "lastState": {},
    }
    if m.stage == "creating":
        status["state"] = {"waiting": {"reason": "PodInitializing"}}
    else:
        status["state"] = _terminated(Exit(0, first_start, first_start), _container_id(pod, container["name"], 0))
    return status


def _invalid(pod: Obj, error: str, start_time: dt.datetime, host_ip: str, pod_ip: str) -> KubeletView:
    """A behaviour that does not parse fails the pod at once; only this pod is affected."""
    status = _base_status(pod, start_time, host_ip, pod_ip)
    message = f"invalid {pod['metadata'].get('name', '')} behavior annotation: {error}"
    status.update(phase="Failed", reason="InvalidBehavior", message=message)
    status["conditions"] = [
        _condition("Ready", False, start_time, "PodFailed", message),
        _condition("PodScheduled", True, start_time),
    ]
    status["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "restartCount": 0,
            "ready": False,
            "started": False,
            "lastState": {},
            "state": {"terminated": {"exitCode": 1, "reason": "InvalidBehavior", "message": error,
                                     "startedAt": format_time(start_time), "finishedAt": format_time(start_time)}},
        }
        for c in (pod.get("spec") or {}).get("containers") or []
    ]
    return KubeletView(status, None, None, error)


def terminate(pod: Obj, now: dt.datetime) -> dict[str, Any]:
    """Status after the kubelet stops a deleted pod's containers: running ones exit with 143."""
    status = dict(pod.get("status") or {})
    if status.get("phase") in ("Succeeded", "Failed"):
        return status
    containers = []
    for cs in status.get("containerStatuses") or []:
        cs = dict(cs)
        running = (cs.get("state") or {}).get("running")
        if running:
            started = running.get("startedAt") or format_time(now)
            cs["state"] = {"terminated": {"exitCode": TERMINATED_BY_SIGNAL, "reason": "Error",
                                          "startedAt": started, "finishedAt": format_time(now),
                                          "containerID": cs.get("containerID", "")}}
        elif "terminated" not in (cs.get("state") or {}):
            cs["state"] = {"terminated": {"exitCode": TERMINATED_BY_SIGNAL, "reason": "ContainerStatusUnknown",
                                          "finishedAt": format_time(now)}}
        cs["ready"] = False
        cs["started"] = False
        containers.append(cs)
    status["containerStatuses"] = containers
    status["phase"] = "Failed"
    status["conditions"] = [
        {**c, "status": "False", "lastTransitionTime": format_time(now), "reason": "PodFailed"}
        if c.get("type") in ("Ready", "ContainersReady") else c
        for c in status.get("conditions") or []
    ]
    return status


def log_lines(pod: Obj, container: str, now: dt.datetime) -> list[str]:
    """What `kubectl logs` shows: a line or two saying what the simulated container did."""
    meta = pod.get("metadata") or {}
    try:
        behavior = parse_behavior(meta.get("annotations"))
    except BehaviorError as err:
        return [f"[localcluster] container {container} never started: {err}"]
    status = pod.get("status") or {}
    lines = [f"[localcluster] simulated container {container} of pod {meta.get('namespace', '')}/{meta.get('name', '')}"]
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") != container:
            continue
        state = cs.get("state") or {}
        if "running" in state:
            run = behavior.run()
            plan = f"will exit with code {run.exit_code} after {run.length.total_seconds():g}s" if run else "runs until deleted"
            lines.append(f"started at {state['running']['startedAt']} (restart {cs.get('restartCount', 0)}); {plan}")
        elif "terminated" in state:
            t = state["terminated"]
            lines.append(f"exited with code {t.get('exitCode')} ({t.get('reason')}) at {t.get('finishedAt')}")
        elif "waiting" in state:
            lines.append(f"waiting: {state['waiting'].get('reason')} {state['waiting'].get('message', '')}".rstrip())
    return lines
