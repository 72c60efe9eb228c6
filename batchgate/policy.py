"""The policy ConfigMap (docs/policy.md): parse + validate a policy.yaml into a frozen `Policy`.

Every field has a default, so an empty document is a valid policy. Errors carry the YAML line
and the field path (`policy.yaml:12: faultTolerance.retryLimit: must be a non-negative integer`)
because an admin fixes them by hand in an editor. Unknown keys are errors: a misspelled key
silently falling back to a default is the worst kind of policy bug.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Callable, Mapping

from batchgate import keys
from batchgate.api import values
from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.failure_policy import FailurePolicyRule, parse_failure_policy
from batchgate.api.located_yaml import LocatedYAMLError, block_offset, line_for, load_located
from batchgate.api.selectors import LabelSelector, parse_label_selector
from batchgate.durations import format_duration
from batchgate.kinds import APPWRAPPER, JOB, PYTORCHJOB, RAYCLUSTER, RAYJOB

DEFAULT_POLICY_CONFIGMAP: tuple[str, str] = ("batchgate-system", "batchgate-policy")
POLICY_KEY = "policy.yaml"


def configmap_fix(namespace: str, name: str) -> str:
    """What to do about an invalid policy ConfigMap, for the log lines, probes and Events that report it.
    With no gateway Ready the edit is refused unless it carries the break-glass annotation."""
    return (f"fix it with: kubectl edit configmap -n {namespace} {name} (while no gateway pod is Ready, as a "
            f"cluster admin adding the annotation {keys.BREAK_GLASS_ANNOTATION} in the same edit)")


def _wire(key: str, parse: Callable[[Any, str], Any], dump: Callable[[Any], Any] | None = None) -> Any:
    """Field metadata: the YAML key, its parser (value, path) -> model value, and its dumper."""
    return {"key": key, "parse": parse, "dump": dump or (lambda v: v)}


def _section(cls: type) -> Callable[[Any, str], Any]:
    return lambda value, path: _parse_section(cls, value, path)


def _dump_section(value: Any) -> Any:
    return _to_wire(value)


# --- the schema --------------------------------------------------------------------------

@dataclass(frozen=True)
class ManagedNamespaces:
    """Where workloads are policed and queued."""

    selector: LabelSelector = field(
        default=LabelSelector(),
        metadata=_wire("selector", parse_label_selector, LabelSelector.to_wire),
    )
    """Label selector on Namespaces; the empty selector means every namespace that is not exempt."""


@dataclass(frozen=True)
class Exempt:
    """Requests that pass untouched (allowed, no patch, still audited)."""

    namespaces: tuple[str, ...] = field(
        default=("kube-system", "kube-public", "kube-node-lease", "batchgate-system"),
        metadata=_wire("namespaces", values.parse_strings, list),
    )
    users: tuple[str, ...] = field(default=(), metadata=_wire("users", values.parse_strings, list))
    """E.g. the controller's own service account, which creates wrapped objects."""
    groups: tuple[str, ...] = field(default=(), metadata=_wire("groups", values.parse_strings, list))


KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
"""kube-controller-manager's own identity, which its controllers share without
`--use-service-account-credentials` (the local cluster's simulated controllers use it too)."""


def _kube_system_controllers(*names: str) -> tuple[str, ...]:
    return tuple(f"system:serviceaccount:kube-system:{name}" for name in names)


@dataclass(frozen=True)
class Controllers:
    """Who creates objects on a controller's behalf. The gateway decides "made by a controller"
    from who sends the request, never from the ownerReference an object names: anyone may name
    any owner, and Kubernetes checks neither that it exists nor that it made the object."""

    app_wrapper: tuple[str, ...] = field(
        default=("system:serviceaccount:batchgate-system:batchgate-controller",),
        metadata=_wire("appWrapper", values.parse_strings, list),
    )
    """Users whose objects owned by an AppWrapper are its components (the product's controller)."""
    workloads: tuple[str, ...] = field(
        default=(
            KUBE_CONTROLLER_MANAGER,
            *_kube_system_controllers(
                "job-controller", "replicaset-controller", "deployment-controller",
                "statefulset-controller", "daemon-set-controller", "cronjob-controller",
                "replication-controller",
            ),
            "system:serviceaccount:kubeflow:training-operator",
            "system:serviceaccount:ray-system:kuberay-operator",
        ),
        metadata=_wire("workloads", values.parse_strings, list),
    )
    """Users whose objects with a controller owner are made by that controller (a Job's pods):
    they get only the framework pod phase. Anyone else's object is judged as their own."""


