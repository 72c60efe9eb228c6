"""How the framework phases plug into the gateway's mutate pipeline and its validation.

`/mutate` only mutates: the step lays out what it can and leaves a bad workload or pod as it
came. `/validate` sees the object as mutated and reruns the same pure phases on a copy: a bad
one is denied there with its field path, and a pod whose own env vars won over batchgate's gets
a warning naming them.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from batchgate.policy import Policy

from ..review import AdmissionRequest, Verdict
from . import FrameworkSettings, apply_frameworks

if TYPE_CHECKING:
    from ..mutation import MutationContext

DENIAL_REASON = "InvalidFramework"


def settings_from_policy(policy: Policy) -> FrameworkSettings:
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


def framework_step(obj: dict[str, Any], ctx: "MutationContext") -> list[str]:
    """The mutate-pipeline step: the workload phase or the pod phase, whichever is due."""
    request = ctx.request
    outcome = apply_frameworks(obj, request.kind, request.operation, settings_from_policy(ctx.policy))
    return list(outcome.changes)


def framework_verdict(request: AdmissionRequest, policy: Policy) -> Verdict | None:
    """The validation check: a denial naming the field, warnings, or None when nothing applies."""
    if not isinstance(request.object, dict):
        return None
    mutated = copy.deepcopy(request.object)
    outcome = apply_frameworks(mutated, request.kind, request.operation, settings_from_policy(policy))
    if outcome.error is not None:
        return Verdict(
            allowed=False, code=403, reason=DENIAL_REASON, message=f"{DENIAL_REASON}: {outcome.error}"
        )
    if outcome.warnings:
        return Verdict(allowed=True, reason="Allowed", warnings=outcome.warnings)
    return None
