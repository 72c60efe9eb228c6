"""Both framework phases through the real gateway: `batchgate webhook` under gunicorn over TLS.

AdmissionReviews go over a verifying HTTPS connection the way the API server sends them; each
JSON Patch that comes back is applied as the API server applies it, and the next object in the
chain (the Job's pods) is built from the patched result.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any, Iterator

import jsonpatch
import pytest

from batchgate import keys
from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from tests.webhook.rules.frameworks.builders import env_of, indexed_job, pods_of
from webhook.serving.admission_review import review_document
from webhook.serving.client import GatewayClient
from webhook.serving.launch import start_gateway
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

ALICE = UserInfo("alice", "uid-alice", ("system:authenticated",))
JOB_CONTROLLER = UserInfo("system:serviceaccount:kube-system:job-controller", "",
                          ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"))
"""Who creates a Job's pods: the gateway judges a pod by its sender, not by the owner it names."""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayClient]:
    certs: Path = tmp_path_factory.mktemp("frameworks-gateway") / "certs"
    write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    running = start_gateway(certs, "--workers", "1", "--threads", "2")
    client = GatewayClient(running.host, running.port, certs / "ca.crt")
    yield client
    client.close()
    running.stop()


def review(client: GatewayClient, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    kind = GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"])
    user = JOB_CONTROLLER if kind.kind == "Pod" else ALICE
    request = AdmissionRequest(uid=str(uuid.uuid4()), kind=kind, operation="CREATE", user=user,
                               namespace="team1", name=obj["metadata"].get("name", ""), object=obj)
    status, reply = client.review(path, review_document(request))
    assert status == 200
    return reply["response"]


def admitted(client: GatewayClient, obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """/mutate, the patch applied, then /validate: (stored object, validate's response)."""
    mutated = review(client, "/mutate", obj)
    assert mutated["allowed"], mutated
    if "patch" in mutated:
        obj = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(mutated["patch"])))
    return obj, review(client, "/validate", obj)


def test_an_indexed_pytorch_job_and_each_of_its_pods_through_the_gateway(gateway: GatewayClient) -> None:
    job = indexed_job("train", 3, framework="pytorch")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "team1-queue"
    job, verdict = admitted(gateway, job)
    assert verdict["allowed"]
    ranks = {}
    for pod in pods_of(job):
        pod, verdict = admitted(gateway, pod)
        assert verdict["allowed"] and "warnings" not in verdict
        env = env_of(pod)
        assert (env["MASTER_ADDR"], env["WORLD_SIZE"]) == ("train-0.train", "3")
        ranks[pod["spec"]["hostname"]] = env["RANK"]
    assert ranks == {"train-0": "0", "train-1": "1", "train-2": "2"}


def test_over_tls_a_pod_without_its_index_is_denied_and_a_users_rank_is_kept_with_a_warning(
    gateway: GatewayClient,
) -> None:
    job = indexed_job("train", 2, framework="pytorch")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "team1-queue"
    job, _ = admitted(gateway, job)
    lost, mine = pods_of(job)
    del lost["metadata"]["annotations"][keys.JOB_COMPLETION_INDEX_ANNOTATION]
    del lost["metadata"]["labels"][keys.JOB_COMPLETION_INDEX_LABEL]
    denied = review(gateway, "/mutate", lost)
    assert (denied["allowed"], denied["status"]["code"], denied["status"]["reason"]) == (False, 403, "InvalidFramework")
    assert "a framework pod needs its index" in denied["status"]["message"]
    mine["spec"]["containers"][0]["env"] = [{"name": "RANK", "value": "9"}]
    mutated = review(gateway, "/mutate", mine)
    assert mutated["allowed"] and mutated["warnings"] == ["container main keeps its own RANK (batchgate: 1)"]
    pod, verdict = admitted(gateway, mine)
    assert env_of(pod)["RANK"] == "9" and verdict["allowed"]
