"""End to end: framework workloads run by the real gateway, the real controller and the local cluster.

alice submits with `kubectl apply`; the gateway lays the workload out; the controller makes a
top-level Job's headless Service, or queues an AppWrapper, admits it and creates its components
(the Service and MPI hostfile the gateway added among them); the local cluster's Job and
PyTorchJob controllers create the pods, each through the gateway's Pod phase; and every pod's env
is read back with `kubectl get pod -o jsonpath`, as a user would.

On a wrapped PyTorchJob's pods the training operator has already set MASTER_ADDR, WORLD_SIZE,
RANK and the PET_* variables (Kubeflow's conventions) when the gateway sees them. An env var the
pod already has is left alone (docs/frameworks.md, the user wins): those pods keep the operator's values,
which agree with each other, and get from batchgate their hostname and subdomain (so
`<pod>.<appwrapper>` resolves through the AppWrapper's Service too) and the rank annotation,
which equals the operator's RANK; no variable is set twice.

An AppWrapper from `batchgate generate pytorchjob` (MLBatch's pytorchjob-generator settings) runs
the same way: the settings' queue, the training operator's env on every pod, the chart's script.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from batchgate.kinds import APPWRAPPER, PYTORCHJOB
from controller.adapters.manager import Controller
from tests.controller.cluster import eventually
from tests.e2e.stack import NAMESPACE, ROOT, Kubectl, Stack, pods_env, running_controller, submit

pytestmark = pytest.mark.timeout(180)
BEHAVIOR = "localcluster.batchgate.dev/behavior"
RUNNING = {BEHAVIOR: json.dumps({"runFor": "600s"})}  # 30 s at the stack's speed: running while we look
REQUESTS = {"requests": {"cpu": "100m", "memory": "64Mi"}}
QUEUES = f"""
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: default-flavor}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: frameworks-cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
    - coveredResources: [cpu, memory]
      flavors:
        - name: default-flavor
          resources:
            - {{name: cpu, nominalQuota: "64"}}
            - {{name: memory, nominalQuota: 256Gi}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: default-queue, namespace: {NAMESPACE}}}
spec: {{clusterQueue: frameworks-cq}}
"""


@pytest.fixture(scope="module")
def controller(stack: Stack) -> Iterator[Controller]:
    """The real controller, in this process, as its (exempt) service account; with the queues it admits into."""
    stack.kubectl("apply", "-f", "-", input=QUEUES)
    with running_controller(stack) as ctl:
        yield ctl


def container(name: str = "main") -> dict[str, Any]:
    return {"name": name, "image": "trainer:1", "resources": REQUESTS}


def job(name: str, completions: int, role: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if role:
        meta["labels"] = {keys.ROLE_LABEL: role}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"completions": completions, "template": {
                "metadata": {"annotations": RUNNING},
                "spec": {"restartPolicy": "Never", "containers": [container()]}}}}


def pytorchjob(name: str, workers: int, nproc_per_node: str) -> dict[str, Any]:
    def replicas(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": {"annotations": RUNNING}, "spec": {"containers": [container("pytorch")]}}}

    return {"apiVersion": PYTORCHJOB.api_version, "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"nprocPerNode": nproc_per_node,
                     "pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(workers)}}}


def appwrapper(name: str, framework: str, *components: dict[str, Any]) -> dict[str, Any]:
    """What alice writes: the framework label and her components; no queue, env, Service or hostfile."""
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {keys.FRAMEWORK_LABEL: framework}},
            "spec": {"components": [{"template": c} for c in components]}}


def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(kubectl("get", *args, "-n", NAMESPACE, "-o", "json").stdout)


def jsonpath(kubectl: Kubectl, path: str, *args: str) -> str:
    """What kubectl prints for `path`; "" while the object does not exist yet."""
    return kubectl("get", *args, "-n", NAMESPACE, "-o", f"jsonpath={path}", check=False).stdout


def endpoint_hosts(kubectl: Kubectl, service: str, count: int) -> list[str]:
    """The pod hostnames the Service's endpoints list, once all `count` pods are in."""
    return eventually(
        lambda: len(hosts := sorted(jsonpath(kubectl, "{.subsets[*].addresses[*].hostname}", "endpoints", service).split()))
        == count and hosts, timeout=30, interval=0.3, what=f"{count} endpoints of Service {service}")


