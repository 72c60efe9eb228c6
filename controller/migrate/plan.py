"""What a migration from Kueue and the AppWrapper controller takes over, cannot take over, and
what blocks it: pure, from the objects a reader lists.

The old controllers are found by what they act on: a webhook configuration not batchgate's with a
rule on kueue.x-k8s.io, workload.codeflare.dev or scheduling.x-k8s.io objects is theirs, and the
Deployments in its Service's namespace are their managers.

A CRD whose `status.storedVersions` names a version batchgate does not serve cannot simply be
replaced by batchgate's: kube-apiserver refuses a CRD update that drops from `spec.versions` a
version still listed there ("must appear in spec.versions"), since objects may be stored in it.
The plan therefore moves storage first, while the old conversion webhook still answers: storage
version set to batchgate's, every object rewritten (read and written back through the old
storage version, so it is stored again in batchgate's), then `status.storedVersions` trimmed to it.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from batchgate import keys
from batchgate.api.errors import FieldError
from batchgate.api.kueue import ClusterQueue, Workload, validate_cluster_queue
from controller.state.pending_queues import sort_key
from controller.state.quota_state import workload_key

PART_OF_BATCHGATE = ("app.kubernetes.io/part-of", "batchgate")
TAKEN_GROUPS = frozenset({keys.KUEUE_GROUP, "workload.codeflare.dev", "scheduling.x-k8s.io"})
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)  # a Workload without a creation time sorts first
TRANSIENT_PHASES = ("Resuming", "Suspending", "Resetting")  # the AppWrapper controller is mid-step


@dataclass(frozen=True)
class ClusterObjects:
    """What the reader listed, as the API server returned it."""

    crds: Sequence[Mapping[str, Any]] = ()  # those of the taken groups
    webhooks: Sequence[Mapping[str, Any]] = ()  # both kinds, each with its kind set
    deployments: Sequence[Mapping[str, Any]] = ()  # those in the old webhooks' namespaces
    cluster_queues: Sequence[Mapping[str, Any]] = ()
    local_queues: Sequence[Mapping[str, Any]] = ()
    resource_flavors: Sequence[Mapping[str, Any]] = ()
    workloads: Sequence[Mapping[str, Any]] = ()
    appwrappers: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class Ref:
    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True)
class StorageMove:
    """A CRD whose objects are stored in versions batchgate does not serve: rewritten in `to`."""

    crd: str
    to: str
    stored: tuple[str, ...]
    via: str  # the storage version now: objects are rewritten through it, judged by the schema they were
    # written under (through `to`, a converted object can fail `to`'s rules, e.g. Kueue's v1beta1
    # transition rule on priorityClassSource, which its v1beta2 does not carry)


@dataclass(frozen=True)
class Handover:
    """A CRD left with only the version batchgate serves, stored in it, conversion None."""

    crd: str
    keep: str


@dataclass(frozen=True)
class Finding:
    """An object and why it is listed where it is."""

    ref: Ref
    reason: str


@dataclass(frozen=True)
class Plan:
    take_over: tuple[Finding, ...] = ()
    cannot: tuple[Finding, ...] = ()
    blockers: tuple[Finding, ...] = ()
    storage: tuple[StorageMove, ...] = ()
    handover: tuple[Handover, ...] = ()
    webhooks_to_remove: tuple[Ref, ...] = ()
    managers_to_stop: tuple[Ref, ...] = ()
    admitted: tuple[Ref, ...] = ()
    pending: tuple[Ref, ...] = field(default=())  # in queue order: priority, then creation time

    @property
    def ready(self) -> bool:
        return not self.blockers

    def blocked_line(self) -> str:
        """Why apply refuses, in one line naming every blocker."""
        return "cannot migrate: " + "; ".join(f"{b.ref}: {b.reason}" for b in self.blockers)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _ref(kind: str, obj: Mapping[str, Any]) -> Ref:
    meta = _meta(obj)
    return Ref(kind, str(meta.get("name", "")), str(meta.get("namespace", "")))


def _is_batchgate(obj: Mapping[str, Any]) -> bool:
    key, value = PART_OF_BATCHGATE
    return (_meta(obj).get("labels") or {}).get(key) == value


def _acts_on_taken_groups(config: Mapping[str, Any]) -> bool:
    return any(set(rule.get("apiGroups") or ()) & TAKEN_GROUPS
               for hook in config.get("webhooks") or () for rule in hook.get("rules") or ())


def _service_namespaces(config: Mapping[str, Any]) -> set[str]:
    return {str(((hook.get("clientConfig") or {}).get("service") or {}).get("namespace"))
            for hook in config.get("webhooks") or () if ((hook.get("clientConfig") or {}).get("service"))}


def controller_namespaces(objects: ClusterObjects) -> frozenset[str]:
    """Where the managers of every webhook on the taken groups run, batchgate's and the old ones'."""
    return frozenset(ns for c in objects.webhooks if _acts_on_taken_groups(c) for ns in _service_namespaces(c))


def old_controllers(objects: ClusterObjects) -> tuple[tuple[Ref, ...], frozenset[str]]:
    """The old controllers' webhook configurations and the namespaces their Services run in."""
    configs = [c for c in objects.webhooks if not _is_batchgate(c) and _acts_on_taken_groups(c)]
    namespaces = frozenset(ns for c in configs for ns in _service_namespaces(c))
    return tuple(_ref(str(c.get("kind")), c) for c in configs), namespaces


