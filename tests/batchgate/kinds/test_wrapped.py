"""What an AppWrapper component's kind says about its pods: the controller's podSet inference,
and the podSets to declare for kinds it does not infer."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.errors import FieldError
from batchgate.kinds.wrapped import infer_pod_sets
from tests.builders import a_deployment, a_job, a_jobset, a_pod, a_pytorchjob, a_raycluster, a_rayjob, a_service


@pytest.mark.parametrize(
    "obj, expected",
    [
        pytest.param(a_pod().build(), [("template", 1)], id="a pod is its own single template"),
        pytest.param(a_deployment(replicas=3).build(), [("template.spec.template", 3)], id="a deployment counts replicas"),
        pytest.param(a_deployment(replicas=3, kind="StatefulSet").build(), [("template.spec.template", 3)],
                     id="a statefulset counts replicas"),
        pytest.param(a_job(parallelism=2).build(), [("template.spec.template", 2)], id="a job counts parallelism"),
        pytest.param(a_job(parallelism=8, completions=4).build(), [("template.spec.template", 4)],
                     id="a job with fewer completions than parallelism counts completions"),
        pytest.param(a_pytorchjob(workers=3).build(),
                     [("template.spec.pytorchReplicaSpecs.Master.template", 1),
                      ("template.spec.pytorchReplicaSpecs.Worker.template", 3)],
                     id="a pytorchjob has a master and workers"),
        pytest.param(a_pytorchjob(workers=0).build(), [("template.spec.pytorchReplicaSpecs.Master.template", 1)],
                     id="a pytorchjob without workers has only a master"),
        pytest.param(a_raycluster(workers=(2, 5)).build(),
                     [("template.spec.headGroupSpec.template", 1),
                      ("template.spec.workerGroupSpecs[0].template", 2),
                      ("template.spec.workerGroupSpecs[1].template", 5)],
                     id="a raycluster has a head and each worker group"),
        pytest.param(a_raycluster(workers=(2,), hosts=4).build(),
                     [("template.spec.headGroupSpec.template", 1), ("template.spec.workerGroupSpecs[0].template", 8)],
                     id="a multi-host ray worker group makes replicas times numOfHosts pods, as KubeRay does"),
        pytest.param(a_rayjob(workers=(3,)).build(),
                     [("template.spec.rayClusterSpec.headGroupSpec.template", 1),
                      ("template.spec.rayClusterSpec.workerGroupSpecs[0].template", 3)],
                     id="a rayjob nests its cluster under rayClusterSpec"),
        pytest.param(a_jobset(jobs=((2, 3), (1, 1))).build(),
                     [("template.spec.replicatedJobs[0].template.spec.template", 6),
                      ("template.spec.replicatedJobs[1].template.spec.template", 1)],
                     id="a jobset multiplies replicas by pods per job"),
    ],
)
def test_upstream_inference(obj: dict[str, Any], expected: list[tuple[str, int]]) -> None:
    pod_sets = infer_pod_sets(obj)
    assert pod_sets is not None
    assert [(p.path, p.replicas) for p in pod_sets] == expected


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(a_service().build(), id="a service is not inferable"),
        pytest.param({**a_job().build(), "apiVersion": "batch/v2"}, id="inference keys on the exact version"),
        pytest.param("not an object", id="a string is not inferable"),
    ],
)
def test_kinds_upstream_does_not_infer(obj: Any) -> None:
    assert infer_pod_sets(obj) is None


def test_malformed_replicas_are_a_field_error() -> None:
    job = a_deployment().build()
    job["spec"]["replicas"] = "three"
    with pytest.raises(FieldError, match=r"spec\.replicas: must be a non-negative integer"):
        infer_pod_sets(job)
