"""Workload CREATE: turn a labelled AppWrapper or Indexed Job into a laid-out distributed job.

`plan_workload` only reads and either raises a FrameworkError or returns a plan; `apply_plan`
then writes it into the gateway's working copy, so a denied workload is never half-changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from batchgate import keys

from batchgate.frameworks.errors import FrameworkError
from .fields import check_metadata, edit_map, mapping_at, string_at
from batchgate.frameworks.layout import Layout, Slot
from batchgate.frameworks.objects import headless_service, hostfile_configmap, hostfile_configmap_name
from batchgate.frameworks.roles import LEADER, ROLES, WORKER, check_counts
from .settings import ARGS_PATH, DEFAULT_NPROC_PER_NODE, FrameworkArgs, FrameworkSettings, parse_args
from .topology import (
    JobFill,
    TemplateGroup,
    Topology,
    appwrapper_topology,
    check_hostname,
    check_subdomain,
    job_topology,
)


@dataclass(frozen=True)
class WorkloadPlan:
    layout: Layout
    subdomain: str
    groups: tuple[TemplateGroup, ...]
    fills: tuple[JobFill, ...]


def _role_of_group(group: TemplateGroup, args: FrameworkArgs, single: bool) -> list[tuple[str, int, int]]:
    """(role, start, count) runs of the group's pod indexes."""
    fw = args.framework
    if group.role_label is not None:
        role = args.canonical_role(group.role_label)
        if role is None:
            names = ", ".join(args.role_names[r] for r in ROLES[fw])
            raise FrameworkError(group.role_label_path, f"{group.role_label!r} is not a {fw} role; roles: {names}")
        if group.operator_env and role != group.default_role:
            raise FrameworkError(
                group.role_label_path,
                f"{group.role_label!r} contradicts the replica type: the training operator ranks a PyTorchJob's "
                "Master first and its Workers after it, so its replica types are its roles; remove the label",
            )
        return [(role, 0, group.count)]
    if group.default_role is not None:
        if group.default_role not in ROLES[fw]:
            raise FrameworkError(
                group.role_label_path,
                f"replica type {group.default_role!r} is not a {fw} role; label it with one of {', '.join(ROLES[fw])}",
            )
        return [(group.default_role, 0, group.count)]
    leader = LEADER[fw]
    if single and group.splittable and leader is not None:
        runs = [(leader, 0, 1)]
        return runs + ([(WORKER, 1, group.count - 1)] if group.count > 1 else [])
    return [(WORKER, 0, group.count)]


def _slots(topology: Topology, args: FrameworkArgs, subdomain: str) -> tuple[Slot, ...]:
    single = len(topology.groups) == 1
    slots: list[Slot] = []
    for group in topology.groups:
        sub = (group.template.get("spec") or {}).get("subdomain") or subdomain
        check_subdomain(sub, f"{group.path}.spec.subdomain")
        check_hostname(f"{group.prefix}{group.count - 1}", f"{group.path}")
        slots += [Slot(role, group.prefix, start, count, sub) for role, start, count in _role_of_group(group, args, single)]
    order = ROLES[args.framework]
    return tuple(sorted(slots, key=lambda s: order.index(s.role)))


def _check_named_roles_exist(args: FrameworkArgs, topology: Topology) -> None:
    used = {g.role_label for g in topology.groups}
    for role, name in args.role_names.items():
        if name != role and name not in used:
            raise FrameworkError(f"{ARGS_PATH}.roles.{role}", f"no component has {keys.ROLE_LABEL}: {name}")


def _nproc_per_node(args: FrameworkArgs, topology: Topology) -> str:
    """The args' value, else the wrapped PyTorchJob's own (which the args must not contradict), else the default."""
    declared = next((g.nproc_per_node for g in topology.groups if g.nproc_per_node is not None), None)
    if declared is None:
        return args.nproc_per_node or DEFAULT_NPROC_PER_NODE
    value, path = declared
    if args.nproc_per_node is not None and args.nproc_per_node != value:
        raise FrameworkError(f"{ARGS_PATH}.nprocPerNode", f"{args.nproc_per_node!r} contradicts {path}: {value!r}")
    return value


