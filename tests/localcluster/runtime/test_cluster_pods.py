"""We test pods on the running local cluster with the real client and kubectl: every phase and
restart policy, bad behaviour annotations, logs, scheduling (GPUs, selectors, taints, cordon,
too-big pods, other schedulers)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.localcluster.runtime.conftest import eventually


def pod_manifest(name, behavior=None, restart="Never", gpus=0, cpu="100m", **spec):
    meta = {"name": name}
    if behavior is not None:
        meta["annotations"] = {"localcluster.batchgate.dev/behavior": behavior if isinstance(behavior, str) else json.dumps(behavior)}
    resources = {"requests": {"cpu": cpu}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"restartPolicy": restart, "containers": [{"name": "main", "image": "busybox", "resources": resources}], **spec}}


def create(api, ns, manifest):
    return client.CoreV1Api(api).create_namespaced_pod(ns, manifest)


def read(api, ns, name):
    return client.CoreV1Api(api).read_namespaced_pod(name, ns)


def events(api, ns, name):
    return [(e.reason, e.message) for e in client.CoreV1Api(api).list_namespaced_event(ns).items if e.involved_object.name == name]


@pytest.mark.parametrize(
    ("behavior", "restart", "phase", "exit_code"),
    [
        pytest.param({"startAfter": "1s", "runFor": "4s"}, "Never", "Succeeded", 0, id="a pod runs and succeeds"),
        pytest.param({"runFor": "2s", "exitCode": 3}, "Never", "Failed", 3, id="a pod fails with its exit code"),
        pytest.param({"runFor": "2s"}, "OnFailure", "Succeeded", 0, id="OnFailure does not restart a success"),
    ],
)
def test_pods_run_to_their_end(sim_api, ns, behavior, restart, phase, exit_code):
    create(sim_api, ns, pod_manifest("p", behavior, restart))
    pod = eventually(lambda: (p := read(sim_api, ns, "p")).status.phase == phase and p)
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == exit_code
    assert pod.status.pod_ip and pod.status.host_ip and pod.status.start_time
    assert pod.spec.node_name


def test_a_running_pod_is_ready_with_ips(sim_api, ns):
    create(sim_api, ns, pod_manifest("p", restart="Always"))
    pod = eventually(lambda: (p := read(sim_api, ns, "p")).status.phase == "Running" and p)
    ready = {c.type: c.status for c in pod.status.conditions}
    assert ready["Ready"] == "True" and ready["PodScheduled"] == "True"
    assert pod.status.container_statuses[0].ready is True


@pytest.mark.parametrize(
    ("behavior", "restart"),
    [
        pytest.param({"runFor": "1s", "exitCode": 1}, "OnFailure", id="OnFailure restarts a failing container"),
        pytest.param({"crashAfter": "1s"}, "Always", id="Always restarts a crashing container into CrashLoopBackOff"),
    ],
)
def test_restarting_pods_count_restarts_and_back_off(sim_api, ns, behavior, restart):
    create(sim_api, ns, pod_manifest("p", behavior, restart))
    pod = eventually(lambda: (p := read(sim_api, ns, "p")).status.container_statuses
                     and p.status.container_statuses[0].state.waiting
                     and p.status.container_statuses[0].state.waiting.reason == "CrashLoopBackOff" and p)
    assert pod.status.phase == "Running"
    assert pod.status.container_statuses[0].restart_count >= 1
    assert eventually(lambda: ("BackOff" in [r for r, _ in events(sim_api, ns, "p")]))


def test_a_bad_behavior_annotation_fails_the_pod_with_a_clear_event(sim_api, ns):
    create(sim_api, ns, pod_manifest("p", '{"runFor": "ten seconds"}'))
    create(sim_api, ns, pod_manifest("fine", {"runFor": "1s"}))
    pod = eventually(lambda: (p := read(sim_api, ns, "p")).status.phase == "Failed" and p)
    assert pod.status.reason == "InvalidBehavior"
    message = eventually(lambda: dict(events(sim_api, ns, "p")).get("InvalidBehavior"))
    assert "runFor: invalid duration 'ten seconds'" in message
    assert eventually(lambda: read(sim_api, ns, "fine").status.phase == "Succeeded")


def test_kubectl_logs_says_what_the_container_did(sim_api, sim_kubectl, ns):
    create(sim_api, ns, pod_manifest("p", {"runFor": "1s", "exitCode": 4}))
    eventually(lambda: read(sim_api, ns, "p").status.phase == "Failed")
    out = sim_kubectl("logs", "-n", ns, "p").stdout
    assert out.splitlines()[0] == f"[localcluster] simulated container main of pod {ns}/p"
    assert "exited with code 4 (Error)" in out


def test_gpu_pods_land_on_gpu_nodes_and_a_too_big_pod_names_the_shortfall(sim_api, ns):
    create(sim_api, ns, pod_manifest("small", gpus=4, restart="Always"))
    create(sim_api, ns, pod_manifest("huge", gpus=16, restart="Always"))
    small = eventually(lambda: (p := read(sim_api, ns, "small")).spec.node_name and p)
    assert small.spec.node_name.startswith("gpu-")
    message = eventually(lambda: dict(events(sim_api, ns, "huge")).get("FailedScheduling"))
    assert message == ("0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: spare}, "
                       "3 Insufficient nvidia.com/gpu.")
    condition = next(c for c in read(sim_api, ns, "huge").status.conditions if c.type == "PodScheduled")
    assert (condition.status, condition.reason) == ("False", "Unschedulable")


def test_selectors_and_tolerations_choose_the_node(sim_api, ns):
    create(sim_api, ns, pod_manifest("spare", restart="Always", nodeSelector={"pool": "spare"},
                                     tolerations=[{"key": "dedicated", "operator": "Equal", "value": "spare", "effect": "NoSchedule"}]))
    create(sim_api, ns, pod_manifest("a100", restart="Always", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["a100"]}]}]}}}))
    assert eventually(lambda: read(sim_api, ns, "spare").spec.node_name) == "spare"
    assert eventually(lambda: read(sim_api, ns, "a100").spec.node_name).startswith("gpu-")


def test_cordon_keeps_new_pods_off_and_uncordon_lets_them_on(sim_api, sim_kubectl, ns):
    sim_kubectl("cordon", "cpu-0")
    try:
        create(sim_api, ns, pod_manifest("p", restart="Always", nodeSelector={"kubernetes.io/hostname": "cpu-0"}))
        message = eventually(lambda: dict(events(sim_api, ns, "p")).get("FailedScheduling"))
        assert "1 node(s) were unschedulable" in message
        taints = eventually(lambda: client.CoreV1Api(sim_api).read_node("cpu-0").spec.taints)
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in [(t.key, t.effect) for t in taints]
    finally:
        sim_kubectl("uncordon", "cpu-0")
    assert eventually(lambda: read(sim_api, ns, "p").spec.node_name) == "cpu-0"
    # Later tests on this cluster read scheduling messages: the taint must be gone before this test ends.
    assert eventually(lambda: not any(t.key == "node.kubernetes.io/unschedulable"
                                      for t in client.CoreV1Api(sim_api).read_node("cpu-0").spec.taints or []))


def test_a_pod_for_another_scheduler_waits_for_someone_to_bind_it(sim_api, ns):
    create(sim_api, ns, pod_manifest("p", {"runFor": "1s"}, schedulerName="scheduler-plugins-scheduler"))
    import time

    time.sleep(0.5)
    assert read(sim_api, ns, "p").spec.node_name is None
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "cpu-0"}}
    client.CoreV1Api(sim_api).create_namespaced_binding(ns, body, _preload_content=False)
    assert eventually(lambda: read(sim_api, ns, "p").status.phase == "Succeeded")


def test_kubectl_delete_stops_a_running_pod_within_its_grace_period(sim_api, sim_kubectl, ns):
    manifest = pod_manifest("held", restart="Always")
    manifest["metadata"]["finalizers"] = ["example.com/hold"]
    create(sim_api, ns, manifest)
    create(sim_api, ns, pod_manifest("plain", restart="Always"))
    eventually(lambda: all(p.status.phase == "Running" for p in client.CoreV1Api(sim_api).list_namespaced_pod(ns).items))
    sim_kubectl("delete", "pod", "-n", ns, "plain", "--timeout=20s")
    # The delete's answer shows the grace period given; a read may already see the kubelet's final grace 0.
    pod = client.CoreV1Api(sim_api).delete_namespaced_pod("held", ns)
    assert pod.metadata.deletion_grace_period_seconds == 30 and pod.metadata.deletion_timestamp
    stopped = eventually(lambda: (p := read(sim_api, ns, "held")).status.phase == "Failed" and p)
    assert stopped.status.container_statuses[0].state.terminated.exit_code == 143
    assert eventually(lambda: "Killing" in [r for r, _ in events(sim_api, ns, "held")])
    client.CoreV1Api(sim_api).patch_namespaced_pod("held", ns, {"metadata": {"finalizers": None}})
    assert eventually(lambda: [p.metadata.name for p in client.CoreV1Api(sim_api).list_namespaced_pod(ns).items] == [])


def test_an_unbound_pod_is_deleted_at_once(sim_api, sim_kubectl, ns):
    create(sim_api, ns, pod_manifest("waiting", schedulerName="nobody"))
    sim_kubectl("delete", "pod", "-n", ns, "waiting", "--wait=false")
    assert client.CoreV1Api(sim_api).list_namespaced_pod(ns).items == []
