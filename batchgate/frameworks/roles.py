"""Each framework's roles, in rank order, and the rules on how many pods each may have.

Ranks go by role order (the leader first) then index, so the order of `ROLES[framework]` is a
contract: PyTorch RANK 0 is the master, MPI's launcher comes before its workers.
"""

from __future__ import annotations

from typing import Mapping

from .errors import FrameworkError

ROLES: Mapping[str, tuple[str, ...]] = {
    "pytorch": ("master", "worker"),
    "tensorflow": ("chief", "ps", "worker", "evaluator"),
    "mpi": ("master", "worker"),
    "mxnet": ("scheduler", "server", "worker"),
}
"""Canonical role names per framework, in rank order."""

LEADER: Mapping[str, str | None] = {
    "pytorch": "master",
    "tensorflow": None,
    "mpi": "master",
    "mxnet": "scheduler",
}
"""The role that must have exactly one pod; a single Indexed Job gives it index 0."""

WORKER = "worker"

AT_MOST_ONE: Mapping[str, tuple[str, ...]] = {"tensorflow": ("chief", "evaluator")}
AT_LEAST_ONE: Mapping[str, tuple[str, ...]] = {
    "pytorch": (WORKER,),
    "tensorflow": (WORKER,),
    "mpi": (WORKER,),
    "mxnet": ("server", WORKER),  # the parameter-server kvstore has nowhere to push without a server
}


MAX_PODS = 2000
"""Pods one framework workload may lay out. Every pod's env (TF_CONFIG, the MPI hostfile) lists
the hosts, so the reply and each pod grow with the count: at 2,000 a TF_CONFIG is about 100 KB,
and the largest distributed jobs we know of run a few hundred pods."""


def check_counts(framework: str, counts: Mapping[str, int], label_of: Mapping[str, str], path: str) -> None:
    """Deny a layout that no framework run could use: no leader, two leaders, zero workers, or
    more pods than MAX_PODS."""
    total = sum(counts.values())
    if total > MAX_PODS:
        raise FrameworkError(path, f"{framework} lays out at most {MAX_PODS} pods, found {total}")
    leader = LEADER[framework]
    if leader is not None:
        found = counts.get(leader, 0)
        if found == 0:
            raise FrameworkError(path, f"{framework} needs one {label_of[leader]!r} pod, found none")
        if found > 1:
            raise FrameworkError(path, f"{framework} needs exactly one {label_of[leader]!r} pod, found {found}")
    for role in AT_MOST_ONE.get(framework, ()):
        if counts.get(role, 0) > 1:
            raise FrameworkError(path, f"{framework} allows at most one {label_of[role]!r} pod, found {counts[role]}")
    for role in AT_LEAST_ONE[framework]:
        if counts.get(role, 0) == 0:
            raise FrameworkError(path, f"{framework} needs at least one {label_of[role]!r} pod, found none")