@dataclass(frozen=True)
class Queues:
    default_queue_name: str = field(default="default-queue", metadata=_wire("defaultQueueName", values.parse_name))
    """LocalQueue injected into AppWrappers that carry no queue label ("" disables injection)."""
    require_queue_for: tuple[str, ...] = field(
        default=tuple(k.qualified for k in (JOB, PYTORCHJOB, RAYJOB, RAYCLUSTER)),
        metadata=_wire("requireQueueFor", values.parse_kinds, list),
    )
    """Top-level kinds denied without a queue label (they would never be admitted)."""


@dataclass(frozen=True)
class Identity:
    enabled: bool = field(default=True, metadata=_wire("enabled", values.parse_bool))
    """Stamp user / userid labels from the request's userInfo; immutable after create."""


@dataclass(frozen=True)
class Scheduling:
    scheduler_name: str = field(default="batchgate-scheduler", metadata=_wire("schedulerName", values.parse_name))
    """Set in every pod template that names no scheduler ("" disables injection)."""
    override_existing: bool = field(default=False, metadata=_wire("overrideExisting", values.parse_bool))
    """Also replace a schedulerName the user chose."""
    gang: bool = field(default=True, metadata=_wire("gang", values.parse_bool))
    """Pod-group label on pod templates of top-level workloads; PodGroups come from the controller."""
    gang_timeout: _dt.timedelta = field(
        default=_dt.timedelta(seconds=300),
        metadata=_wire("gangTimeout", values.parse_non_negative_duration, format_duration),
    )
    """How long a gang waits for all its members before its PodGroup reports it."""


@dataclass(frozen=True)
class Priority:
    default_workload_priority_class: str = field(
        default="", metadata=_wire("defaultWorkloadPriorityClass", values.parse_name)
    )
    """Priority-class label for workloads that carry none ("" disables injection)."""


FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def _parse_strategies(value: Any, path: str) -> tuple[str, ...]:
    strategies = values.parse_strings(value, path)
    if not strategies:
        raise FieldError(path, f"needs at least one of {', '.join(FAIR_SHARING_STRATEGIES)}")
    for i, strategy in enumerate(strategies):
        if strategy not in FAIR_SHARING_STRATEGIES:
            raise FieldError(child(path, i), f"{strategy!r} is not one of {', '.join(FAIR_SHARING_STRATEGIES)}")
    return strategies


@dataclass(frozen=True)
class FairSharing:
    """Kueue's `fairSharing` configuration block, under the same keys Kueue admins already write."""

    enable: bool = field(default=False, metadata=_wire("enable", values.parse_bool))
    """Admit and preempt across a cohort by share of unused quota (Kueue's default: off; MLBatch: on)."""
    preemption_strategies: tuple[str, ...] = field(
        default=FAIR_SHARING_STRATEGIES, metadata=_wire("preemptionStrategies", _parse_strategies, list)
    )
    """Which fair-sharing preemption rules may pick victims, tried in order."""
    preempt_within_nominal: bool = field(default=True, metadata=_wire("preemptWithinNominal", values.parse_bool))
    """A preemptor whose ClusterQueue stays within its nominal quota takes cohort victims without the
    strategies (kubernetes-sigs/kueue#9494, Kueue v0.17's gate FairSharingPreemptWithinNominal, on by
    default); false is Kueue v0.10's behaviour."""


