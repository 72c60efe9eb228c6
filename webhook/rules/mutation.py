"""DESIGN 6.1: what the gateway changes. A pipeline of steps over a deep copy of the object.

Each step is a pure function `(obj, ctx) -> changes`: it edits `obj` (the copy) in place and
returns one human-readable line per change. The server diffs the copy into a JSON Patch, so a
step never builds patches and never has to create parent maps "for the patch".

Extension point: `POD_PHASE_STEPS` run on pods made by other controllers (a Job's pods), the
Pod-phase of the distributed-framework plugins (DESIGN 6.4); `WORKLOAD_STEPS` end with the
workload phase of the same plugins. Their module (`webhook/rules/frameworks/`) appends its
step functions there; the context carries everything they may read.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api import objects
from batchgate.api.paths import format_steps, get_at
from batchgate.api.pod_templates import pod_template_locations
from batchgate.policy import Policy
from webhook.rules.frameworks.admission import framework_step
from webhook.rules.identity import identity_labels
from webhook.rules.review import AdmissionRequest
from webhook.rules.scope import Scope, WORKLOAD_KINDS

_SUSPEND_AT: Mapping[str, tuple[str, ...]] = {
    "AppWrapper.workload.codeflare.dev": ("spec", "suspend"),
    "Job.batch": ("spec", "suspend"),
    "PyTorchJob.kubeflow.org": ("spec", "runPolicy", "suspend"),
    "RayJob.ray.io": ("spec", "suspend"),
    "RayCluster.ray.io": ("spec", "suspend"),
}
"""Where each queued kind is told not to run yet."""


@dataclass(frozen=True)
class MutationContext:
    """Everything a mutation step may read."""

    request: AdmissionRequest
    policy: Policy
    scope: Scope

    @property
    def kind(self) -> str:
        return self.request.kind.qualified

    @property
    def is_workload(self) -> bool:
        return self.scope == "top-level" and self.kind in WORKLOAD_KINDS


Step = Callable[[dict[str, Any], MutationContext], list[str]]


def _set_label(obj: dict[str, Any], key: str, value: str) -> str:
    objects.ensure_map(objects.ensure_map(obj, "metadata"), "labels")[key] = value
    return f"set label {key}={value}"


def queue_name(obj: dict[str, Any], ctx: MutationContext) -> list[str]:
    """1. An AppWrapper without a queue label gets the default queue."""
    default = ctx.policy.queues.default_queue_name
    if ctx.kind != "AppWrapper.workload.codeflare.dev" or ctx.scope != "top-level" or not default:
        return []
    if objects.labels(obj).get(keys.QUEUE_NAME_LABEL):
        return []
    return [_set_label(obj, keys.QUEUE_NAME_LABEL, default)]


def identity(obj: dict[str, Any], ctx: MutationContext) -> list[str]:
    """2. Who submitted it, always overwritten on CREATE: a user cannot forge it."""
    if not (ctx.is_workload and ctx.policy.identity.enabled and ctx.request.operation == "CREATE"):
        return []
    current = objects.labels(obj)
    return [
        _set_label(obj, key, value)
        for key, value in identity_labels(ctx.request.user).items()
        if current.get(key) != value
    ]


def scheduler_name(obj: dict[str, Any], ctx: MutationContext) -> list[str]:
    """3. Every pod template names the batchgate scheduler unless it names one."""
    wanted = ctx.policy.scheduling.scheduler_name
    if not wanted or ctx.scope not in ("top-level", "wrapped"):
        return []
    changes = []
    for at in pod_template_locations(obj):
        spec = at.template.get("spec")
        if not isinstance(spec, dict):
            continue  # validation reports a template without a spec
        current = spec.get("schedulerName")
        if current == wanted or (current and not ctx.policy.scheduling.override_existing):
            continue
        spec["schedulerName"] = wanted
        changes.append(f"set {format_steps(at.location + ('spec', 'schedulerName'))}={wanted}")
    return changes


def gang_label(obj: dict[str, Any], ctx: MutationContext) -> list[str]:
    """4. The pods of one workload form one gang, named after the workload."""
    if not (ctx.is_workload and ctx.policy.scheduling.gang):
        return []
    name = objects.metadata(obj).get("name")
    if not isinstance(name, str) or not name:
        return []  # generateName: the name is not known yet; the controller groups by owner
    changes = []
    for at in pod_template_locations(obj):
        if objects.labels(at.template).get(keys.POD_GROUP_LABEL):
            continue
        objects.ensure_map(objects.ensure_map(at.template, "metadata"), "labels")[keys.POD_GROUP_LABEL] = name
        where = format_steps(at.location + ("metadata", "labels"))
        changes.append(f"set label {keys.POD_GROUP_LABEL}={name} on {where or 'the pod'}")
    return changes


def priority_class(obj: dict[str, Any], ctx: MutationContext) -> list[str]:
    """5. Workloads without a priority class get the policy's default."""
    default = ctx.policy.priority.default_workload_priority_class
    if not (ctx.is_workload and default) or objects.labels(obj).get(keys.PRIORITY_CLASS_LABEL):
        return []
    return [_set_label(obj, keys.PRIORITY_CLASS_LABEL, default)]


def suspend(obj: dict[str, Any], ctx: MutationContext) -> list[str]:
    """6. A workload that will be queued is created suspended: nothing runs before admission."""
    if not ctx.is_workload or ctx.request.operation != "CREATE":
        return []
    if not objects.labels(obj).get(keys.QUEUE_NAME_LABEL):
        return []
    steps = _SUSPEND_AT[ctx.kind]
    if get_at(obj, steps) is True:
        return []
    parent: Any = obj
    for step in steps[:-1]:
        if parent.get(step) is not None and not isinstance(parent.get(step), dict):
            return []  # a malformed spec: validation denies it with its path
        parent = objects.ensure_map(parent, step)
    parent[steps[-1]] = True
    return [f"set {format_steps(steps)}=true"]


WORKLOAD_STEPS: list[Step] = [
    queue_name, identity, scheduler_name, gang_label, priority_class, suspend, framework_step
]
"""Run in order on top-level and wrapped objects; the last is the frameworks' workload phase."""

POD_PHASE_STEPS: list[Step] = [framework_step]
"""Run on pods created by other controllers ("other" scope): the frameworks' pod phase."""


def run_steps(request: AdmissionRequest, policy: Policy, scope: Scope) -> tuple[dict[str, Any], list[str]]:
    """Apply the steps for `scope` to a deep copy of the request's object."""
    obj = copy.deepcopy(request.object)
    ctx = MutationContext(request, policy, scope)
    steps = POD_PHASE_STEPS if scope == "other" else WORKLOAD_STEPS
    changes: list[str] = []
    for step in steps:
        changes.extend(step(obj, ctx))
    return obj, changes
