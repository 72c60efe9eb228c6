"""The PyTorchJob controller (kubeflow.org/v1) as the training operator v1.9 runs it, reduced to a
pure reconcile: (job, its pods, its services, now) -> pods and services to create or delete,
the new status and events.

Conventions kept: pods and headless Services named `<job>-<replica type lower>-<index>`, labels
`training.kubeflow.org/*`, env PYTHONUNBUFFERED, MASTER_PORT/ADDR (+PET_ twins), WORLD_SIZE,
RANK, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_NNODES, the `pytorchjob-port` 23456 default and the
workers' `init-pytorch` container; reasons `PyTorchJob<Created|Running|Restarting|Succeeded|
Failed|Suspended|Resumed>`. The job succeeds when the Master (or, without one, every Worker)
succeeds and fails when a replica fails for good or restarts exceed runPolicy.backoffLimit.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from localcluster.sim.conditions import Event, controller_ref, deleting
from localcluster.sim.units import format_time, parse_time

GROUP_LABEL_PREFIX = "training.kubeflow.org"
JOB_NAME_LABEL = f"{GROUP_LABEL_PREFIX}/job-name"
OPERATOR_LABEL = f"{GROUP_LABEL_PREFIX}/operator-name"
REPLICA_TYPE_LABEL = f"{GROUP_LABEL_PREFIX}/replica-type"
REPLICA_INDEX_LABEL = f"{GROUP_LABEL_PREFIX}/replica-index"
JOB_ROLE_LABEL = f"{GROUP_LABEL_PREFIX}/job-role"
OPERATOR_NAME = "pytorchjob-controller"
CONTAINER = "pytorch"
PORT_NAME = "pytorchjob-port"
DEFAULT_PORT = 23456
KIND = "PyTorchJob"
INIT_IMAGE = "alpine:3.10"

Obj = Mapping[str, Any]


@dataclass
class PyTorchStep:
    status: dict[str, Any]
    create_pods: list[dict[str, Any]] = field(default_factory=list)
    create_services: list[dict[str, Any]] = field(default_factory=list)
    delete_pods: list[str] = field(default_factory=list)
    delete_services: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    requeue_after: dt.timedelta | None = None
    delete_job: bool = False


def replica_specs(job: Obj) -> dict[str, dict[str, Any]]:
    """Replica specs with the operator's defaults (replicas 1, restartPolicy OnFailure), Master first."""
    raw = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    out: dict[str, dict[str, Any]] = {}
    for rtype in sorted(raw, key=lambda r: (r != "Master", r)):
        spec = dict(raw[rtype] or {})
        spec.setdefault("replicas", 1)
        spec.setdefault("restartPolicy", "OnFailure")
        out[rtype] = spec
    return out


def _name(job: Obj, rtype: str, index: int) -> str:
    return f"{job['metadata']['name']}-{rtype.lower()}-{index}"


def _labels(job: Obj, rtype: str, index: int) -> dict[str, str]:
    labels = {
        JOB_NAME_LABEL: job["metadata"]["name"],
        OPERATOR_LABEL: OPERATOR_NAME,
        REPLICA_TYPE_LABEL: rtype.lower(),
        REPLICA_INDEX_LABEL: str(index),
    }
    if rtype == "Master":
        labels[JOB_ROLE_LABEL] = "master"
    return labels


def _master_port(specs: Mapping[str, Obj]) -> int:
    master = specs.get("Master") or {}
    for container in ((master.get("template") or {}).get("spec") or {}).get("containers") or []:
        if container.get("name") == CONTAINER:
            for port in container.get("ports") or []:
                if port.get("name") == PORT_NAME:
                    return int(port.get("containerPort", DEFAULT_PORT))
    return DEFAULT_PORT


def _nproc(job: Obj) -> tuple[str, int]:
    text = str((job.get("spec") or {}).get("nprocPerNode") or "auto")
    return text, int(text) if text.isdigit() else 1


def env_for(job: Obj, rtype: str, index: int) -> list[dict[str, str]]:
    """The env the operator appends to every container of a replica, in its order."""
    specs = replica_specs(job)
    env = [{"name": "PYTHONUNBUFFERED", "value": "1"}]
    total = sum(int(s["replicas"]) for s in specs.values())
    nproc_text, nproc = _nproc(job)
    if "Master" in specs:
        port = str(_master_port(specs))
        addr = _name(job, "Master", 0)
        rank = str(index if rtype == "Master" else index + 1)
        env += [
            {"name": "MASTER_PORT", "value": port},
            {"name": "PET_MASTER_PORT", "value": port},
            {"name": "MASTER_ADDR", "value": addr},
            {"name": "PET_MASTER_ADDR", "value": addr},
            {"name": "WORLD_SIZE", "value": str(total * nproc)},
            {"name": "RANK", "value": rank},
            {"name": "PET_NODE_RANK", "value": rank},
        ]
    env += [{"name": "PET_NPROC_PER_NODE", "value": nproc_text}, {"name": "PET_NNODES", "value": str(total)}]
    return env