@dataclass(frozen=True)
class Admission:
    """How the controller's quota admission paces itself (no Kueue Configuration key: a constant there)."""

    requeue_batch_period: _dt.timedelta = field(
        default=_dt.timedelta(0),
        metadata=_wire("requeueBatchPeriod", values.parse_non_negative_duration, format_duration),
    )
    """How long parked (inadmissible) workloads wait to be tried again after an event that may let
    them in (a finish, a quota or flavor change): `0s` moves them back at once, on every such event,
    as Kueue v0.10; a period moves a cohort's (or a queue's outside any cohort) back at most once a
    period, the first event starting it (Kueue v0.17: 1s, kubernetes-sigs/kueue#9232; 10s with
    its gate SchedulerLongRequeueInterval)."""
    scheduling_equivalence_hashing: bool = field(
        default=True, metadata=_wire("schedulingEquivalenceHashing", values.parse_bool))
    """In a BestEffortFIFO ClusterQueue, a head parked because it found no room (no flavor fits, or it
    fits only by preempting and nothing may be preempted) takes every waiting workload of the same
    priority and pod sets with it, and a new one of that shape is parked on arrival, until the queue's
    parked workloads are next asked back: Kueue's gate SchedulingEquivalenceHashing as of v0.18, on by
    default there (kubernetes-sigs/kueue#9694, #11097). `false` tries each such workload in turn, as
    Kueue v0.17 does by default."""


@dataclass(frozen=True)
class AllowedKinds:
    """Kinds as `Kind` (core) or `Kind.group`."""

    top_level: tuple[str, ...] = field(
        default=(
            *(k.qualified for k in (APPWRAPPER, JOB, PYTORCHJOB, RAYJOB, RAYCLUSTER)),
            "Service", "ConfigMap", "Secret", "PersistentVolumeClaim",
        ),
        metadata=_wire("topLevel", values.parse_kinds, list),
    )
    """Kinds a user may create directly in a managed namespace. As MLBatch's allowed kinds: no
    bare Pod, which would run outside quota (a Pod goes in an AppWrapper, or a queued Job)."""
    wrapped: tuple[str, ...] = field(
        default=(
            JOB.qualified, "Pod", "Deployment.apps", "StatefulSet.apps", PYTORCHJOB.qualified,
            RAYCLUSTER.qualified, RAYJOB.qualified, "Service", "ConfigMap", "Secret",
            "PersistentVolumeClaim", "PodGroup.scheduling.x-k8s.io",
        ),
        metadata=_wire("wrapped", values.parse_kinds, list),
    )
    """Kinds an AppWrapper may hold as components."""


@dataclass(frozen=True)
class Authorization:
    """Per-component SubjectAccessReviews on AppWrapper CREATE (upstream's userRBACAdmissionCheck).

    Each component kind must also be one that every account of `controllers.appWrapper` (the
    controller that creates components) may create, so an AppWrapper it could never run is refused
    at submission instead of failing later, whatever `userRBACCheck` says."""

    user_rbac_check: bool = field(default=True, metadata=_wire("userRBACCheck", values.parse_bool))
    """Each component kind must be one the submitter may create in the namespace. Off for clusters
    where users may wrap kinds they may not create directly, by design (MLBatch sets it off)."""


@dataclass(frozen=True)
class PortFramework:
    port: int = field(default=0, metadata=_wire("port", values.parse_port))
    """Rendezvous port of the master / parameter server."""


@dataclass(frozen=True)
class MpiFramework:
    hostfile_path: str = field(default="/etc/mpi/hostfile", metadata=_wire("hostfilePath", values.parse_str))
    """Where the launcher finds the hostfile."""
    slots_per_host: int = field(default=1, metadata=_wire("slotsPerHost", values.parse_positive_int))
    """MPI slots written per host line."""
    wait_image: str = field(default="busybox:1.36.1", metadata=_wire("waitImage", values.parse_image))
    """Image of the init container that holds the launcher until its workers resolve."""
    wait_timeout: _dt.timedelta = field(
        default=_dt.timedelta(seconds=300), metadata=_wire("waitTimeout", values.parse_positive_duration, format_duration)
    )
    """How long that init container waits before it fails the launcher pod."""


@dataclass(frozen=True)
class Frameworks:
    """Defaults of the distributed-framework plugins (docs/frameworks.md)."""

    pytorch: PortFramework = field(
        default=PortFramework(23456),
        metadata=_wire("pytorch", _section(PortFramework), _dump_section),
    )
    tensorflow: PortFramework = field(
        default=PortFramework(2222),
        metadata=_wire("tensorflow", _section(PortFramework), _dump_section),
    )
    mpi: MpiFramework = field(default=MpiFramework(), metadata=_wire("mpi", _section(MpiFramework), _dump_section))
    mxnet: PortFramework = field(
        default=PortFramework(9091),
        metadata=_wire("mxnet", _section(PortFramework), _dump_section),
    )