def waiting_for(kubectl: Kubectl, name: str) -> str:
    """What a user would look at when an AppWrapper does not run: its status, its Workload, the pods."""
    return "\n".join(kubectl(*args, check=False).stdout for args in (
        ("get", "appwrapper", name, "-n", NAMESPACE, "-o", "jsonpath={.status}"),
        ("get", "workloads", "-n", NAMESPACE, "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.conditions}{'\\n'}{end}"),
        ("get", "pods", "-A", "-o", "wide"), ("get", "clusterqueues", "-o", "wide")))


def run_appwrapper(kubectl: Kubectl, aw: dict[str, Any], pods: int) -> dict[str, dict[str, str]]:
    """Submit as alice; wait until it is admitted and Running; return its pods' env by hostname."""
    name = aw["metadata"]["name"]
    assert submit(kubectl, aw) == f"appwrapper.workload.codeflare.dev/{name} created"
    stored = get_json(kubectl, "appwrapper", name)
    assert stored["metadata"]["labels"][keys.QUEUE_NAME_LABEL] == "default-queue"
    eventually(lambda: jsonpath(kubectl, "{.status.phase}", "appwrapper", name) == "Running",
               timeout=60, interval=0.3, what=lambda: f"AppWrapper {name} to run: " + waiting_for(kubectl, name))
    return pods_env(kubectl, f"{keys.APPWRAPPER_LABEL}={name}", pods, timeout=60)


def owner_of(obj: dict[str, Any]) -> tuple[str, str]:
    (ref,) = [r for r in obj["metadata"].get("ownerReferences", []) if r.get("controller")]
    return ref["kind"], ref["name"]


def test_an_indexed_pytorch_job_gets_its_service_from_the_controller_selecting_its_pods(
        kubectl: Kubectl, controller: Controller) -> None:
    top = job("ddp", 3)
    top["metadata"].update(namespace=NAMESPACE, labels={keys.FRAMEWORK_LABEL: "pytorch"})
    assert submit(kubectl, top) == "job.batch/ddp created"
    envs = pods_env(kubectl, f"{keys.JOB_NAME_LABEL}=ddp", 3)
    assert {h: (e["MASTER_ADDR"], e["WORLD_SIZE"], e["RANK"]) for h, e in envs.items()} == {
        f"ddp-{i}": ("ddp-0.ddp", "3", str(i)) for i in range(3)}

    service = eventually(lambda: get_json(kubectl, "services", "-l", keys.FRAMEWORK_LABEL)["items"],
                         what="the controller-made Service")
    (service,) = [s for s in service if s["metadata"]["name"] == "ddp"]
    assert owner_of(service) == ("Job", "ddp")
    assert service["metadata"]["ownerReferences"][0]["uid"] == get_json(kubectl, "job", "ddp")["metadata"]["uid"]
    assert service["spec"]["clusterIP"] == "None"
    assert endpoint_hosts(kubectl, "ddp", 3) == ["ddp-0", "ddp-1", "ddp-2"]
    events = kubectl("describe", "job", "ddp", "-n", NAMESPACE).stdout
    assert "CreatedService" in events


def test_an_indexed_mpi_job_gets_its_hostfile_from_the_controller(kubectl: Kubectl, controller: Controller) -> None:
    top = job("allreduce", 3)
    top["metadata"].update(namespace=NAMESPACE, labels={keys.FRAMEWORK_LABEL: "mpi"})
    submit(kubectl, top)
    hostfile = eventually(lambda: jsonpath(kubectl, "{.data.hostfile}", "configmap", "allreduce-hostfile"),
                          what="the controller-made hostfile")
    assert hostfile == "allreduce-1.allreduce slots=1\nallreduce-2.allreduce slots=1\n"
    assert owner_of(get_json(kubectl, "configmap", "allreduce-hostfile")) == ("Job", "allreduce")
    envs = pods_env(kubectl, f"{keys.JOB_NAME_LABEL}=allreduce", 3)
    assert {e["OMPI_MCA_orte_default_hostfile"] for e in envs.values()} == {"/etc/mpi/hostfile"}
    assert endpoint_hosts(kubectl, "allreduce", 3) == ["allreduce-0", "allreduce-1", "allreduce-2"]


