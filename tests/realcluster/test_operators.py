"""The upstream operators, KubeRay's and the training operator, installed from their modules and run
as local processes on a real cluster (`RealCluster(operators="upstream")`): what is changed from
upstream's install (pure, tables), then a RayCluster made ready by KubeRay and a PyTorchJob run by
the training operator."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.sim.nodes import parse_nodes_file
from realcluster import operators, toolchain
from realcluster.cluster import RealCluster, RealClusterError
from realcluster.operators import KUBERAY, TRAINING, OperatorError
from tests.e2e.test_install import eventually
from tests.realcluster_fixtures import BINARIES, NODES, NOT_BUILT, admin_kubectl, get_object

Kubectl = Callable[..., str]
BUILT = {p.name for p in toolchain.operator_programs(toolchain.load_versions())
         if not toolchain.missing([p], toolchain.cache_root())}
KUBERAY_NOT_BUILT = "KubeRay's operator is not built (make operators builds it; it needs Go 1.26+)"
TRAINING_NOT_BUILT = "the training operator is not built (make operators builds it; it needs Go 1.26+)"

KUBERAY_UPSTREAM: list[dict[str, Any]] = [
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "rayclusters.ray.io"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kuberay-operator", "namespace": "default"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "kuberay-operator"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kuberay-operator"},
     "subjects": [{"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": "default"},
                  {"kind": "Group", "name": "system:masters"}]},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kuberay-operator", "namespace": "default"},
     "spec": {"template": {"spec": {"containers": [{"name": "kuberay-operator", "env": [
         {"name": "MY_POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
         {"name": "LOG_LEVEL", "value": "info"}]}]}}}},
]


def test_kuberay_moves_to_the_namespace_of_the_identity_batchgate_trusts_as_kustomize_would() -> None:
    moved = operators.into_namespace(KUBERAY_UPSTREAM, "ray-system")
    assert moved[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ray-system"}}
    assert [o["metadata"].get("namespace") for o in moved[1:]] == [None, "ray-system", None, "ray-system"]
    assert moved[3]["subjects"] == [{"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": "ray-system"},
                                    {"kind": "Group", "name": "system:masters"}]
    assert KUBERAY_UPSTREAM[1]["metadata"]["namespace"] == "default"


def test_an_install_that_spans_namespaces_is_one_line_naming_the_file_to_update() -> None:
    spread = [*KUBERAY_UPSTREAM, {"kind": "Service", "metadata": {"name": "s", "namespace": "other"}}]
    with pytest.raises(OperatorError, match=r"^upstream's install spans namespaces \['default', 'other'\]: .*operators\.py$"):
        operators.into_namespace(spread, "ray-system")


def test_the_deployments_environment_has_its_downward_api_values_as_in_a_pod() -> None:
    moved = operators.into_namespace(KUBERAY_UPSTREAM, "ray-system")
    assert operators.deployment_env(moved, KUBERAY) == {"MY_POD_NAMESPACE": "ray-system", "LOG_LEVEL": "info"}


def test_an_environment_source_a_local_process_cannot_fill_is_one_line() -> None:
    deployment = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"env": [
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}}}}
    with pytest.raises(OperatorError, match=r"^upstream's Deployment sets NODE from spec.nodeName that a local process"):
        operators.deployment_env([deployment], TRAINING)


def test_an_unknown_operators_choice_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(RealClusterError, match=r"^operators='kuberay': expected True \(the stand-ins\), False \(none\) "
                                               r"or 'upstream'"):
        RealCluster(tmp_path, binaries={}, operators="kuberay")  # type: ignore[arg-type]


def test_upstream_operators_not_built_is_one_line_naming_make_operators(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(toolchain.CACHE_ENV, str(tmp_path / "empty-cache"))
    with pytest.raises(RealClusterError, match=r"^KubeRay's operator is not built: run `make operators`"):
        RealCluster(tmp_path, binaries={}, operators="upstream")


# on a real cluster ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def upstream_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RealCluster, Kubectl]]:
    """A real cluster of its own whose workload operators are upstream's."""
    if BINARIES is None:
        pytest.skip(NOT_BUILT)
    if KUBERAY.program not in BUILT:
        pytest.skip(KUBERAY_NOT_BUILT)
    workdir = tmp_path_factory.mktemp("operators")
    with RealCluster(workdir, nodes=parse_nodes_file(NODES), binaries=BINARIES, operators="upstream") as cluster:
        yield cluster, admin_kubectl(cluster, tmp_path_factory.mktemp("operators-kubectl-cache"))


