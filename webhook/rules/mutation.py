"""What the gateway changes (docs/rules.md, "Mutations"). A pipeline of steps over a deep copy of the object.

Each step is a pure function `(obj, ctx) -> StepResult`: it edits `obj` (the copy) in place
and reports one human-readable line per change, warnings, or the field error that denies the
request. The server diffs the copy into a JSON Patch, so a step never builds patches and never
has to create parent maps "for the patch".

`WORKLOAD_STEPS` run on top-level and wrapped objects, `POD_PHASE_STEPS` on objects made by
other controllers (a Job's pods); both end with the distributed-framework plugins (docs/frameworks.md,
`webhook/rules/frameworks/`), which decide themselves which of their two phases is due.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api import objects
from batchgate.api.errors import FieldError
from batchgate.api.wire import copy_json
from batchgate.api.paths import format_steps, get_at
from batchgate.api.pod_templates import pod_template_locations
from batchgate.frozen import frozen
from batchgate.policy import Policy
from batchgate.kinds import APPWRAPPER, QUEUED_BY_QUALIFIED
from webhook.rules.frameworks import FrameworkSettings, apply_frameworks
from webhook.rules.identity import identity_labels
from webhook.rules.review import AdmissionRequest
from webhook.rules.scope import Scope

@frozen
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
        return self.scope == "top-level" and self.kind in QUEUED_BY_QUALIFIED


@frozen
class StepResult:
    changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    problem: FieldError | None = None
    """Set when the object cannot be admitted as written; the request is denied with it."""


def changed(lines: list[str]) -> StepResult:
    return StepResult(changes=tuple(lines))


Step = Callable[[dict[str, Any], MutationContext], StepResult]


def _set_label(obj: dict[str, Any], key: str, value: str) -> list[str]:
    found = objects.labels_for_writing(obj)
    if found is None:
        return []  # metadata or labels are not a mapping: MalformedRequest catches it first
    found[key] = value
    return [f"set label {key}={value}"]


def queue_name(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """1. An AppWrapper without a queue label gets the default queue."""
    default = ctx.policy.queues.default_queue_name
    if ctx.kind != APPWRAPPER.qualified or ctx.scope != "top-level" or not default:
        return StepResult()
    if objects.labels(obj).get(keys.QUEUE_NAME_LABEL):
        return StepResult()
    return changed(_set_label(obj, keys.QUEUE_NAME_LABEL, default))


def identity(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """2. Who submitted it, always overwritten on CREATE: a user cannot forge it."""
    if not (ctx.is_workload and ctx.policy.identity.enabled and ctx.request.operation == "CREATE"):
        return StepResult()
    current = objects.labels(obj)
    return changed([
        line
        for key, value in identity_labels(ctx.request.user).items()
        if current.get(key) != value
        for line in _set_label(obj, key, value)
    ])


SERVER_DEFAULTED_GROUPS = frozenset({"", "apps", "batch"})
"""API groups whose pod templates kube-apiserver defaults (schedulerName: default-scheduler) while
decoding, before any mutating webhook sees them."""


def scheduler_name(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """3. Every pod template names the batchgate scheduler unless it names one. A user's Pod, Job or
    Deployment arrives with `default-scheduler` where its author wrote none (the API server's
    default), so there that name counts as none; inside an AppWrapper it is the author's."""
    wanted = ctx.policy.scheduling.scheduler_name
    if not wanted or ctx.scope not in ("top-level", "wrapped"):
        return StepResult()
    defaulted = ctx.scope == "top-level" and ctx.request.kind.group in SERVER_DEFAULTED_GROUPS
    changes = []
    for at in pod_template_locations(obj):
        spec = at.template.get("spec")
        if not isinstance(spec, dict):
            continue  # validation reports a template without a spec
        current = spec.get("schedulerName")
        if defaulted and current == keys.DEFAULT_SCHEDULER:
            current = None
        if current == wanted or (current and not ctx.policy.scheduling.override_existing):
            continue
        spec["schedulerName"] = wanted
        changes.append(f"set {format_steps(at.location + ('spec', 'schedulerName'))}={wanted}")
    return changed(changes)


