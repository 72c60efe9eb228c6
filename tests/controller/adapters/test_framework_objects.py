"""The real controller on the local cluster makes a top-level framework Job's Service and MPI
hostfile, owned by the Job, remakes them when deleted, and leaves a user's namesake alone with a
Warning Event; `kubectl describe` tells which. The Jobs are stored as the gateway lays them out."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from controller.adapters.kube import RESOURCES, KubeClient
from controller.adapters.manager import Controller
from tests.controller.builders import ROOT, a_framework_job
from tests.controller.cluster import eventually, get_or_none, kubectl, started_controller

pytestmark = pytest.mark.timeout(90)
JOBS, SERVICES, CONFIGMAPS = RESOURCES["Job"], RESOURCES["Service"], RESOURCES["ConfigMap"]


@pytest.fixture(scope="module")
def controller(cluster: Any) -> Iterator[Controller]:
    yield from started_controller(cluster)


def submit(client: KubeClient, namespace: str, name: str, framework: str, completions: int) -> dict[str, Any]:
    return client.create(JOBS, a_framework_job(name, framework, completions, namespace=namespace, uid=None))


def described(cluster: Any, namespace: str, job: str) -> str:
    return kubectl(cluster.kubeconfig, "describe", "job", job, "-n", namespace).stdout


def test_a_framework_job_gets_its_service_at_once_and_again_after_a_delete(
        cluster: Any, client: KubeClient, controller: Controller, namespace: str) -> None:
    job = submit(client, namespace, "train", "pytorch", 3)
    service = eventually(lambda: get_or_none(client, SERVICES, "train", namespace), what="the Service")
    (owner,) = service["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Job", "train", job["metadata"]["uid"], True)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {keys.SUBDOMAIN_LABEL: "train"}
    assert job["spec"]["template"]["metadata"]["labels"][keys.SUBDOMAIN_LABEL] == "train"
    assert get_or_none(client, CONFIGMAPS, "train-hostfile", namespace) is None, "no hostfile for pytorch"
    eventually(lambda: "CreatedService" in described(cluster, namespace, "train"), what="the CreatedService Event")

    client.delete(SERVICES, "train", namespace)
    again = eventually(lambda: (s := get_or_none(client, SERVICES, "train", namespace))
                       and s["metadata"]["uid"] != service["metadata"]["uid"] and s, what="the Service made again")
    assert again["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]


def test_an_mpi_job_gets_its_hostfile_and_both_go_with_the_job(
        client: KubeClient, controller: Controller, namespace: str) -> None:
    submit(client, namespace, "mpi", "mpi", 3)
    hostfile = eventually(lambda: get_or_none(client, CONFIGMAPS, "mpi-hostfile", namespace), what="the hostfile")
    assert hostfile["data"]["hostfile"] == "mpi-1.mpi slots=1\nmpi-2.mpi slots=1\n"
    eventually(lambda: get_or_none(client, SERVICES, "mpi", namespace), what="the Service")

    client.delete(JOBS, "mpi", namespace)
    eventually(lambda: get_or_none(client, CONFIGMAPS, "mpi-hostfile", namespace) is None
               and get_or_none(client, SERVICES, "mpi", namespace) is None, what="garbage collection")


def test_a_users_own_service_of_that_name_is_left_alone_with_a_warning(
        cluster: Any, client: KubeClient, controller: Controller, namespace: str) -> None:
    mine = client.create(SERVICES, {"apiVersion": "v1", "kind": "Service",
                                    "metadata": {"name": "shared", "namespace": namespace},
                                    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    submit(client, namespace, "shared", "pytorch", 2)
    text = eventually(lambda: "FrameworkObjectConflict" in (out := described(cluster, namespace, "shared")) and out,
                      what="the Warning Event")
    assert "Service shared exists and is not owned by this Job" in text
    kept = client.get(SERVICES, "shared", namespace)
    assert (kept["metadata"]["resourceVersion"], kept["spec"]["selector"]) == (mine["metadata"]["resourceVersion"], {"app": "web"})
    assert "ownerReferences" not in kept["metadata"]


def test_the_controller_role_may_watch_and_create_services_and_configmaps() -> None:
    docs = yaml.safe_load_all((ROOT / "manifests" / "rbac" / "controller.yaml").read_text())
    (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "batchgate-controller"]
    granted = {(resource, verb) for rule in role["rules"] if "" in rule["apiGroups"]
               for resource in rule["resources"] for verb in rule["verbs"]}
    for resource in ("services", "configmaps"):
        assert {(resource, v) for v in ("get", "list", "watch", "create")} <= granted