def _namespace(kubectl: Kubectl) -> str:
    namespace = f"op-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", namespace)
    return namespace


def _container(name: str, image: str) -> dict[str, Any]:
    return {"name": name, "image": image, "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                         "limits": {"cpu": "1", "memory": "1Gi"}}}


@pytest.mark.realcluster
@pytest.mark.timeout(900)
def test_kuberay_makes_a_raycluster_ready_on_the_real_control_plane(
        upstream_cluster: tuple[RealCluster, Kubectl]) -> None:
    _, kubectl = upstream_cluster
    namespace = _namespace(kubectl)
    image = "rayproject/ray:2.46.0"
    raycluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc", "namespace": namespace},
                  "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                      "containers": [_container("ray-head", image)]}}},
                      "workerGroupSpecs": [{"groupName": "workers", "replicas": 2, "minReplicas": 2, "maxReplicas": 2,
                                            "rayStartParams": {}, "template": {"spec": {
                                                "containers": [_container("ray-worker", image)]}}}]}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(raycluster))
    eventually(lambda: (get_object(kubectl, "raycluster", "rc", "-n", namespace).get("status") or {}).get("state") == "ready",
               "KubeRay reports the RayCluster ready", 180)
    pods = get_object(kubectl, "pods", "-n", namespace, "-l", "ray.io/cluster=rc")["items"]
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]


@pytest.mark.realcluster
@pytest.mark.timeout(900)
def test_the_training_operator_runs_a_pytorchjob_to_success_on_the_real_control_plane(
        upstream_cluster: tuple[RealCluster, Kubectl]) -> None:
    if TRAINING.program not in BUILT:
        pytest.skip(TRAINING_NOT_BUILT)
    _, kubectl = upstream_cluster
    namespace = _namespace(kubectl)
    behavior = {"localcluster.batchgate.dev/behavior": json.dumps({"runFor": "20s"})}

    def replica(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": behavior}, "spec": {"containers": [_container("pytorch", "pytorch/pytorch:2.4")]}}}

    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pj", "namespace": namespace},
           "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)}}}
    kubectl("apply", "-f", "-", input=yaml.safe_dump(job))

    def condition(kind: str) -> bool:
        status = get_object(kubectl, "pytorchjob", "pj", "-n", namespace).get("status") or {}
        return any(c["type"] == kind and c["status"] == "True" for c in status.get("conditions") or [])

    eventually(lambda: condition("Running"), "the training operator reports the PyTorchJob Running", 180)
    eventually(lambda: condition("Succeeded"), "the training operator reports the PyTorchJob Succeeded", 180)


def test_the_training_operator_runs_with_its_fixed_cert_dir_bound_to_its_clusters_own(tmp_path: Path) -> None:
    argv = operators.in_private_cert_dir(["/bin/training-operator", "--leader-elect=false"], tmp_path)
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[-4:] == [str(operators.TRAINING_CERT_DIR), str(tmp_path), "/bin/training-operator",
                         "--leader-elect=false"]


@pytest.mark.skipif(not operators.private_mounts(), reason="needs a mount namespace (unshare, as root)")
def test_in_its_namespace_the_fixed_cert_dir_shows_the_clusters_own_and_outside_nothing_changes(tmp_path: Path) -> None:
    outside = operators.TRAINING_CERT_DIR / "tls.crt"
    before = outside.read_bytes() if outside.exists() else None
    (tmp_path / "tls.crt").write_text("this cluster's pair")
    shown = subprocess.run(operators.in_private_cert_dir(["cat", str(outside)], tmp_path), capture_output=True,
                           text=True, timeout=30)
    assert shown.stdout == "this cluster's pair", shown.stderr
    assert (outside.read_bytes() if outside.exists() else None) == before
