"""The local "registry": it holds exactly the run images (`--run-image`). An image of the same
repository as a run image but another tag or digest cannot be pulled, as a typo in a kustomize
`images:` entry would fail on a real cluster; an image of any other repository is simulated.

A pod with an image that cannot be pulled stays Pending and alternates, as the kubelet's image
manager does, between a pull attempt (`ErrImagePull`) and a back-off before the next one
(`ImagePullBackOff`: 10s doubling to 5m, the crash-loop schedule). Its whole course is a pure
function of when the kubelet first saw it and `now`, like the rest of `sim.kubelet`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from localcluster.sim.kubelet import BACKOFF_INITIAL, BACKOFF_MAX
from localcluster.sim.units import format_time

Obj = Mapping[str, Any]
ERR_IMAGE_PULL: Final = "ErrImagePull"
IMAGE_PULL_BACKOFF: Final = "ImagePullBackOff"
PullStage = Literal["ErrImagePull", "ImagePullBackOff"]
# A failed attempt shows until the pod worker retries the failed sync (its 10s back-off period);
# that sync finds the image in back-off and reports ImagePullBackOff.
FAILED_ATTEMPT_SHOWN = dt.timedelta(seconds=10)


def repository(image: str) -> str:
    """The image without its tag and digest (`reg:5000/app:1@sha256:..` -> `reg:5000/app`)."""
    name = image.split("@", 1)[0]
    return name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name


def image_matches(image: str, run_images: Sequence[str]) -> bool:
    """An image names a run image exactly, or by repository when the run image has no tag."""
    return any(image == wanted or (":" not in wanted.rsplit("/", 1)[-1] and repository(image) == wanted)
               for wanted in run_images)


def pull_error(image: str, run_images: Sequence[str]) -> str | None:
    """Why `image` cannot be pulled (the runtime's error, as containerd words it), or None."""
    if image_matches(image, run_images) or repository(image) not in {repository(w) for w in run_images}:
        return None
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
            f'failed to resolve reference "{image}": {image}: not found')


@dataclass(frozen=True)
class PullFailure:
    """Where a pod with unpullable images is at one instant."""

    stage: PullStage
    attempt: int  # 0 for the first pull attempt
    since: dt.datetime  # when this stage began
    next_change: dt.datetime
    errors: Mapping[str, str]  # container name -> pull error


@dataclass(frozen=True)
class PullEvent:
    type: str
    reason: str
    message: str


def pull_failure(pod: Obj, run_images: Sequence[str], start_time: dt.datetime, now: dt.datetime) -> PullFailure | None:
    """The pull course of a pod at `now`, or None when all its containers' images can be pulled."""
    errors = {str(c.get("name", "")): err for c in (pod.get("spec") or {}).get("containers") or []
              if (err := pull_error(str(c.get("image", "")), run_images)) is not None}
    if not errors:
        return None
    attempt, at = 0, start_time
    while True:
        backoff_from = at + FAILED_ATTEMPT_SHOWN
        next_attempt = backoff_from + min(BACKOFF_INITIAL * 2 ** attempt, BACKOFF_MAX)
        if now < backoff_from:
            return PullFailure(ERR_IMAGE_PULL, attempt, at, backoff_from, errors)
        if now < next_attempt:
            return PullFailure(IMAGE_PULL_BACKOFF, attempt, backoff_from, next_attempt, errors)
        attempt, at = attempt + 1, next_attempt


def pull_status(pod: Obj, failure: PullFailure, *, start_time: dt.datetime, host_ip: str, pod_ip: str) -> dict[str, Any]:
    """The pods/status the kubelet posts while images cannot be pulled: Pending, not ready."""
    containers = (pod.get("spec") or {}).get("containers") or []
    names = " ".join(str(c.get("name", "")) for c in containers)
    not_ready = {"reason": "ContainersNotReady", "message": f"containers with unready status: [{names}]"}

    def condition(kind: str, ok: bool, **extra: str) -> dict[str, Any]:
        return {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": format_time(start_time),
                **extra}

    def waiting(container: Obj) -> dict[str, Any]:
        name, image = str(container.get("name", "")), str(container.get("image", ""))
        if name not in failure.errors:
            return {"reason": "ContainerCreating"}
        message = failure.errors[name] if failure.stage == ERR_IMAGE_PULL else f'Back-off pulling image "{image}"'
        return {"reason": failure.stage, "message": message}

    return {
        "phase": "Pending",
        "hostIP": host_ip, "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": format_time(start_time),
        "qosClass": (pod.get("status") or {}).get("qosClass", "BestEffort"),
        "conditions": [condition("PodReadyToStartContainers", True), condition("Initialized", True),
                       condition("Ready", False, **not_ready), condition("ContainersReady", False, **not_ready),
                       condition("PodScheduled", True)],
        "containerStatuses": [{"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "",
                               "restartCount": 0, "ready": False, "started": False, "lastState": {},
                               "state": {"waiting": waiting(c)}} for c in containers],
    }


def pull_events(pod: Obj, failure: PullFailure, previous_stage: str | None) -> list[PullEvent]:
    """The kubelet's Events on entering `failure.stage` (none when it was already reported)."""
    if previous_stage == failure.stage:
        return []
    images = {str(c.get("name", "")): str(c.get("image", "")) for c in (pod.get("spec") or {}).get("containers") or []}
    out: list[PullEvent] = []
    for name, error in failure.errors.items():
        image = images[name]
        if failure.stage == ERR_IMAGE_PULL:
            out += [PullEvent("Normal", "Pulling", f'Pulling image "{image}"'),
                    PullEvent("Warning", "Failed", f'Failed to pull image "{image}": {error}'),
                    PullEvent("Warning", "Failed", f"Error: {ERR_IMAGE_PULL}")]
        else:
            out += [PullEvent("Normal", "BackOff", f'Back-off pulling image "{image}"'),
                    PullEvent("Warning", "Failed", f"Error: {IMAGE_PULL_BACKOFF}")]
    return out


def previous_stage(status: Obj) -> str | None:
    """The pull stage the last posted status reported, if any."""
    for cs in status.get("containerStatuses") or []:
        reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
        if reason in (ERR_IMAGE_PULL, IMAGE_PULL_BACKOFF):
            return str(reason)
    return None
