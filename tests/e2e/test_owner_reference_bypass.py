"""An ownerReference is a claim, not a pass: the bypass shapes of issue 19 replayed as alice.

alice names a controller owner (a ConfigMap she created, or an AppWrapper) on what she submits
with the real kubectl, through the shipped webhook configurations and the shipped policy. Every
shape must end in a denial or a corrected object: her own identity labels, suspended until the
queue admits it, a kind outside `allowedKinds.topLevel` refused, identity labels unchangeable.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import pytest
import yaml

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from tests.e2e.stack import NAMESPACE, ROOT, USER, Kubectl, Stack, running_stack

pytestmark = pytest.mark.timeout(120)


def shipped_policy() -> str:
    doc = yaml.safe_load((ROOT / "manifests" / "policy" / "policy-configmap.yaml").read_text())
    return doc["data"]["policy.yaml"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("owner-bypass"), policy_text=shipped_policy()) as running:
        yield running


@pytest.fixture(scope="module")
def owners(stack: Stack) -> dict[str, dict[str, Any]]:
    """Controller ownerReferences alice can write: a real ConfigMap of hers, and an AppWrapper name."""
    stack.kubectl("create", "configmap", "innocent", "-n", NAMESPACE, user=USER)
    uid = stack.kubectl("get", "configmap", "innocent", "-n", NAMESPACE, "-o", "jsonpath={.metadata.uid}").stdout
    return {
        "configmap": {"apiVersion": "v1", "kind": "ConfigMap", "name": "innocent", "uid": uid, "controller": True},
        "appwrapper": {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": "ghost",
                       "uid": "00000000-0000-0000-0000-000000000001", "controller": True},
    }


def job(name: str, owner: dict[str, Any] | None, *, queue: bool = True) -> dict[str, Any]:
    labels = {keys.USER_LABEL: "bob", keys.USERID_LABEL: "1002"}
    if queue:
        labels[keys.QUEUE_NAME_LABEL] = "default-queue"
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": labels}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}


def deployment(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": [owner]},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}


def stored(kubectl: Kubectl, kind: str, name: str) -> dict[str, Any]:
    return json.loads(kubectl("get", kind, name, "-n", NAMESPACE, "-o", "json").stdout)


def as_alice(kubectl: Kubectl, obj: dict[str, Any]) -> Any:
    return kubectl("create", "-f", "-", input=yaml.safe_dump(obj), user=USER, check=False)


Shape = Callable[[Kubectl, dict[str, dict[str, Any]]], None]


def a_job_claiming_a_configmap_owner_gets_her_identity_and_waits_for_quota(kubectl: Kubectl, owners: Any) -> None:
    done = as_alice(kubectl, job("claims-configmap", owners["configmap"]))
    assert done.returncode == 0, done.stderr
    obj = stored(kubectl, "job", "claims-configmap")
    assert obj["metadata"]["labels"][keys.USER_LABEL] == "alice"
    assert obj["metadata"]["labels"][keys.USERID_LABEL] == "1001"
    assert obj["spec"]["suspend"] is True


def a_job_claiming_an_appwrapper_owner_is_hers_too(kubectl: Kubectl, owners: Any) -> None:
    # Server-side dry run: admission runs, and the garbage collector cannot remove the Job
    # for its missing owner before we look.
    done = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                   input=yaml.safe_dump(job("claims-appwrapper", owners["appwrapper"])), user=USER, check=False)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert (obj["metadata"]["labels"][keys.USER_LABEL], obj["spec"]["suspend"]) == ("alice", True)


def a_job_claiming_an_owner_cannot_skip_the_queue(kubectl: Kubectl, owners: Any) -> None:
    done = as_alice(kubectl, job("no-queue", owners["configmap"], queue=False))
    assert done.returncode != 0
    assert "QueueRequired" in done.stderr


def a_deployment_claiming_a_configmap_owner_is_not_an_allowed_kind(kubectl: Kubectl, owners: Any) -> None:
    done = as_alice(kubectl, deployment("claims-configmap", owners["configmap"]))
    assert done.returncode != 0
    assert "KindNotAllowed" in done.stderr and "allowedKinds.topLevel" in done.stderr


def adding_an_owner_on_update_does_not_unlock_the_identity_labels(kubectl: Kubectl, owners: Any) -> None:
    created = as_alice(kubectl, job("relabel", None))
    assert created.returncode == 0, created.stderr
    patch = {"metadata": {"ownerReferences": [owners["configmap"]], "labels": {keys.USER_LABEL: "bob"}}}
    done = kubectl("patch", "job", "relabel", "-n", NAMESPACE, "--type", "merge", "-p", json.dumps(patch),
                   user=USER, check=False)
    assert done.returncode != 0
    assert "IdentityForged" in done.stderr
    assert stored(kubectl, "job", "relabel")["metadata"]["labels"][keys.USER_LABEL] == "alice"


@pytest.mark.parametrize("shape", [
    a_job_claiming_a_configmap_owner_gets_her_identity_and_waits_for_quota,
    a_job_claiming_an_appwrapper_owner_is_hers_too,
    a_job_claiming_an_owner_cannot_skip_the_queue,
    a_deployment_claiming_a_configmap_owner_is_not_an_allowed_kind,
    adding_an_owner_on_update_does_not_unlock_the_identity_labels,
], ids=lambda shape: shape.__name__.replace("_", " "))
def test_bypass_shape(stack: Stack, owners: dict[str, dict[str, Any]], shape: Shape) -> None:
    shape(stack.kubectl, owners)