HEALTH_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")
"""What a node health label value means for GPU pods, as the taint effects upstream's Autopilot config names."""

_AUTOPILOT_DEFAULTS = {keys.AUTOPILOT_GPU_HEALTH_LABEL: {"WARN": "PreferNoSchedule", "TESTING": "NoSchedule",
                                                         "EVICT": "NoExecute"}}


def _parse_health_labels(value: Any, path: str) -> Mapping[str, Mapping[str, str]]:
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a mapping of node label to {{value: effect}}, got {type_name(value)}")
    out = {}
    for label, effects in value.items():
        where = child(path, str(label))
        if not isinstance(label, str) or not label:
            raise FieldError(where, "a node label must be a non-empty string")
        if not isinstance(effects, dict):
            raise FieldError(where, f"must be a mapping of label value to effect, got {type_name(effects)}")
        for label_value, effect in effects.items():
            if not isinstance(label_value, str) or effect not in HEALTH_EFFECTS:
                raise FieldError(child(where, str(label_value)),
                                 f"must map a string value to one of {', '.join(HEALTH_EFFECTS)}, got {effect!r}")
        out[label] = MappingProxyType(dict(effects))
    return MappingProxyType(out)


@dataclass(frozen=True)
class NodeHealth:
    """Node labels that flag unhealthy GPUs, and what each value means (upstream's Autopilot config)."""

    labels: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: _parse_health_labels(_AUTOPILOT_DEFAULTS, ""),
        metadata=_wire("labels", _parse_health_labels, lambda v: {k: dict(m) for k, m in v.items()}),
    )
    """label -> value -> effect: NoExecute (running GPU pods leave, new ones avoid the node), NoSchedule
    (new GPU pods avoid it), PreferNoSchedule (new GPU pods prefer other nodes)."""
    prefer_no_schedule_weight: int = field(default=50, metadata=_wire("preferNoScheduleWeight", values.parse_weight))
    """Weight of the preferred node-affinity term that steers GPU pods away from PreferNoSchedule values."""
    slack_cluster_queue: str = field(default="", metadata=_wire("slackClusterQueue", values.parse_name))
    """ClusterQueue whose lendingLimit shrinks by unusable capacity ("" = none)."""

    def values_with(self, *effects: str) -> Mapping[str, tuple[str, ...]]:
        """label -> the values that carry one of `effects`, for labels that have any."""
        out = {label: tuple(v for v, e in by_value.items() if e in effects) for label, by_value in self.labels.items()}
        return MappingProxyType({label: found for label, found in out.items() if found})

    @property
    def no_execute(self) -> Mapping[str, tuple[str, ...]]:
        return self.values_with("NoExecute")

    @property
    def unschedulable(self) -> Mapping[str, tuple[str, ...]]:
        return self.values_with("NoExecute", "NoSchedule")

    @property
    def prefer_not(self) -> Mapping[str, tuple[str, ...]]:
        return self.values_with("PreferNoSchedule")