def new_pod(job: Obj, rtype: str, index: int) -> dict[str, Any]:
    specs = replica_specs(job)
    spec = specs[rtype]
    template = copy.deepcopy(spec.get("template") or {})
    tmeta = template.get("metadata") or {}
    pod_spec = template.get("spec") or {}
    policy = spec["restartPolicy"]
    pod_spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
    env = env_for(job, rtype, index)
    for container in pod_spec.get("containers") or []:
        container["env"] = [*(container.get("env") or []), *env]
        if container.get("name") == CONTAINER and not any(p.get("name") == PORT_NAME for p in container.get("ports") or []):
            container["ports"] = [*(container.get("ports") or []), {"name": PORT_NAME, "containerPort": DEFAULT_PORT}]
    if rtype != "Master" and "Master" in specs:
        master = _name(job, "Master", 0)
        wait = {
            "name": "init-pytorch",
            "image": INIT_IMAGE,
            "command": ["sh", "-c", f"err=1;for i in $(seq 100); do if nslookup {master}; then err=0 && break; fi;"
                                    " sleep 2; done; exit $err"],
            "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}, "requests": {"cpu": "50m", "memory": "10Mi"}},
        }
        pod_spec["initContainers"] = [wait, *(pod_spec.get("initContainers") or [])]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": _name(job, rtype, index),
            "namespace": job["metadata"].get("namespace", ""),
            "labels": {**(tmeta.get("labels") or {}), **_labels(job, rtype, index)},
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [controller_ref(job)],
        },
        "spec": pod_spec,
    }


def new_service(job: Obj, rtype: str, index: int) -> dict[str, Any]:
    """One headless Service per replica, so `<job>-master-0` resolves."""
    ports = []
    template_spec = (replica_specs(job)[rtype].get("template") or {}).get("spec") or {}
    for container in template_spec.get("containers") or []:
        if container.get("name") == CONTAINER:
            ports = [{"name": p.get("name", ""), "port": int(p["containerPort"])} for p in container.get("ports") or []
                     if p.get("containerPort")]
    if not any(p["name"] == PORT_NAME for p in ports):
        ports.append({"name": PORT_NAME, "port": DEFAULT_PORT})
    labels = _labels(job, rtype, index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": _name(job, rtype, index), "namespace": job["metadata"].get("namespace", ""),
                     "labels": labels, "ownerReferences": [controller_ref(job)]},
        "spec": {"clusterIP": "None", "selector": labels, "ports": ports},
    }


def set_condition(conditions: Sequence[Obj], kind: str, status: bool, reason: str, message: str,
                  now: dt.datetime) -> list[dict[str, Any]]:
    """The operator's rule: Running and Restarting replace each other; Succeeded/Failed turn Running False."""
    value = "True" if status else "False"
    existing = next((c for c in conditions if c.get("type") == kind), None)
    if existing and existing.get("status") == value and existing.get("reason") == reason:
        return [dict(c) for c in conditions]
    out = []
    for cond in conditions:
        ctype = cond.get("type")
        if ctype == kind or {kind, ctype} == {"Running", "Restarting"}:
            continue
        cond = dict(cond)
        if kind in ("Succeeded", "Failed") and ctype == "Running" and cond.get("status") == "True":
            cond.update(status="False", lastTransitionTime=format_time(now), lastUpdateTime=format_time(now))
        out.append(cond)
    stamp = format_time(now)
    transition = existing["lastTransitionTime"] if existing and existing.get("status") == value else stamp
    out.append({"type": kind, "status": value, "reason": reason, "message": message,
                "lastUpdateTime": stamp, "lastTransitionTime": transition})
    return out


