"""Which component a pod belongs to, so failure-policy rules can target the component that failed.

We test these aspects: a wrapped Pod is its own component, a Job's or PyTorchJob's pod belongs to
its controlling owner, a Deployment's pod through its ReplicaSet's name, an unrelated pod to none;
and that only Failed pods name components.
"""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.appwrapper_status import AppWrapperState, ComponentStatus
from controller.decisions.appwrapper.owners import component_of, failed_components

AW = AppWrapperState("aw", "team-a", components=(
    ComponentStatus("trainer", "Pod", "v1"),
    ComponentStatus("eval", "Job", "batch/v1"),
    ComponentStatus("ps", "PyTorchJob", "kubeflow.org/v1"),
    ComponentStatus("web", "Deployment", "apps/v1"),
))


def a_pod(name: str, owner: tuple[str, str] | None = None, phase: str = "Running") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    return {"metadata": meta, "status": {"phase": phase}}


@pytest.mark.parametrize("pod, index", [
    pytest.param(a_pod("trainer"), 0, id="a wrapped Pod is its own component"),
    pytest.param(a_pod("eval-x7k2p", ("Job", "eval")), 1, id="a Job's pod belongs to the Job component"),
    pytest.param(a_pod("ps-worker-0", ("PyTorchJob", "ps")), 2, id="a PyTorchJob's pod belongs to it"),
    pytest.param(a_pod("web-5d4f8-abcde", ("ReplicaSet", "web-5d4f8")), 3,
                 id="a Deployment's pod belongs to it through its ReplicaSet's name"),
    pytest.param(a_pod("other-1", ("Job", "other")), None, id="a pod of something else belongs to no component"),
    pytest.param(a_pod("eval"), None, id="a pod named like a non-Pod component is not that component"),
])
def test_a_pod_belongs_to_the_component_that_owns_it(pod: dict[str, Any], index: int | None) -> None:
    assert component_of(AW, pod) == index


def test_only_failed_pods_name_their_components_once_each_in_order() -> None:
    pods = [a_pod("ps-worker-0", ("PyTorchJob", "ps"), "Failed"), a_pod("trainer", phase="Running"),
            a_pod("eval-a", ("Job", "eval"), "Failed"), a_pod("eval-b", ("Job", "eval"), "Failed")]
    assert failed_components(AW, pods) == (1, 2)