@dataclass(frozen=True)
class FaultTolerance:
    """Defaults of the AppWrapper fault-tolerance annotations (docs/appwrapper.md)."""

    admission_grace_period: _dt.timedelta = field(
        default=_dt.timedelta(minutes=1), metadata=_wire("admissionGracePeriod", values.parse_non_negative_duration, format_duration)
    )
    """How long after deployment pods may take to exist before the AppWrapper is unhealthy."""
    warmup_grace_period: _dt.timedelta = field(
        default=_dt.timedelta(minutes=5), metadata=_wire("warmupGracePeriod", values.parse_non_negative_duration, format_duration)
    )
    """How long existing pods may take to become ready."""
    failure_grace_period: _dt.timedelta = field(
        default=_dt.timedelta(minutes=1), metadata=_wire("failureGracePeriod", values.parse_non_negative_duration, format_duration)
    )
    """How long failed pods are tolerated before a reset."""
    retry_pause_period: _dt.timedelta = field(
        default=_dt.timedelta(seconds=90), metadata=_wire("retryPausePeriod", values.parse_non_negative_duration, format_duration)
    )
    """Pause between deleting the components of a resetting AppWrapper and recreating them."""
    retry_limit: int = field(default=3, metadata=_wire("retryLimit", values.parse_non_negative_int))
    """Counted resets before an AppWrapper is Failed."""
    forceful_deletion_grace_period: _dt.timedelta = field(
        default=_dt.timedelta(minutes=10),
        metadata=_wire("forcefulDeletionGracePeriod", values.parse_non_negative_duration, format_duration),
    )
    """How long a normal deletion may take before pods are force-deleted."""
    deletion_on_failure_grace_period: _dt.timedelta = field(
        default=_dt.timedelta(0),
        metadata=_wire("deletionOnFailureGracePeriod", values.parse_non_negative_duration, format_duration),
    )
    """How long a Failed AppWrapper keeps its resources for debugging."""
    success_ttl: _dt.timedelta = field(
        default=_dt.timedelta(hours=168), metadata=_wire("successTTL", values.parse_non_negative_duration, format_duration)
    )
    """How long a Succeeded AppWrapper keeps its resources; also the ceiling of the annotation."""
    grace_period_maximum: _dt.timedelta = field(
        default=_dt.timedelta(hours=24), metadata=_wire("gracePeriodMaximum", values.parse_non_negative_duration, format_duration)
    )
    """Ceiling every grace-period annotation is clamped to."""
    failure_policy: tuple[FailurePolicyRule, ...] = field(
        default=(),
        metadata=_wire("failurePolicy", parse_failure_policy, lambda rules: [r.to_wire() for r in rules]),
    )
    """Default failure-policy rules (docs/appwrapper.md, "Failure policy") for AppWrappers without the annotation."""
    node_health: NodeHealth = field(
        default=NodeHealth(), metadata=_wire("nodeHealth", _section(NodeHealth), _dump_section)
    )


@dataclass(frozen=True)
class Policy:
    """The whole policy; `DEFAULT_POLICY` is what an empty policy.yaml means."""

    managed_namespaces: ManagedNamespaces = field(
        default=ManagedNamespaces(),
        metadata=_wire("managedNamespaces", _section(ManagedNamespaces), _dump_section),
    )
    exempt: Exempt = field(default=Exempt(), metadata=_wire("exempt", _section(Exempt), _dump_section))
    controllers: Controllers = field(
        default=Controllers(), metadata=_wire("controllers", _section(Controllers), _dump_section)
    )
    queues: Queues = field(default=Queues(), metadata=_wire("queues", _section(Queues), _dump_section))
    identity: Identity = field(default=Identity(), metadata=_wire("identity", _section(Identity), _dump_section))
    scheduling: Scheduling = field(
        default=Scheduling(), metadata=_wire("scheduling", _section(Scheduling), _dump_section)
    )
    priority: Priority = field(default=Priority(), metadata=_wire("priority", _section(Priority), _dump_section))
    allowed_kinds: AllowedKinds = field(
        default=AllowedKinds(), metadata=_wire("allowedKinds", _section(AllowedKinds), _dump_section)
    )
    authorization: Authorization = field(
        default=Authorization(), metadata=_wire("authorization", _section(Authorization), _dump_section)
    )
    frameworks: Frameworks = field(
        default=Frameworks(), metadata=_wire("frameworks", _section(Frameworks), _dump_section)
    )
    fault_tolerance: FaultTolerance = field(
        default=FaultTolerance(),
        metadata=_wire("faultTolerance", _section(FaultTolerance), _dump_section),
    )
    fair_sharing: FairSharing = field(
        default=FairSharing(), metadata=_wire("fairSharing", _section(FairSharing), _dump_section)
    )
    admission: Admission = field(
        default=Admission(), metadata=_wire("admission", _section(Admission), _dump_section)
    )

    def to_wire(self) -> dict[str, Any]:
        """The normalized policy.yaml form, every field spelled out."""
        return _to_wire(self)

    @property
    def version(self) -> str:
        """A short stable hash of the normalized policy; audit lines carry it."""
        return _version(self)


