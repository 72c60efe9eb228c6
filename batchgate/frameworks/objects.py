"""The objects a framework job needs besides its pods: a headless Service, the MPI hostfile.

For an AppWrapper the gateway adds them as components; for a top-level Job the controller creates
them, owned by the Job, from the same functions (the gateway makes no API calls).
"""

from __future__ import annotations

import shlex
from typing import Any

from batchgate import keys
from batchgate.api.objects import metadata

from .env import hostfile_text
from .layout import Layout, parse_layout

HOSTFILE_KEY = "hostfile"
HOSTFILE_VOLUME = "batchgate-mpi-hostfile"
WAIT_CONTAINER = "wait-for-workers"
_WAIT_POLL_SECONDS = 2


def hostfile_configmap_name(subdomain: str) -> str:
    return f"{subdomain}-hostfile"


def headless_service(subdomain: str, framework: str) -> dict[str, Any]:
    """The Service that gives every pod labelled with this subdomain a DNS name.

    `publishNotReadyAddresses`, because peers must resolve each other before any of them is ready.
    """
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": subdomain, "labels": {keys.FRAMEWORK_LABEL: framework}},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {keys.SUBDOMAIN_LABEL: subdomain},
        },
    }


def hostfile_configmap(subdomain: str, layout: Layout) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": hostfile_configmap_name(subdomain), "labels": {keys.FRAMEWORK_LABEL: layout.framework}},
        "data": {HOSTFILE_KEY: hostfile_text(layout)},
    }


def _owned_by(job: dict[str, Any], made: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    made["metadata"]["namespace"] = meta.get("namespace", "")
    made["metadata"]["ownerReferences"] = [
        {
            "apiVersion": job["apiVersion"],
            "kind": job["kind"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return made


def _job_layout(job: dict[str, Any]) -> Layout | None:
    """The layout on a stored Job's pod template; None for a Job without a framework.

    A Job the gateway laid out has a well-formed layout; anything else raises FrameworkError.
    """
    template = (job.get("spec") or {}).get("template") or {}
    raw = (metadata(template).get("annotations") or {}).get(keys.FRAMEWORK_LAYOUT_ANNOTATION)
    return None if raw is None else parse_layout(raw)


def headless_service_for(job: dict[str, Any]) -> dict[str, Any] | None:
    """For the controller: the Service a top-level framework Job needs, owned by it (None: not one)."""
    layout = _job_layout(job)
    return None if layout is None else _owned_by(job, headless_service(layout.service, layout.framework))


def hostfile_configmap_for(job: dict[str, Any]) -> dict[str, Any] | None:
    """For the controller: the hostfile ConfigMap a top-level MPI Job needs (None: not MPI)."""
    layout = _job_layout(job)
    if layout is None or layout.framework != "mpi":
        return None
    return _owned_by(job, hostfile_configmap(layout.service, layout))


def hostfile_volume(subdomain: str) -> dict[str, Any]:
    return {"name": HOSTFILE_VOLUME, "configMap": {"name": hostfile_configmap_name(subdomain)}}


def hostfile_mount(layout: Layout) -> dict[str, Any]:
    """Mount the one file, not the directory, so nothing else in e.g. /etc/mpi is hidden."""
    return {"name": HOSTFILE_VOLUME, "mountPath": layout.hostfile_path, "subPath": HOSTFILE_KEY, "readOnly": True}


def wait_for_workers(layout: Layout) -> dict[str, Any]:
    """An init container that holds the MPI launcher until every worker's name resolves.

    It fails after the timeout, so a launcher never starts mpirun against a partial hostfile
    and the Job's backoff (or the AppWrapper's retry) takes over.
    """
    hosts = " ".join(shlex.quote(h) for h in layout.hosts("worker"))
    script = (
        f"deadline=$(( $(date +%s) + {layout.wait_timeout_seconds} )); "
        f"for h in {hosts}; do "
        'until nslookup "$h" >/dev/null 2>&1; do '
        'if [ "$(date +%s)" -ge "$deadline" ]; then '
        f'echo "timed out after {layout.wait_timeout_seconds}s waiting for $h" >&2; exit 1; fi; '
        f"sleep {_WAIT_POLL_SECONDS}; done; done"
    )
    return {"name": WAIT_CONTAINER, "image": layout.wait_image, "command": ["sh", "-c", script]}