def test_a_pytorch_appwrapper_around_a_job_runs_with_master_world_size_and_ranks(
        kubectl: Kubectl, controller: Controller) -> None:
    envs = run_appwrapper(kubectl, appwrapper("pt", "pytorch", job("pt-train", 3)), 3)
    assert {h: (e["MASTER_ADDR"], e["MASTER_PORT"], e["WORLD_SIZE"], e["RANK"], e["PET_NNODES"], e["PET_NODE_RANK"])
            for h, e in envs.items()} == {
        f"pt-train-{i}": ("pt-train-0.pt", "23456", "3", str(i), "3", str(i)) for i in range(3)}
    assert owner_of(get_json(kubectl, "job", "pt-train")) == ("AppWrapper", "pt")
    assert owner_of(get_json(kubectl, "service", "pt")) == ("AppWrapper", "pt")
    assert endpoint_hosts(kubectl, "pt", 3) == ["pt-train-0", "pt-train-1", "pt-train-2"]


def test_a_pytorch_appwrapper_around_a_pytorchjob_keeps_the_operators_env_and_gets_batchgates_names(
        kubectl: Kubectl, controller: Controller) -> None:
    envs = run_appwrapper(kubectl, appwrapper("ptj", "pytorch", pytorchjob("ptj", 2, "2")), 3)
    # The training operator's values (Kubeflow: WORLD_SIZE = pods x nprocPerNode, MASTER_ADDR its
    # per-replica Service) were on the pods first and stay; they agree across the pods.
    assert {h: (e["MASTER_ADDR"], e["PET_MASTER_ADDR"], e["WORLD_SIZE"], e["RANK"], e["PET_NODE_RANK"],
                e["PET_NNODES"], e["PET_NPROC_PER_NODE"]) for h, e in envs.items()} == {
        "ptj-master-0": ("ptj-master-0", "ptj-master-0", "6", "0", "0", "3", "2"),
        "ptj-worker-0": ("ptj-master-0", "ptj-master-0", "6", "1", "1", "3", "2"),
        "ptj-worker-1": ("ptj-master-0", "ptj-master-0", "6", "2", "2", "3", "2"),
    }
    pods = get_json(kubectl, "pods", "-l", f"{keys.APPWRAPPER_LABEL}=ptj")["items"]
    for pod in pods:
        names = [e["name"] for e in pod["spec"]["containers"][0]["env"]]
        assert len(names) == len(set(names)), f"{pod['metadata']['name']} has a variable twice: {names}"
        assert pod["spec"]["subdomain"] == "ptj"
        assert pod["metadata"]["annotations"][keys.RANK_ANNOTATION] == envs[pod["spec"]["hostname"]]["RANK"]
    assert owner_of(get_json(kubectl, "pytorchjob", "ptj")) == ("AppWrapper", "ptj")
    assert endpoint_hosts(kubectl, "ptj", 3) == ["ptj-master-0", "ptj-worker-0", "ptj-worker-1"]


def test_a_tensorflow_appwrapper_with_ps_and_workers_gets_tf_config(kubectl: Kubectl, controller: Controller) -> None:
    envs = run_appwrapper(kubectl, appwrapper("tf", "tensorflow", job("tf-ps", 1, "ps"), job("tf-worker", 2, "worker")), 3)
    cluster = {"ps": ["tf-ps-0.tf:2222"], "worker": ["tf-worker-0.tf:2222", "tf-worker-1.tf:2222"]}
    assert {h: json.loads(e["TF_CONFIG"]) for h, e in envs.items()} == {
        "tf-ps-0": {"cluster": cluster, "task": {"type": "ps", "index": 0}},
        "tf-worker-0": {"cluster": cluster, "task": {"type": "worker", "index": 0}},
        "tf-worker-1": {"cluster": cluster, "task": {"type": "worker", "index": 1}},
    }


