"""Protobuf bodies, patches, server-side apply and webhook admission through the local cluster,
driven by the real kubectl v1.32 as a user would."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.localcluster.webhook_stub import WebhookStub
from tests.localcluster_fixtures import wait_until

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def get(kubectl: Kubectl, namespace: str, *what: str) -> dict[str, Any]:
    return json.loads(kubectl("-n", namespace, "get", *what, "-o", "json").stdout)


GENERATED = [
    pytest.param(["create", "configmap", "cm", "--from-literal=a=1"], "configmap/cm", "{.data.a}", "1",
                 id="a configmap from a literal"),
    pytest.param(["create", "secret", "generic", "s", "--from-literal=k=v"], "secret/s", "{.data.k}", "dg==",
                 id="a secret whose data arrives as bytes"),
    pytest.param(["create", "deployment", "web", "--image=nginx", "--replicas=2"], "deployment/web",
                 "{.spec.replicas} {.spec.template.spec.containers[0].image}", "2 nginx", id="a deployment"),
    pytest.param(["create", "job", "once", "--image=busybox", "--", "echo", "hi"], "job/once",
                 "{.spec.template.spec.containers[0].command}", '["echo","hi"]', id="a job with a command"),
    pytest.param(["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"], "cronjob/nightly",
                 "{.spec.schedule}", "0 3 * * *", id="a cron job"),
    pytest.param(["create", "serviceaccount", "robot"], "serviceaccount/robot", "{.metadata.name}", "robot",
                 id="a service account"),
    pytest.param(["create", "service", "clusterip", "api", "--tcp=80:8080"], "service/api",
                 "{.spec.ports[0].port} {.spec.ports[0].targetPort}", "80 8080",
                 id="a service with an integer target port"),
    pytest.param(["create", "quota", "gpus", "--hard=requests.nvidia.com/gpu=8,pods=20"], "resourcequota/gpus",
                 "{.spec.hard.requests\\.nvidia\\.com/gpu} {.spec.hard.pods}", "8 20", id="a resource quota"),
    pytest.param(["create", "role", "reader", "--verb=get,list", "--resource=pods"], "role/reader",
                 "{.rules[0].verbs}", '["get","list"]', id="a role"),
    pytest.param(["create", "rolebinding", "readers", "--role=reader", "--user=alice"], "rolebinding/readers",
                 "{.roleRef.name} {.subjects[0].name}", "reader alice", id="a role binding"),
    pytest.param(["create", "poddisruptionbudget", "keep", "--selector=app=x", "--min-available=50%"],
                 "poddisruptionbudget/keep", "{.spec.minAvailable}", "50%", id="a disruption budget"),
]


@pytest.mark.parametrize(("args", "target", "jsonpath", "expected"), GENERATED)
def test_kubectl_create_generators_send_protobuf_the_cluster_stores(kubectl: Kubectl, namespace: str,
                                                                     args: list[str], target: str, jsonpath: str,
                                                                     expected: str) -> None:
    kubectl("-n", namespace, *args)
    assert kubectl("-n", namespace, "get", target, "-o", f"jsonpath={jsonpath}").stdout == expected


def test_kubectl_create_namespace_and_auth_whoami(kubectl: Kubectl) -> None:
    name = f"ns-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    assert json.loads(kubectl("get", "namespace", name, "-o", "json").stdout)["metadata"]["name"] == name
    assert "system:masters" in kubectl("auth", "whoami").stdout


def deployment_yaml(image: str, env: dict[str, str]) -> str:
    env_lines = "".join(f"        - name: {k}\n          value: '{v}'\n" for k, v in env.items())
    return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
            "  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n"
            f"    spec:\n      containers:\n      - name: app\n        image: {image}\n        env:\n{env_lines}")


def test_kubectl_apply_twice_patches_with_strategic_merge(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", input=deployment_yaml("app:1", {"A": "1", "B": "2"}))
    kubectl("-n", namespace, "patch", "deployment", "web", "--type", "strategic", "-p",
            json.dumps({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [
                {"name": "INJECTED", "value": "x"}]}]}}}}))
    kubectl("-n", namespace, "apply", "-f", "-", input=deployment_yaml("app:2", {"A": "1"}))
    container = get(kubectl, namespace, "deployment", "web")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "app:2"
    assert {e["name"] for e in container["env"]} == {"A", "INJECTED"}  # B dropped by apply, INJECTED kept


def test_kubectl_label_and_annotate_merge_into_metadata(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    kubectl("-n", namespace, "label", "configmap", "cm", "team=a", "tier=gold")
    kubectl("-n", namespace, "label", "configmap", "cm", "tier-")
    kubectl("-n", namespace, "annotate", "configmap", "cm", "note=hello")
    meta = get(kubectl, namespace, "configmap", "cm")["metadata"]
    assert (meta["labels"], meta["annotations"]) == ({"team": "a"}, {"note": "hello"})


def test_a_strategic_patch_without_a_merge_key_is_refused_with_422(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx")
    result = kubectl("-n", namespace, "patch", "deployment", "web", "--type", "strategic", "-p",
                     '{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}', check=False)
    assert result.returncode != 0
    assert "does not contain declared merge key: name" in result.stderr


CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: '{a}'\n"


def test_server_side_apply_conflicts_name_the_other_manager_and_force_takes_over(kubectl: Kubectl,
                                                                               namespace: str) -> None:
    kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=CM.format(a="1"))
    clash = kubectl("-n", namespace, "apply", "--server-side", "--field-manager=rival", "-f", "-",
                    input=CM.format(a="2"), check=False)
    assert clash.returncode != 0
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .data.a' in clash.stderr
    kubectl("-n", namespace, "apply", "--server-side", "--field-manager=rival", "--force-conflicts", "-f", "-",
            input=CM.format(a="2"))
    obj = json.loads(kubectl("-n", namespace, "get", "configmap", "cm", "-o", "json",
                             "--show-managed-fields").stdout)
    assert obj["data"] == {"a": "2"}
    owners = {e["manager"]: e.get("fieldsV1") for e in obj["metadata"]["managedFields"]}
    assert owners == {"rival": {"f:data": {"f:a": {}}}}


def test_server_side_apply_after_kubectl_create_conflicts_with_its_update(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    clash = kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=CM.format(a="9"), check=False)
    assert 'conflict with "kubectl-create" using v1: .data.a' in clash.stderr


def test_server_side_apply_creates_and_applying_again_is_a_no_op(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=CM.format(a="1"))
    before = get(kubectl, namespace, "configmap", "cm")["metadata"]["resourceVersion"]
    kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=CM.format(a="1"))
    assert get(kubectl, namespace, "configmap", "cm")["metadata"]["resourceVersion"] == before


# --- admission through kubectl ------------------------------------------------------------------


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookStub]:
    with WebhookStub(tmp_path_factory.mktemp("stub"), service="stub", namespace="hooks") as server:
        yield server


@pytest.fixture
def webhooks(kubectl: Kubectl, stub: WebhookStub, namespace: str) -> Iterator[Callable[..., None]]:
    """Register webhook configurations scoped to the test's namespace; removed afterwards."""
    if kubectl("get", "namespace", "hooks", check=False).returncode != 0:
        kubectl("create", "namespace", "hooks")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "stub", "namespace": "hooks",
        "annotations": {"localcluster.batchgate.dev/address": f"127.0.0.1:{stub.port}"}},
        "spec": {"ports": [{"port": 443}]}}
    kubectl("apply", "-f", "-", input=json.dumps(service))
    created: list[tuple[str, str]] = []

    def register(kind: str, path: str, **overrides: Any) -> None:
        name = f"{namespace}-{len(created)}"
        hook = {"name": f"{path.strip('/').split('/')[0]}.batchgate.dev", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "clientConfig": {"service": {"namespace": "hooks", "name": "stub", "path": path},
                                 "caBundle": stub.files.ca_bundle},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"]}], **overrides}
        config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
                  "webhooks": [hook]}
        kubectl("create", "-f", "-", input=json.dumps(config))
        created.append((kind.lower(), name))

    yield register
    for kind, name in created:
        kubectl("delete", kind, name, "--wait=false")