def _true(conditions: Sequence[Obj], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def _exit_codes(pod: Obj) -> list[int]:
    return [
        ((cs.get("state") or {}).get("terminated") or {}).get("exitCode", 0)
        for cs in (pod.get("status") or {}).get("containerStatuses") or []
    ]


def retryable(code: int) -> bool:
    """The operator's ExitCode policy: 1-127 are permanent errors, 128 and up (signals) are retried."""
    return code >= 128


def reconcile(job: Obj, pods: Sequence[Obj], services: Sequence[Obj], now: dt.datetime) -> PyTorchStep:
    meta = job["metadata"]
    ref = f"{meta.get('namespace', '')}/{meta['name']}"
    run_policy = (job.get("spec") or {}).get("runPolicy") or {}
    specs = replica_specs(job)
    status = {k: v for k, v in (job.get("status") or {}).items()}
    conditions = list(status.get("conditions") or [])
    step = PyTorchStep(status)
    if not any(c.get("type") == "Created" for c in conditions):
        conditions = set_condition(conditions, "Created", True, f"{KIND}Created", f"{KIND} {meta['name']} is created.", now)
    by_name = {p["metadata"]["name"]: p for p in pods}
    service_names = {s["metadata"]["name"] for s in services}
    live = [p for p in pods if not deleting(p)]

    if _true(conditions, "Succeeded") or _true(conditions, "Failed"):
        step.delete_pods = _cleanup(run_policy, live)
        _ttl(run_policy, status, now, step)
        return _done(step, status, conditions, specs, pods, job)

    if run_policy.get("suspend"):
        if not _true(conditions, "Suspended"):
            conditions = set_condition(conditions, "Running", False, f"{KIND}Suspended", f"{KIND} {meta['name']} is suspended.", now)
            conditions = set_condition(conditions, "Suspended", True, f"{KIND}Suspended", f"{KIND} {meta['name']} is suspended.", now)
            step.events.append(Event("Normal", f"{KIND}Suspended", f"{KIND} {meta['name']} is suspended."))
        step.delete_pods = sorted(p["metadata"]["name"] for p in live)
        step.delete_services = sorted(service_names)
        status.pop("startTime", None)
        status.pop("completionTime", None)
        return _done(step, status, conditions, specs, [], job)
    if _true(conditions, "Suspended"):
        conditions = set_condition(conditions, "Suspended", False, f"{KIND}Resumed", f"{KIND} {meta['name']} is resumed.", now)
        step.events.append(Event("Normal", f"{KIND}Resumed", f"{KIND} {meta['name']} is resumed."))
        status["startTime"] = format_time(now)
    status.setdefault("startTime", format_time(now))

    failure = _past_limits(job, run_policy, specs, pods, status, now, step)
    if failure:
        conditions = set_condition(conditions, "Failed", True, f"{KIND}Failed", failure, now)
        step.events.append(Event("Normal", f"{KIND}Failed", failure))
        status.setdefault("completionTime", format_time(now))
        step.delete_pods = _cleanup(run_policy, live)
        return _done(step, status, conditions, specs, pods, job)

    counts: dict[str, dict[str, int]] = {}
    for rtype, spec in specs.items():
        tally = counts.setdefault(rtype, {"active": 0, "succeeded": 0, "failed": 0})
        for index in range(int(spec["replicas"])):
            name = _name(job, rtype, index)
            if name not in service_names:
                step.create_services.append(new_service(job, rtype, index))
            pod = by_name.get(name)
            if pod is None:
                step.create_pods.append(new_pod(job, rtype, index))
                continue
            phase = _phase(pod)
            if phase == "Failed" and spec["restartPolicy"] == "ExitCode" and any(retryable(c) for c in _exit_codes(pod)):
                if not (pod.get("metadata") or {}).get("deletionTimestamp"):
                    step.delete_pods.append(name)
                tally["failed"] += 1
                msg = f"{KIND} {ref} is restarting because 1 {rtype} replica(s) failed."
                conditions = set_condition(conditions, "Restarting", True, f"{KIND}Restarting", msg, now)
                step.events.append(Event("Warning", f"{KIND}Restarting", msg))
                continue
            if phase == "Running":
                tally["active"] += 1
            elif phase == "Succeeded":
                tally["succeeded"] += 1
            elif phase == "Failed":
                tally["failed"] += 1
    conditions = _job_conditions(ref, specs, counts, conditions, status, now, step)
    if _true(conditions, "Succeeded") or _true(conditions, "Failed"):
        step.delete_pods = sorted(set(step.delete_pods) | set(_cleanup(run_policy, live)))
        step.create_pods, step.create_services = [], []
    status["replicaStatuses"] = {r: _replica_status(job, r, c) for r, c in counts.items()}
    status["conditions"] = conditions
    step.status = status
    return step


def _job_conditions(ref: str, specs: Mapping[str, Obj], counts: Mapping[str, Mapping[str, int]],
                    conditions: list, status: dict[str, Any], now: dt.datetime, step: PyTorchStep) -> list:
    has_master = "Master" in specs
    for rtype, spec in specs.items():
        tally = counts[rtype]
        expected = int(spec["replicas"]) - tally["succeeded"]
        leader = rtype == "Master" if has_master else rtype == "Worker"
        if leader and tally["active"] > 0 and expected > 0 and not _true(conditions, "Restarting"):
            conditions = set_condition(conditions, "Running", True, f"{KIND}Running", f"{KIND} {ref} is running.", now)
        if leader and expected == 0:
            msg = f"{KIND} {ref} successfully completed."
            conditions = set_condition(conditions, "Succeeded", True, f"{KIND}Succeeded", msg, now)
            step.events.append(Event("Normal", f"{KIND}Succeeded", msg))
            status.setdefault("completionTime", format_time(now))
            return conditions
        if tally["failed"] > 0 and spec["restartPolicy"] != "ExitCode":
            msg = f"{KIND} {ref} has failed because {tally['failed']} {rtype} replica(s) failed."
            conditions = set_condition(conditions, "Failed", True, f"{KIND}Failed", msg, now)
            step.events.append(Event("Normal", f"{KIND}Failed", msg))
            status.setdefault("completionTime", format_time(now))
            return conditions
    return conditions


def _past_limits(job: Obj, run_policy: Obj, specs: Mapping[str, Obj], pods: Sequence[Obj], status: Obj,
                 now: dt.datetime, step: PyTorchStep) -> str | None:
    name = job["metadata"]["name"]
    limit = run_policy.get("backoffLimit")
    if limit is not None:
        restarting = {_name(job, r, i) for r, s in specs.items() if s["restartPolicy"] in ("OnFailure", "Always")
                      for i in range(int(s["replicas"]))}
        restarts = sum(int(cs.get("restartCount") or 0) for p in pods if p["metadata"]["name"] in restarting
                       for cs in (p.get("status") or {}).get("containerStatuses") or [])
        if restarts >= int(limit) and restarts > 0:
            return f"Job {name} has failed because it has reached the specified backoff limit"
    deadline = run_policy.get("activeDeadlineSeconds")
    if deadline is not None and status.get("startTime"):
        end = parse_time(status["startTime"]) + dt.timedelta(seconds=int(deadline))
        if now >= end:
            return f"Job {name} has failed because it was active longer than specified deadline"
        step.requeue_after = end - now
    return None


def _cleanup(run_policy: Obj, live: Sequence[Obj]) -> list[str]:
    policy = run_policy.get("cleanPodPolicy") or "None"
    if policy == "All":
        return sorted(p["metadata"]["name"] for p in live)
    if policy == "Running":
        return sorted(p["metadata"]["name"] for p in live if _phase(p) in ("Running", "Pending"))
    return []


def _ttl(run_policy: Obj, status: Obj, now: dt.datetime, step: PyTorchStep) -> None:
    ttl = run_policy.get("ttlSecondsAfterFinished")
    if ttl is None or not status.get("completionTime"):
        return
    expires = parse_time(status["completionTime"]) + dt.timedelta(seconds=int(ttl))
    if now >= expires:
        step.delete_job = True
    else:
        step.requeue_after = expires - now


def _replica_status(job: Obj, rtype: str, counts: Mapping[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in counts.items() if v}
    out["selector"] = ",".join(f"{k}={v}" for k, v in sorted({
        JOB_NAME_LABEL: job["metadata"]["name"], OPERATOR_LABEL: OPERATOR_NAME, REPLICA_TYPE_LABEL: rtype.lower()}.items()))
    return out


def _done(step: PyTorchStep, status: dict[str, Any], conditions: list, specs: Mapping[str, Obj],
          pods: Sequence[Obj], job: Obj) -> PyTorchStep:
    counts: dict[str, dict[str, int]] = {r: {"active": 0, "succeeded": 0, "failed": 0} for r in specs}
    for pod in pods:
        rtype = next((r for r in specs if ((pod.get("metadata") or {}).get("labels") or {}).get(REPLICA_TYPE_LABEL) == r.lower()), None)
        if rtype is None:
            continue
        key = {"Running": "active", "Succeeded": "succeeded", "Failed": "failed"}.get(_phase(pod))
        if key:
            counts[rtype][key] += 1
    status["replicaStatuses"] = {r: _replica_status(job, r, c) for r, c in counts.items()}
    status["conditions"] = conditions
    step.status = status
    return step