def batchgate_webhooks(objects: ClusterObjects) -> tuple[Ref, ...]:
    return tuple(_ref(str(c.get("kind")), c) for c in objects.webhooks if _is_batchgate(c))


def batchgate_managers(objects: ClusterObjects) -> tuple[Ref, ...]:
    """batchgate's own Deployments (the gateway, the controller): its labelled ones."""
    return tuple(_ref("Deployment", d) for d in objects.deployments if _is_batchgate(d))


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """The `storageVersionHash` discovery shows for a resource stored as group/version/kind
    (kube-apiserver's: the first 8 bytes of the SHA-256 of "group/version/kind", base64)."""
    return base64.b64encode(hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()[:8]).decode()


def storage_moves(crds: Sequence[Mapping[str, Any]], served: Mapping[str, str]) -> tuple[StorageMove, ...]:
    """The CRDs batchgate serves whose storedVersions name a version it does not serve."""
    moves = []
    for crd in crds:
        name = str(_meta(crd).get("name", ""))
        stored = tuple((crd.get("status") or {}).get("storedVersions") or ())
        storage = [str(v.get("name")) for v in (crd.get("spec") or {}).get("versions") or () if v.get("storage")]
        if name in served and set(stored) - {served[name]}:
            moves.append(StorageMove(name, served[name], stored, storage[0] if storage else stored[-1]))
    return tuple(moves)


def handovers(crds: Sequence[Mapping[str, Any]], served: Mapping[str, str]) -> tuple[Handover, ...]:
    """The CRDs batchgate serves that still carry the old controller's other versions or its
    conversion webhook. Once its manager stops, nothing answers that webhook, and batchgate's
    install cannot drop a version another field manager (the storage move) still co-owns."""
    out = []
    for crd in crds:
        name, spec = str(_meta(crd).get("name", "")), crd.get("spec") or {}
        versions = {str(v.get("name")) for v in spec.get("versions") or ()}
        webhook = (spec.get("conversion") or {}).get("strategy") == "Webhook"
        if name in served and (versions - {served[name]} or webhook):
            out.append(Handover(name, served[name]))
    return tuple(out)


def _workload_findings(raw: Sequence[Mapping[str, Any]]) -> tuple[list[Finding], list[Finding], list[Workload]]:
    take, blockers, parsed = [], [], []
    for obj in raw:
        ref = _ref("Workload", obj)
        try:
            workload = Workload.from_dict(obj)
        except FieldError as err:
            blockers.append(Finding(ref, f"batchgate cannot read it ({err}): fix or delete it"))
            continue
        if workload.is_true(keys.COND_QUOTA_RESERVED) and not workload.is_true("Admitted"):
            blockers.append(Finding(ref, "holds quota while its admission checks run, which batchgate does not "
                                         "implement: wait until it is admitted or evicted"))
            continue
        parsed.append(workload)
        state = "admitted: stays admitted, its pods untouched" if workload.is_true("Admitted") else \
            "pending: keeps its place in its queue"
        take.append(Finding(ref, state))
    return take, blockers, parsed