def test_a_mutating_webhook_patches_what_kubectl_creates(kubectl: Kubectl, namespace: str, stub: WebhookStub,
                                                         webhooks: Callable[..., None]) -> None:
    webhooks("MutatingWebhookConfiguration", "/label/owner/gateway")
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    assert get(kubectl, namespace, "configmap", "cm")["metadata"]["labels"] == {"owner": "gateway"}
    review = stub.received[-1].review["request"]
    assert (review["userInfo"]["username"], review["namespace"], review["operation"]) == ("admin", namespace,
                                                                                         "CREATE")
    assert review["object"]["data"] == {"a": "1"} and "uid" not in review["object"]["metadata"]
    assert review["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                 "fieldManager": "kubectl-create", "fieldValidation": "Strict"}


def test_a_validating_denial_reads_in_kubectl_as_on_a_real_cluster(kubectl: Kubectl, namespace: str,
                                                                  webhooks: Callable[..., None]) -> None:
    webhooks("ValidatingWebhookConfiguration", "/deny")
    result = kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == ('error: failed to create configmap: admission webhook "deny.batchgate.dev" '
                                      "denied the request: no GPUs on Tuesdays")
    assert kubectl("-n", namespace, "get", "configmap", "cm", check=False).returncode != 0


def test_webhook_warnings_are_printed_by_kubectl(kubectl: Kubectl, namespace: str,
                                                 webhooks: Callable[..., None]) -> None:
    webhooks("ValidatingWebhookConfiguration", "/warn")
    result = kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    assert "Warning: this is deprecated" in result.stderr and "Warning: and so is that" in result.stderr


def test_a_slow_webhook_fails_only_the_requests_it_matches(kubectl: Kubectl, namespace: str,
                                                          webhooks: Callable[..., None]) -> None:
    webhooks("ValidatingWebhookConfiguration", "/slow/3", timeoutSeconds=1)
    result = kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1", check=False)
    assert 'failed calling webhook "slow.batchgate.dev"' in result.stderr
    assert "context deadline exceeded" in result.stderr
    kubectl("-n", namespace, "create", "secret", "generic", "s", "--from-literal=k=v")


def test_a_server_dry_run_reaches_a_webhook_as_dry_and_stores_nothing(kubectl: Kubectl, namespace: str,
                                                                       stub: WebhookStub,
                                                                       webhooks: Callable[..., None]) -> None:
    webhooks("ValidatingWebhookConfiguration", "/allow", sideEffects="NoneOnDryRun")
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1", "--dry-run=server")
    assert stub.received[-1].review["request"]["dryRun"] is True
    assert stub.received[-1].review["request"]["options"]["dryRun"] == ["All"]
    assert kubectl("-n", namespace, "get", "configmap", "cm", check=False).returncode != 0


def test_a_job_created_from_a_cron_job_keeps_its_owner_and_template(kubectl: Kubectl, namespace: str) -> None:
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * * *", "jobTemplate": {"spec": {"backoffLimit": 2, "template": {"spec": {
            "restartPolicy": "Never",
            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "share", "nfs": {"server": "nfs.local", "path": "/export"}}],
            "securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "train", "image": "trainer:1", "args": ["--epochs", "3"],
                            "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                            "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "8Gi"}},
                            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}]}}}}}}
    kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(cron))
    kubectl("-n", namespace, "create", "job", "manual", "--from=cronjob/nightly")
    job = get(kubectl, namespace, "job", "manual")
    cron_uid = get(kubectl, namespace, "cronjob", "nightly")["metadata"]["uid"]
    assert [(o["kind"], o["name"], o["uid"], o["controller"]) for o in job["metadata"]["ownerReferences"]] == [
        ("CronJob", "nightly", cron_uid, True)]
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2", "memory": "8Gi"}
    assert pod["volumes"][1] == {"name": "share", "nfs": {"server": "nfs.local", "path": "/export"}}
    assert pod["securityContext"] == {"runAsUser": 1000, "runAsNonRoot": True}
    assert pod["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_server_side_apply_over_a_generated_deployment_conflicts_on_the_image(kubectl: Kubectl,
                                                                             namespace: str) -> None:
    kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx")
    clash = kubectl("-n", namespace, "apply", "--server-side", "-f", "-", check=False,
                    input=deployment_yaml("app:2", {"A": "1"}).replace("name: app", "name: nginx"))
    assert clash.returncode != 0
    assert 'conflict with "kubectl-create" using apps/v1' in clash.stderr
    assert '.spec.template.spec.containers[name="nginx"].image' in clash.stderr
    assert ".spec.replicas" not in clash.stderr  # same value (1): shared, not a conflict