def _version(policy: Policy) -> str:
    text = json.dumps(policy.to_wire(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


DEFAULT_POLICY = Policy()


# --- parsing -----------------------------------------------------------------------------

class PolicyError(ValueError):
    """An invalid policy, located: `policy.yaml:12: faultTolerance.retryLimit: must be ...`."""

    def __init__(self, source: str, line: int | None, path: str, detail: str) -> None:
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {path}: {detail}" if path else f"{where}: {detail}")
        self.source = source
        self.line = line
        self.path = path
        self.detail = detail


REMOVED_FIELDS = {
    "authorization.controllerUser": "removed: the controller's account is controllers.appWrapper "
                                    "(the same service account), which the gateway also asks about; "
                                    "delete this field and set controllers.appWrapper if it differs",
}
"""Fields a former release read, with what to use instead (an error, never silently ignored)."""


def _parse_section(cls: type, value: Any, path: str) -> Any:
    if value is None:
        return cls()
    if not isinstance(value, dict):
        raise FieldError(path, f"must be a mapping, got {type_name(value)}")
    by_key = {f.metadata["key"]: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, raw in value.items():
        sub = child(path, str(key))
        spec = by_key.get(key)
        if spec is None and sub in REMOVED_FIELDS:
            raise FieldError(sub, REMOVED_FIELDS[sub])
        if spec is None:
            raise FieldError(sub, f"unknown field (expected one of {', '.join(by_key)})")
        if raw is None:
            continue  # `key:` with no value means "the default"
        kwargs[spec.name] = spec.metadata["parse"](raw, sub)
    section = cls(**kwargs)
    _check_relations(section, path)
    return section


def _check_relations(section: Any, path: str) -> None:
    """Cross-field rules, as upstream's ValidateAppWrapperConfig."""
    if not isinstance(section, FaultTolerance):
        return
    ceiling = section.grace_period_maximum
    for name in ("admissionGracePeriod", "warmupGracePeriod", "failureGracePeriod",
                 "retryPausePeriod", "forcefulDeletionGracePeriod", "deletionOnFailureGracePeriod"):
        spec = next(f for f in fields(section) if f.metadata["key"] == name)
        if getattr(section, spec.name) > ceiling:
            raise FieldError(
                child(path, name),
                f"{format_duration(getattr(section, spec.name))} exceeds gracePeriodMaximum "
                f"{format_duration(ceiling)}",
            )
    if section.admission_grace_period > section.warmup_grace_period:
        raise FieldError(child(path, "admissionGracePeriod"), "must not exceed warmupGracePeriod")
    if section.success_ttl <= _dt.timedelta(0):
        raise FieldError(child(path, "successTTL"), "must be positive")


def _to_wire(value: Any) -> Any:
    out: dict[str, Any] = {}
    for spec in fields(value):
        out[spec.metadata["key"]] = spec.metadata["dump"](getattr(value, spec.name))
    return out


def policy_from_value(value: Any, path: str = "") -> Policy:
    """Parse an already-decoded policy document; raise FieldError with the field path."""
    return _parse_section(Policy, value, path)


def parse_policy(text: str, source: str = POLICY_KEY, *, line_offset: int = 0) -> Policy:
    """Parse policy.yaml text; raise PolicyError with the YAML line and field path."""
    if not isinstance(text, str):
        raise PolicyError(source, None, "", f"policy must be YAML text, got {type_name(text)}")
    try:
        document = load_located(text, line_offset)
    except LocatedYAMLError as exc:
        raise PolicyError(source, exc.line, exc.path, exc.detail) from None
    try:
        return policy_from_value(document.value)
    except FieldError as exc:
        raise PolicyError(source, line_for(document.lines, exc.path), exc.path, exc.detail) from None


def load_policy_document(text: str, source: str = POLICY_KEY) -> Policy:
    """Accept either a policy.yaml or a ConfigMap manifest holding one under `data.policy.yaml`."""
    try:
        document = load_located(text, 0)
    except LocatedYAMLError as exc:
        raise PolicyError(source, exc.line, exc.path, exc.detail) from None
    value = document.value
    if not (isinstance(value, dict) and value.get("kind") == "ConfigMap"):
        return parse_policy(text, source)
    data = value.get("data")
    if not isinstance(data, dict) or POLICY_KEY not in data:
        raise PolicyError(source, document.lines.get("data"), "data", f"ConfigMap has no {POLICY_KEY!r} key")
    inner = data[POLICY_KEY]
    where = f"data[{POLICY_KEY}]"
    if not isinstance(inner, str):
        raise PolicyError(source, document.lines.get(where), where, f"must be a string, got {type_name(inner)}")
    return parse_policy(inner, source, line_offset=block_offset(document.node, ("data", POLICY_KEY)))