def _check_operator_env(framework: str, topology: Topology) -> None:
    """A PyTorchJob's pods keep the rank env the training operator gave them (docs/frameworks.md): deny any
    layout in which those values would not be the layout's own, since that means a wrong rank."""
    wrapped = next((g for g in topology.groups if g.operator_env), None)
    if wrapped is None:
        return
    if framework != "pytorch":
        raise FrameworkError(
            f"{wrapped.owner}.kind",
            f"the training operator gives a PyTorchJob's pods PyTorch's env (MASTER_ADDR, WORLD_SIZE, RANK), "
            f"not {framework}'s; wrap batch Jobs (one per role) instead",
        )
    other = next((g for g in topology.groups if g.owner != wrapped.owner), None)
    if other is not None:
        raise FrameworkError(
            f"{other.owner}.kind",
            f"the pods of this {other.owner_kind} and of the PyTorchJob at {wrapped.owner} would disagree on "
            "WORLD_SIZE and RANK: the training operator sets them on the PyTorchJob's pods counting only its "
            "own replicas. Make these pods Worker replicas of that PyTorchJob, or wrap only batch Jobs (one per "
            f"role), or remove the label {keys.FRAMEWORK_LABEL} and let the operator set the env",
        )


def plan_workload(obj: dict[str, Any], kind: str, settings: FrameworkSettings) -> WorkloadPlan:
    """Read a top-level AppWrapper or Job labelled with a framework into a plan (or deny it)."""
    meta = check_metadata(obj, "")
    framework = mapping_at(meta, "labels", "metadata.labels").get(keys.FRAMEWORK_LABEL)
    if not isinstance(framework, str) or framework not in ROLES:
        raise FrameworkError(
            f"metadata.labels[{keys.FRAMEWORK_LABEL}]",
            f"must be one of {', '.join(ROLES)}, not {framework!r}",
        )
    annotations = mapping_at(meta, "annotations", "metadata.annotations")
    args = parse_args(framework, annotations.get(keys.FRAMEWORK_ARGS_ANNOTATION), settings)
    name = string_at(meta, "name", "metadata.name")
    if not name:
        raise FrameworkError("metadata.name", "a framework workload needs a name (its pods' DNS names derive from it)")
    check_subdomain(name, "metadata.name")
    topology = appwrapper_topology(obj) if kind == "AppWrapper" else job_topology(obj)
    _check_operator_env(framework, topology)
    _check_named_roles_exist(args, topology)
    slots = _slots(topology, args, name)
    counts = {role: sum(s.count for s in slots if s.role == role) for role in ROLES[framework]}
    check_counts(framework, counts, args.role_names, "spec")
    layout = Layout(
        framework=framework,
        service=name,
        port=args.port,
        nproc_per_node=_nproc_per_node(args, topology),
        hostfile_path=args.hostfile_path,
        slots_per_host=args.slots_per_host,
        wait_image=args.wait_image,
        wait_timeout_seconds=args.wait_timeout_seconds,
        slots=slots,
    )
    return WorkloadPlan(layout, name, topology.groups, topology.fills)


def _component_named(components: list[Any], kind: str, name: str) -> bool:
    return any(
        isinstance(c, dict)
        and isinstance(c.get("template"), dict)
        and c["template"].get("kind") == kind
        and isinstance(c["template"].get("metadata"), dict)
        and c["template"]["metadata"].get("name") == name
        for c in components
    )


def apply_plan(obj: dict[str, Any], kind: str, plan: WorkloadPlan) -> list[str]:
    """Write the plan into the working copy; returns the human reasons for the changes."""
    changes = [f"{fill.path}: set to {fill.value} for a framework job" for fill in plan.fills]
    for fill in plan.fills:
        fill.spec[fill.field] = fill.value
    layout_json = plan.layout.to_json()
    for group in plan.groups:
        meta = edit_map(group.template, "metadata")
        labels = edit_map(meta, "labels")
        labels[keys.FRAMEWORK_LABEL] = plan.layout.framework
        labels[keys.SUBDOMAIN_LABEL] = plan.subdomain
        annotations = edit_map(meta, "annotations")
        annotations[keys.FRAMEWORK_LAYOUT_ANNOTATION] = layout_json
        annotations[keys.HOST_PREFIX_ANNOTATION] = group.prefix
        if not group.template["spec"].get("subdomain"):
            group.template["spec"]["subdomain"] = plan.subdomain
        changes.append(f"{group.path}: {plan.layout.framework} layout, hosts {group.prefix}<index>.{plan.subdomain}")
    if kind == "AppWrapper":
        components = obj["spec"]["components"]
        if not _component_named(components, "Service", plan.subdomain):
            components.append({"template": headless_service(plan.subdomain, plan.layout.framework)})
            changes.append(f"spec.components[{len(components) - 1}]: headless Service {plan.subdomain}")
        configmap = hostfile_configmap_name(plan.subdomain)
        if plan.layout.framework == "mpi" and not _component_named(components, "ConfigMap", configmap):
            components.append({"template": hostfile_configmap(plan.subdomain, plan.layout)})
            changes.append(f"spec.components[{len(components) - 1}]: MPI hostfile ConfigMap {configmap}")
    return changes