def test_an_mpi_appwrapper_gets_its_hostfile_component_the_mount_and_a_waiting_launcher(
        kubectl: Kubectl, controller: Controller) -> None:
    aw = appwrapper("mpi", "mpi", job("mpi-launcher", 1, "master"), job("mpi-worker", 2, "worker"))
    envs = run_appwrapper(kubectl, aw, 3)
    assert {e["OMPI_MCA_orte_default_hostfile"] for e in envs.values()} == {"/etc/mpi/hostfile"}
    hostfile = get_json(kubectl, "configmap", "mpi-hostfile")
    assert owner_of(hostfile) == ("AppWrapper", "mpi")
    assert hostfile["data"]["hostfile"] == "mpi-worker-0.mpi slots=1\nmpi-worker-1.mpi slots=1\n"
    pods = get_json(kubectl, "pods", "-l", f"{keys.APPWRAPPER_LABEL}=mpi")["items"]
    by_host = {p["spec"]["hostname"]: p["spec"] for p in pods}
    assert {h: [c["name"] for c in s.get("initContainers", [])] for h, s in by_host.items()} == {
        "mpi-launcher-0": ["wait-for-workers"], "mpi-worker-0": [], "mpi-worker-1": []}
    for spec in by_host.values():
        (mount,) = [m for m in spec["containers"][0]["volumeMounts"] if m["mountPath"] == "/etc/mpi/hostfile"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["configMap"]["name"] == "mpi-hostfile"
    wait_script = by_host["mpi-launcher-0"]["initContainers"][0]["command"][-1]
    assert "mpi-worker-0.mpi" in wait_script and "mpi-worker-1.mpi" in wait_script


GENERATOR_SETTINGS = f"""\
jobName: generated
namespace: {NAMESPACE}
numPods: 3
numCpusPerPod: 100m
totalMemoryPerPod: 64Mi
containerImage: trainer:1
setupCommands: [cd /workspace]
mainProgram: train.py --epochs 1
"""
PRIORITY_CLASS = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: default-priority}\nvalue: 5\n"
"""What MLBatch's cluster set-up creates; the generated pods name it (the chart's `priority` default)."""


def test_a_generated_pytorchjob_appwrapper_runs_with_the_training_operators_env(
        kubectl: Kubectl, controller: Controller, tmp_path: Path) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(GENERATOR_SETTINGS)
    generate = subprocess.run([sys.executable, "-m", "batchgate.cli", "generate", "pytorchjob", "-f", str(settings)],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, check=True)
    aw = yaml.safe_load(generate.stdout)
    kubectl("apply", "-f", "-", input=PRIORITY_CLASS)
    try:
        assert submit(kubectl, aw) == "appwrapper.workload.codeflare.dev/generated created"
        eventually(lambda: jsonpath(kubectl, "{.status.phase}", "appwrapper", "generated") == "Running",
                   timeout=60, interval=0.3, what=lambda: "AppWrapper generated to run: " + waiting_for(kubectl, "generated"))
        pods = eventually(lambda: len(found := get_json(kubectl, "pods", "-l", f"{keys.APPWRAPPER_LABEL}=generated")[
            "items"]) == 3 and found, timeout=60, interval=0.3, what="the 3 pods of the generated PyTorchJob")
        # No framework label, so no batchgate hostnames: the pods are named, and their env set, by the training operator.
        envs = {p["metadata"]["name"]: {e["name"]: e.get("value") for e in p["spec"]["containers"][0]["env"]}
                for p in pods}
        assert {name: (e["MASTER_ADDR"], e["MASTER_PORT"], e["WORLD_SIZE"], e["RANK"], e["PYTHONUNBUFFERED"])
                for name, e in envs.items()} == {
            "generated-master-0": ("generated-master-0", "23456", "3", "0", "1"),
            "generated-worker-0": ("generated-master-0", "23456", "3", "1", "1"),
            "generated-worker-1": ("generated-master-0", "23456", "3", "2", "1"),
        }
        for pod in pods:
            (container,) = pod["spec"]["containers"]
            assert container["command"][:2] == ["sh", "-c"]
            assert container["command"][2].endswith(
                '--rdzv_endpoint="${MASTER_ADDR}:${MASTER_PORT}" train.py --epochs 1\n')
            assert pod["spec"]["priorityClassName"] == "default-priority"
        assert owner_of(get_json(kubectl, "pytorchjob", "generated")) == ("AppWrapper", "generated")
    finally:
        kubectl("delete", "appwrapper", "generated", "-n", NAMESPACE, "--ignore-not-found", check=False)
        kubectl("delete", "priorityclass", "default-priority", "--ignore-not-found", check=False)