def test_server_side_apply_of_a_custom_resource_replaces_its_lists_whole(kubectl: Kubectl, namespace: str) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "sizes": {"type": "array", "items": {"type": "integer"}},
                            "color": {"type": "string"}}}}}}}]}}
    kubectl("apply", "-f", "-", input=json.dumps(crd))
    kubectl("wait", "--for=condition=Established", f"crd/widgets.{group}", "--timeout=20s")

    def widget(**spec: Any) -> str:
        return json.dumps({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})

    kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=widget(sizes=[1, 2, 3], color="red"))
    kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=widget(sizes=[4]))
    obj = json.loads(kubectl("-n", namespace, "get", f"widgets.{group}", "w", "-o", "json").stdout)
    assert obj["spec"] == {"sizes": [4]}
    clash = kubectl("-n", namespace, "apply", "--server-side", "--field-manager=other", "-f", "-",
                    input=widget(sizes=[5]), check=False)
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.sizes' in clash.stderr
    kubectl("delete", "crd", f"widgets.{group}", "--wait=false")


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "2"}}

# kube-apiserver honours dryRun on every verb (staging/src/k8s.io/apiserver/pkg/endpoints/handlers:
# create.go, update.go, patch.go, delete.go read it from CreateOptions/UpdateOptions/PatchOptions in the
# query and from DeleteOptions in the body); admission runs with dryRun true and storage is skipped
# (registry/generic/registry/dryrun.go). kubectl sends a delete's dryRun in the DeleteOptions body.
DRY_RUNS = [
    pytest.param(["create", "configmap", "other", "--from-literal=a=1"], None, "CREATE", id="create stores nothing"),
    pytest.param(["replace", "-f", "-"], json.dumps(CONFIGMAP), "UPDATE", id="replace leaves the object as it was"),
    pytest.param(["patch", "configmap", "cm", "--type=merge", "-p", '{"data":{"a":"2"}}'], None, "UPDATE",
                 id="patch leaves the object as it was"),
    pytest.param(["apply", "-f", "-"], json.dumps(CONFIGMAP), "UPDATE",
                 id="client-side apply leaves the object as it was"),
    pytest.param(["apply", "--server-side", "--force-conflicts", "-f", "-"], json.dumps(CONFIGMAP), "UPDATE",
                 id="server-side apply leaves the object as it was"),
    pytest.param(["delete", "configmap", "cm"], None, "DELETE", id="delete keeps the object"),
    pytest.param(["delete", "-k", "KUSTOMIZATION"], None, "DELETE", id="delete -k keeps the object"),
    pytest.param(["scale", "deployment", "web", "--replicas=5"], None, "UPDATE",
                 id="scale leaves the replicas as they were"),
    pytest.param(["patch", "service", "api", "--subresource=status", "--type=merge",
                  "-p", '{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.9"}]}}}'], None, "UPDATE",
                 id="a status patch leaves the status as it was"),
]


