"""The env each framework expects, as a function of the layout and one pod's place in it.

Conventions follow Volcano's plugins (docs/frameworks.md, "Conventions") where they and the
training operator differ: hosts are `<hostname>.<subdomain>`, WORLD_SIZE counts pods (torchrun's
PET_NPROC_PER_NODE counts processes per pod), ranks go by role order then index, and TF_CONFIG's
cluster lists ps, worker, chief, evaluator in that order.
"""

from __future__ import annotations

import json
from typing import Callable

from .layout import Layout, Place

EnvList = list[tuple[str, str]]

TF_CLUSTER_ORDER = ("ps", "worker", "chief", "evaluator")


def pytorch_env(layout: Layout, place: Place) -> EnvList:
    master = layout.hosts("master")[0]
    port = str(layout.port)
    world = str(layout.count("master") + layout.count("worker"))
    rank = str(place.rank)
    return [
        ("MASTER_ADDR", master),
        ("MASTER_PORT", port),
        ("WORLD_SIZE", world),
        ("RANK", rank),
        ("PET_MASTER_ADDR", master),
        ("PET_MASTER_PORT", port),
        ("PET_NNODES", world),
        ("PET_NODE_RANK", rank),
        ("PET_NPROC_PER_NODE", layout.nproc_per_node),
    ]


def tensorflow_env(layout: Layout, place: Place) -> EnvList:
    """TF_CONFIG, except for a one-pod job, which TensorFlow must run undistributed (as Volcano)."""
    if layout.world_size == 1:
        return []
    cluster = {
        role: [f"{host}:{layout.port}" for host in layout.hosts(role)]
        for role in TF_CLUSTER_ORDER
        if layout.count(role)
    }
    config = {"cluster": cluster, "task": {"type": place.role, "index": place.role_index}}
    return [("TF_CONFIG", json.dumps(config, separators=(",", ":")))]


def mpi_env(layout: Layout, place: Place) -> EnvList:
    return [("OMPI_MCA_orte_default_hostfile", layout.hostfile_path)]


def mxnet_env(layout: Layout, place: Place) -> EnvList:
    return [
        ("DMLC_PS_ROOT_URI", layout.hosts("scheduler")[0]),
        ("DMLC_PS_ROOT_PORT", str(layout.port)),
        ("DMLC_NUM_SERVER", str(layout.count("server"))),
        ("DMLC_NUM_WORKER", str(layout.count("worker"))),
        ("DMLC_ROLE", place.role),
    ]


ENV_FOR: dict[str, Callable[[Layout, Place], EnvList]] = {
    "pytorch": pytorch_env,
    "tensorflow": tensorflow_env,
    "mpi": mpi_env,
    "mxnet": mxnet_env,
}


def framework_env(layout: Layout, place: Place) -> EnvList:
    return ENV_FOR[layout.framework](layout, place)


def hostfile_text(layout: Layout) -> str:
    """The MPI hostfile: one line per worker host with the slots each offers."""
    return "".join(f"{host} slots={layout.slots_per_host}\n" for host in layout.hosts("worker"))
