"""We test a PyTorchJob as MLBatch users write one end to end: the CRD is served at start; master and worker pods
and headless Services appear with the operator's env; the job runs and succeeds; suspend removes
its pods and resume brings them back; a refused status write is tried again."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from tests.localcluster.runtime.builders import a_pytorchjob
from tests.localcluster.runtime.conftest import eventually
from tests.localcluster.webhook_stub import WebhookStub

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"


def sample(master_behavior, worker_behavior, workers=2, suspend=None):
    job = a_pytorchjob()
    specs = job["spec"]["pytorchReplicaSpecs"]
    specs["Worker"]["replicas"] = workers
    for rtype, behavior in (("Master", master_behavior), ("Worker", worker_behavior)):
        specs[rtype]["template"].setdefault("metadata", {})["annotations"] = {
            "localcluster.batchgate.dev/behavior": json.dumps(behavior)}
    if suspend is not None:
        job["spec"]["runPolicy"] = {"suspend": suspend}
    return job


def custom(api):
    return client.CustomObjectsApi(api)


def conditions(api, ns):
    job = custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "sample-pytorchjob")
    return {c["type"]: (c["status"], c["reason"]) for c in (job.get("status") or {}).get("conditions") or []}


def pods(api, ns):
    return client.CoreV1Api(api).list_namespaced_pod(ns, label_selector="training.kubeflow.org/job-name=sample-pytorchjob").items


def test_a_pytorchjob_gets_pods_services_env_and_succeeds(sim_api, ns):
    custom(sim_api).create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, sample({"runFor": "3s"}, {"runFor": "1h"}))
    names = eventually(lambda: sorted(p.metadata.name for p in pods(sim_api, ns)) if len(pods(sim_api, ns)) == 3 else None)
    assert names == ["sample-pytorchjob-master-0", "sample-pytorchjob-worker-0", "sample-pytorchjob-worker-1"]
    services = client.CoreV1Api(sim_api).list_namespaced_service(ns).items
    assert sorted(s.metadata.name for s in services) == names
    assert all(s.spec.cluster_ip == "None" for s in services)
    worker = client.CoreV1Api(sim_api).read_namespaced_pod("sample-pytorchjob-worker-1", ns)
    env = {e.name: e.value for e in worker.spec.containers[0].env}
    assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED")} == {
        "MASTER_ADDR": "sample-pytorchjob-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "2",
        "PYTHONUNBUFFERED": "1"}
    assert worker.metadata.labels["training.kubeflow.org/replica-type"] == "worker"
    assert eventually(lambda: conditions(sim_api, ns).get("Succeeded"), timeout=30) == ("True", "PyTorchJobSucceeded")
    final = conditions(sim_api, ns)
    assert final["Created"] == ("True", "PyTorchJobCreated")
    assert final["Running"] == ("False", "PyTorchJobRunning")


def test_endpoints_of_a_replica_service_list_its_pod(sim_api, ns):
    custom(sim_api).create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, sample({"runFor": "1h"}, {"runFor": "1h"}, 1))
    master = eventually(lambda: next((p for p in pods(sim_api, ns) if p.metadata.name.endswith("master-0") and p.status.pod_ip), None))
    endpoints = eventually(lambda: next((e.subsets for e in client.CoreV1Api(sim_api).list_namespaced_endpoints(ns).items
                                         if e.metadata.name == "sample-pytorchjob-master-0" and e.subsets), None))
    assert [a.ip for a in endpoints[0].addresses] == [master.status.pod_ip]
    assert eventually(lambda: conditions(sim_api, ns).get("Running")) == ("True", "PyTorchJobRunning")


def test_suspend_and_resume(sim_api, ns):
    api = custom(sim_api)
    api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, sample({"runFor": "1h"}, {"runFor": "1h"}, 1, suspend=True))
    assert eventually(lambda: conditions(sim_api, ns).get("Suspended")) == ("True", "PyTorchJobSuspended")
    assert pods(sim_api, ns) == []
    api.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "sample-pytorchjob", {"spec": {"runPolicy": {"suspend": False}}})
    assert eventually(lambda: conditions(sim_api, ns).get("Suspended") == ("False", "PyTorchJobResumed"))
    assert eventually(lambda: len([p for p in pods(sim_api, ns) if p.status.phase == "Running"]) == 2)
    api.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "sample-pytorchjob", {"spec": {"runPolicy": {"suspend": True}}})
    assert eventually(lambda: conditions(sim_api, ns).get("Suspended") == ("True", "PyTorchJobSuspended"))
    assert eventually(lambda: not [p for p in pods(sim_api, ns) if not p.metadata.deletion_timestamp])


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    with WebhookStub(tmp_path_factory.mktemp("stub")) as server:
        yield server


def test_a_status_write_refused_with_a_conflict_is_tried_again(sim_api, ns, stub):
    """Issue 20 item 2: the PyTorchJob controller's status write refused with 409 (a webhook here)
    is not taken for done: a suspended PyTorchJob has no pods, so no event would bring its sync back,
    and its status is written once the refusal stops. Before, it was swallowed and never written."""
    hooks = client.AdmissionregistrationV1Api(sim_api)
    name = f"refuse-pytorchjob-status-{ns}"
    hooks.create_validating_webhook_configuration({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": "refuse.batchgate.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                      "clientConfig": {"url": f"https://127.0.0.1:{stub.port}/deny-conflict",
                                       "caBundle": stub.files.ca_bundle},
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                      "rules": [{"operations": ["UPDATE"], "apiGroups": [GROUP], "apiVersions": [VERSION],
                                 "resources": [f"{PLURAL}/status"]}]}]})
    try:
        custom(sim_api).create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, sample({"runFor": "1h"}, {"runFor": "1h"},
                                                                                           1, suspend=True))
        eventually(lambda: stub.received, timeout=10)  # the first status write was refused
        time.sleep(2)
        assert conditions(sim_api, ns) == {}
    finally:
        hooks.delete_validating_webhook_configuration(name)
    assert eventually(lambda: conditions(sim_api, ns).get("Suspended"), timeout=30) == ("True", "PyTorchJobSuspended")