def _stored(kubectl: Kubectl, namespace: str) -> dict[str, Any]:
    objects = get(kubectl, namespace, "configmaps,services,deployments")["items"]
    return {(o["kind"], o["metadata"]["name"]): (o["metadata"]["resourceVersion"], o.get("data"),
                                                o.get("status") if o["kind"] == "Service" else None,
                                                (o.get("spec") or {}).get("replicas"))
            for o in objects}


@pytest.mark.parametrize(("args", "stdin", "operation"), DRY_RUNS)
def test_a_server_dry_run_of_each_verb_is_admitted_as_dry_and_changes_nothing(
        kubectl: Kubectl, namespace: str, stub: WebhookStub, webhooks: Callable[..., None], tmp_path: Any,
        args: list[str], stdin: str | None, operation: str) -> None:
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    # A LoadBalancer: kube-apiserver refuses loadBalancer status on any other type of Service
    kubectl("-n", namespace, "create", "service", "loadbalancer", "api", "--tcp=80:8080")
    kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx", "--replicas=0")
    (tmp_path / "cm.yaml").write_text(json.dumps(CONFIGMAP))
    (tmp_path / "kustomization.yaml").write_text(f"namespace: {namespace}\nresources: [cm.yaml]\n")
    webhooks("ValidatingWebhookConfiguration", "/allow", sideEffects="NoneOnDryRun", rules=[{
        "operations": ["*"], "apiGroups": ["", "apps"], "apiVersions": ["v1"],
        "resources": ["configmaps", "services/status", "deployments/scale"]}])
    before, seen = _stored(kubectl, namespace), len(stub.received)
    argv = [str(tmp_path) if a == "KUSTOMIZATION" else a for a in args]
    kubectl("-n", namespace, *argv, "--dry-run=server", input=stdin)
    assert _stored(kubectl, namespace) == before
    reviews = [r.review["request"] for r in stub.received[seen:]]
    assert [(r["operation"], r["dryRun"], r["options"]["dryRun"]) for r in reviews] == [(operation, True, ["All"])]