def gang_label(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """4. The pods of one workload form one gang, named after the workload."""
    if not (ctx.is_workload and ctx.policy.scheduling.gang):
        return StepResult()
    name = objects.metadata(obj).get("name")
    if not isinstance(name, str) or not name:
        return StepResult(warnings=(
            f"no {keys.POD_GROUP_LABEL} label: the workload has no name yet (generateName); "
            "its pods are grouped by their owner instead",
        ))
    changes = []
    for at in pod_template_locations(obj):
        if objects.labels(at.template).get(keys.POD_GROUP_LABEL):
            continue
        found = objects.labels_for_writing(at.template)
        if found is None:
            continue  # junk metadata in a template: left for the API server to reject
        found[keys.POD_GROUP_LABEL] = name
        where = format_steps(at.location + ("metadata", "labels"))
        changes.append(f"set label {keys.POD_GROUP_LABEL}={name} on {where or 'the pod'}")
    return changed(changes)


def priority_class(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """5. Workloads without a priority class get the policy's default."""
    default = ctx.policy.priority.default_workload_priority_class
    if not (ctx.is_workload and default) or objects.labels(obj).get(keys.PRIORITY_CLASS_LABEL):
        return StepResult()
    return changed(_set_label(obj, keys.PRIORITY_CLASS_LABEL, default))


def suspend(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """6. A workload that will be queued is created suspended: nothing runs before admission."""
    if not ctx.is_workload or ctx.request.operation != "CREATE":
        return StepResult()
    if not objects.labels(obj).get(keys.QUEUE_NAME_LABEL):
        return StepResult()
    steps = QUEUED_BY_QUALIFIED[ctx.kind].suspend_path
    if get_at(obj, steps) is True:
        return StepResult()
    parent: Any = obj
    for step in steps[:-1]:
        if parent.get(step) is None:
            parent[step] = {}
        elif not isinstance(parent[step], dict):
            return StepResult()  # a malformed spec: validation or the API server rejects it
        parent = parent[step]
    parent[steps[-1]] = True
    return changed([f"set {format_steps(steps)}=true"])


def framework_settings(policy: Policy) -> FrameworkSettings:
    """The framework plugins' view of the policy's `frameworks` section."""
    frameworks = policy.frameworks
    return FrameworkSettings(
        pytorch_port=frameworks.pytorch.port,
        tensorflow_port=frameworks.tensorflow.port,
        mxnet_port=frameworks.mxnet.port,
        mpi_hostfile_path=frameworks.mpi.hostfile_path,
        mpi_slots_per_host=frameworks.mpi.slots_per_host,
        wait_image=frameworks.mpi.wait_image,
        wait_timeout_seconds=int(frameworks.mpi.wait_timeout.total_seconds()),
    )


def frameworks(obj: dict[str, Any], ctx: MutationContext) -> StepResult:
    """7. Distributed-framework plugins: workload layout on CREATE, per-pod env on pod CREATE."""
    outcome = apply_frameworks(obj, ctx.request.kind, ctx.request.operation, framework_settings(ctx.policy),
                               top_level=ctx.scope == "top-level")
    problem = FieldError(outcome.error.path, outcome.error.message) if outcome.error else None
    return StepResult(outcome.changes, outcome.warnings, problem)


WORKLOAD_STEPS: tuple[Step, ...] = (
    queue_name, identity, scheduler_name, gang_label, priority_class, suspend, frameworks,
)
"""Run in order on top-level and wrapped objects."""

POD_PHASE_STEPS: tuple[Step, ...] = (frameworks,)
"""Run on objects created by other controllers ("other" scope): only the framework pod phase."""


@frozen
class Outcome:
    object: dict[str, Any]
    changes: tuple[str, ...]
    warnings: tuple[str, ...]
    problem: FieldError | None


MAX_NESTING = 200
"""Deeper objects are junk: real manifests nest a few dozen levels at most."""


def run_steps(request: AdmissionRequest, policy: Policy, scope: Scope) -> Outcome:
    """Apply the steps for `scope` to a deep copy of the request's object; stop at a problem.

    The request must have passed the MalformedRequest checks (a mapping within MAX_NESTING).
    """
    obj = copy_json(request.object)
    ctx = MutationContext(request, policy, scope)
    changes: list[str] = []
    warnings: list[str] = []
    for step in POD_PHASE_STEPS if scope == "other" else WORKLOAD_STEPS:
        result = step(obj, ctx)
        changes.extend(result.changes)
        warnings.extend(result.warnings)
        if result.problem:
            return Outcome(obj, tuple(changes), tuple(warnings), result.problem)
    return Outcome(obj, tuple(changes), tuple(warnings), None)