def _cluster_queue_findings(raw: Sequence[Mapping[str, Any]]) -> tuple[list[Finding], list[Finding]]:
    take, blockers = [], []
    for obj in raw:
        ref = _ref("ClusterQueue", obj)
        spec = obj.get("spec") or {}
        try:
            problems = validate_cluster_queue(ClusterQueue.from_dict(obj))
        except FieldError as err:
            problems = [err]
        if problems:
            blockers.append(Finding(ref, f"batchgate cannot read it ({problems[0]}): fix it first"))
        elif spec.get("admissionChecks") or spec.get("admissionChecksStrategy"):
            blockers.append(Finding(ref, "uses admission checks, which batchgate does not implement: remove "
                                         "spec.admissionChecks and spec.admissionChecksStrategy, or stay on Kueue"))
        else:
            take.append(Finding(ref, "served as it is (kueue.x-k8s.io/v1beta1)"))
    return take, blockers


def _appwrapper_findings(raw: Sequence[Mapping[str, Any]]) -> tuple[list[Finding], list[Finding]]:
    take, cannot = [], []
    for obj in raw:
        ref = _ref("AppWrapper", obj)
        phase = str((obj.get("status") or {}).get("phase") or "Empty")
        if phase in TRANSIENT_PHASES:
            cannot.append(Finding(ref, f"phase {phase}: batchgate's controller finishes the step the old one began"))
        else:
            take.append(Finding(ref, f"phase {phase}"))
    return take, cannot


def pending_order(workloads: Sequence[Workload]) -> tuple[Ref, ...]:
    """Pending Workloads in the order batchgate queues them (Kueue's: priority, then age)."""
    pending = [w for w in workloads if not w.is_true("Admitted")]
    ordered = sorted(pending, key=lambda w: sort_key(w.priority or 0, w.creation_timestamp or EPOCH,
                                                       workload_key(w.namespace, w.name)))
    return tuple(Ref("Workload", w.name, w.namespace) for w in ordered)


def plan_migration(objects: ClusterObjects, served: Mapping[str, str]) -> Plan:
    """The plan for `objects`; `served` maps each CRD batchgate serves to the version it serves."""
    webhooks, namespaces = old_controllers(objects)
    managers = tuple(_ref("Deployment", d) for d in objects.deployments
                     if _meta(d).get("namespace") in namespaces and not _is_batchgate(d))
    blockers: list[Finding] = []
    if not webhooks and not managers:
        blockers.append(Finding(Ref("cluster", "-"), "no Kueue or AppWrapper controller found (no webhook "
                                                      "configuration acts on their objects): nothing to migrate"))
    ours = batchgate_webhooks(objects)
    if webhooks and ours:
        blockers += [Finding(r, "batchgate is installed beside the old controllers: uninstall it "
                                "(docs/install.md#uninstall) and run migrate again") for r in ours]
    cq_take, cq_block = _cluster_queue_findings(objects.cluster_queues)
    wl_take, wl_block, workloads = _workload_findings(objects.workloads)
    aw_take, aw_cannot = _appwrapper_findings(objects.appwrappers)
    take = [*cq_take,
            *(Finding(_ref("LocalQueue", o), "served as it is") for o in objects.local_queues),
            *(Finding(_ref("ResourceFlavor", o), "served as it is") for o in objects.resource_flavors),
            *wl_take, *aw_take]
    moves = storage_moves(objects.crds, served)
    unserved = [Finding(_ref("CustomResourceDefinition", c), "batchgate does not serve it: left as it is, though its "
                        "conversion webhook stops answering with Kueue; delete it once no object of it is needed")
                for c in objects.crds if _meta(c).get("name") not in served]
    cannot = [*aw_cannot, *unserved, *(Finding(Ref("CustomResourceDefinition", m.crd),
                                    f"stores objects in {', '.join(m.stored)}, batchgate serves only {m.to}: "
                                    f"kube-apiserver refuses to drop a stored version, so apply rewrites every "
                                    f"object in {m.to} first, while the old conversion webhook answers")
                            for m in moves)]
    return Plan(
        take_over=tuple(take), cannot=tuple(cannot), blockers=tuple([*blockers, *cq_block, *wl_block]),
        storage=moves, handover=handovers(objects.crds, served), webhooks_to_remove=webhooks, managers_to_stop=managers,
        admitted=tuple(Ref("Workload", w.name, w.namespace) for w in workloads if w.is_true("Admitted")),
        pending=pending_order(workloads))