def test_a_dry_run_in_the_delete_options_body_or_the_query_of_a_collection_delete_keeps_everything(
        kube_api: Any, kubectl: Kubectl, namespace: str) -> None:
    from kubernetes import client

    core = client.CoreV1Api(kube_api)
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    before = get(kubectl, namespace, "configmap", "cm")
    core.delete_collection_namespaced_config_map(namespace, dry_run="All")
    core.delete_collection_namespaced_config_map(namespace, body=client.V1DeleteOptions(dry_run=["All"]))
    core.delete_namespaced_config_map("cm", namespace, body=client.V1DeleteOptions(dry_run=["All"]))
    assert get(kubectl, namespace, "configmap", "cm") == before
    with pytest.raises(client.ApiException) as refused:
        core.delete_namespaced_config_map("cm", namespace, body=client.V1DeleteOptions(dry_run=["Some"]))
    assert (refused.value.status, json.loads(refused.value.body)["message"]) == (
        422, 'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"')
    assert get(kubectl, namespace, "configmap", "cm") == before


def test_an_update_and_a_delete_reach_webhooks_with_the_old_object(kubectl: Kubectl, namespace: str,
                                                                  stub: WebhookStub,
                                                                  webhooks: Callable[..., None]) -> None:
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1")
    webhooks("MutatingWebhookConfiguration", "/label/touched/yes")
    webhooks("ValidatingWebhookConfiguration", "/deny", rules=[{
        "operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
    kubectl("-n", namespace, "annotate", "configmap", "cm", "note=hi")
    update = stub.received[-1].review["request"]
    assert (update["operation"], update["oldObject"]["metadata"].get("annotations")) == ("UPDATE", None)
    assert update["object"]["metadata"]["annotations"] == {"note": "hi"}
    assert get(kubectl, namespace, "configmap", "cm")["metadata"]["labels"] == {"touched": "yes"}
    refused = kubectl("-n", namespace, "delete", "configmap", "cm", check=False)
    assert refused.stderr.strip() == ('Error from server (Forbidden): admission webhook "deny.batchgate.dev" '
                                      "denied the request: no GPUs on Tuesdays")
    delete = stub.received[-1].review["request"]
    assert (delete["operation"], delete["object"], delete["oldObject"]["metadata"]["name"]) == ("DELETE", None, "cm")
    assert delete["options"]["kind"] == "DeleteOptions"


def test_webhooks_see_the_impersonated_user(kubectl: Kubectl, namespace: str, stub: WebhookStub,
                                            webhooks: Callable[..., None]) -> None:
    webhooks("ValidatingWebhookConfiguration", "/allow")
    kubectl("-n", namespace, "create", "configmap", "cm", "--from-literal=a=1", "--as=alice",
            "--as-group=team-a")
    user = stub.received[-1].review["request"]["userInfo"]
    assert (user["username"], "team-a" in user["groups"]) == ("alice", True)


def test_server_side_apply_of_status_through_the_subresource(kubectl: Kubectl, namespace: str) -> None:
    # A LoadBalancer Service: no controller writes its status on a control plane without a cloud provider
    # (a Deployment's is rewritten by kube-controller-manager's at once)
    kubectl("-n", namespace, "create", "service", "loadbalancer", "web", "--tcp=80:8080")
    status = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
              "spec": {"sessionAffinity": "ClientIP"}, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}}
    kubectl("-n", namespace, "apply", "--server-side", "--subresource=status", "--field-manager=fake-controller",
            "-f", "-", input=json.dumps(status))
    obj = json.loads(kubectl("-n", namespace, "get", "service", "web", "-o", "json",
                             "--show-managed-fields").stdout)
    # (kube-apiserver also defaults each ingress's ipMode to VIP; the stand-in does not: docs/localcluster-wire.md)
    ingress = [i["ip"] for i in obj["status"]["loadBalancer"]["ingress"]]
    assert (obj["spec"]["sessionAffinity"], ingress) == ("None", ["10.0.0.9"])
    entry = next(e for e in obj["metadata"]["managedFields"] if e["manager"] == "fake-controller")
    assert (entry["operation"], entry["subresource"], set(entry["fieldsV1"])) == ("Apply", "status", {"f:status"})


def test_kubectl_set_and_rollout_commands_patch_containers_by_name(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", input=deployment_yaml("app:1", {"A": "1", "B": "2"}))
    kubectl("-n", namespace, "set", "image", "deployment/web", "app=app:2")
    kubectl("-n", namespace, "set", "env", "deployment/web", "C=3", "A-")
    kubectl("-n", namespace, "set", "resources", "deployment/web", "--limits=nvidia.com/gpu=2")
    kubectl("-n", namespace, "rollout", "restart", "deployment/web")
    template = get(kubectl, namespace, "deployment", "web")["spec"]["template"]
    container = template["spec"]["containers"][0]
    assert container["image"] == "app:2"
    assert [e["name"] for e in container["env"]] == ["B", "C"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]


@pytest.mark.parametrize("server_side", [False, True], ids=["client side apply", "server side apply"])
def test_kubectl_diff_shows_what_apply_would_change_without_changing_it(kubectl: Kubectl, namespace: str,
                                                                       server_side: bool) -> None:
    mode = ["--server-side"] if server_side else []
    kubectl("-n", namespace, "apply", *mode, "-f", "-", input=deployment_yaml("app:1", {"A": "1"}))
    # no difference once kube-controller-manager's Deployment controller (on a real control plane) has
    # written its first status: a diff read while it writes shows its write
    wait_until(lambda: kubectl("-n", namespace, "diff", *mode, "-f", "-", input=deployment_yaml("app:1", {"A": "1"}),
                               check=False).returncode == 0, timeout=30)
    changed = kubectl("-n", namespace, "diff", *mode, "-f", "-", input=deployment_yaml("app:2", {"A": "1"}),
                      check=False)
    assert changed.returncode == 1, changed.stderr
    assert "-        image: app:1" in changed.stdout and "+        image: app:2" in changed.stdout
    assert get(kubectl, namespace, "deployment", "web")["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "app:1"


def test_kubectl_apply_switching_a_deployment_to_recreate_clears_rolling_update(kubectl: Kubectl,
                                                                               namespace: str) -> None:
    rolling = deployment_yaml("app:1", {"A": "1"}).replace(
        "  replicas: 1\n", "  replicas: 1\n  strategy:\n    type: RollingUpdate\n    rollingUpdate: {maxSurge: 2}\n")
    kubectl("-n", namespace, "apply", "-f", "-", input=rolling)
    recreate = deployment_yaml("app:1", {"A": "1"}).replace("  replicas: 1\n",
                                                            "  replicas: 1\n  strategy:\n    type: Recreate\n")
    kubectl("-n", namespace, "apply", "-f", "-", input=recreate)
    assert get(kubectl, namespace, "deployment", "web")["spec"]["strategy"] == {"type": "Recreate"}


def test_moving_from_client_side_to_server_side_apply_keeps_ownership(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", input=CM.format(a="1"))
    kubectl("-n", namespace, "apply", "--server-side", "-f", "-", input=CM.format(a="2"))
    obj = json.loads(kubectl("-n", namespace, "get", "configmap", "cm", "-o", "json", "--show-managed-fields").stdout)
    assert obj["data"] == {"a": "2"}
    owners = {(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in owners


def test_the_python_client_patches_strategically_and_applies_server_side(kube_api: Any, namespace: str) -> None:
    from kubernetes import client, dynamic

    apps = client.AppsV1Api(kube_api)
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}]}}}}
    apps.create_namespaced_deployment(namespace, body)
    apps.patch_namespaced_deployment("web", namespace, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "B", "value": "2"}]}]}}}})  # a dict: strategic merge
    env = apps.read_namespaced_deployment("web", namespace).spec.template.spec.containers[0].env
    assert [(e.name, e.value) for e in env] == [("B", "2"), ("A", "1")]  # new items first, as the apiserver orders
    deployments = dynamic.DynamicClient(kube_api).resources.get(api_version="apps/v1", kind="Deployment")
    applied = {**body, "metadata": {"name": "web", "namespace": namespace, "labels": {"owner": "python"}}}
    result = deployments.server_side_apply(body=applied, namespace=namespace, field_manager="python-apply",
                                           force_conflicts=True)
    stored = result.to_dict()
    assert stored["metadata"]["labels"] == {"owner": "python"}
    assert "python-apply" in {entry["manager"] for entry in stored["metadata"]["managedFields"]}
