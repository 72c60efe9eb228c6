"""Every create and update goes through one admit-and-store pipeline, whichever verb sent it.

Through the real kubectl: an AppWrapper with a field its CRD does not declare is stored pruned
by create, apply (client-side, new and existing), replace and patch, refused by strict field
validation, and refused by server-side apply whatever the validation mode (kube-apiserver types
an apply patch against the schema: "field not declared in schema"). And every verb runs the
same stages: defaults before the webhooks, mutating webhooks whose undeclared additions are
pruned, the schema's validation, validating webhooks that see the mutated object.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.localcluster.webhook_stub import Received, WebhookStub
from tests.localcluster_fixtures import repo_root

Kubectl = Callable[..., subprocess.CompletedProcess]

APPWRAPPER_CRD = repo_root() / "manifests" / "crds" / "batchgate" / "workload.codeflare.dev_appwrappers.yaml"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def appwrapper(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "metadata": {"name": name},
            "spec": {"components": [{"template": POD}], **extra}}


@pytest.fixture(scope="module")
def appwrappers(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(APPWRAPPER_CRD))
    kubectl("wait", "--for=condition=established", "crd/appwrappers.workload.codeflare.dev", "--timeout=10s")


@dataclass(frozen=True)
class Write:
    """How a user sends an AppWrapper that has `spec.bogusField`, and whether one exists first."""

    args: tuple[str, ...]
    existing: bool = False
    body: bool = True  # the manifest goes on stdin; otherwise the args carry a patch


UNKNOWN_FIELD_WRITES = [
    pytest.param(Write(("create", "--validate=false", "-f", "-")), id="kubectl create"),
    pytest.param(Write(("apply", "--validate=false", "-f", "-")), id="kubectl apply of a new object"),
    pytest.param(Write(("apply", "--validate=false", "-f", "-"), existing=True), id="kubectl apply of an existing object"),
    pytest.param(Write(("replace", "--validate=false", "-f", "-"), existing=True), id="kubectl replace"),
    pytest.param(Write(("patch", "--type=merge", "-p", '{"spec":{"bogusField":1}}'), existing=True, body=False),
                 id="kubectl patch with a merge patch"),
    pytest.param(Write(("patch", "--type=json", "-p", '[{"op":"add","path":"/spec/bogusField","value":1}]'),
                       existing=True, body=False), id="kubectl patch with a JSON patch"),
]


def send(kubectl: Kubectl, namespace: str, name: str, write: Write, check: bool = True) -> subprocess.CompletedProcess:
    if write.existing:
        kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(appwrapper(name)))
    if write.body:
        return kubectl("-n", namespace, *write.args, input=json.dumps(appwrapper(name, bogusField=1)), check=check)
    return kubectl("-n", namespace, write.args[0], "appwrapper", name, *write.args[1:], check=check)


def stored_spec(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any]:
    return json.loads(kubectl("-n", namespace, "get", "appwrapper", name, "-o", "json").stdout)["spec"]


@pytest.mark.parametrize("write", UNKNOWN_FIELD_WRITES)
def test_an_undeclared_appwrapper_field_is_pruned_from_what_is_stored(kubectl: Kubectl, namespace: str,
                                                                      appwrappers: None, write: Write) -> None:
    send(kubectl, namespace, "aw", write)
    spec = stored_spec(kubectl, namespace, "aw")
    assert "bogusField" not in spec
    assert spec["components"][0]["template"] == POD


@pytest.mark.parametrize("write", [
    pytest.param(Write(("create", "-f", "-")), id="kubectl create"),
    pytest.param(Write(("apply", "-f", "-")), id="kubectl apply of a new object"),
    pytest.param(Write(("apply", "-f", "-"), existing=True), id="kubectl apply of an existing object"),
    pytest.param(Write(("replace", "-f", "-"), existing=True), id="kubectl replace"),
])
def test_strict_field_validation_refuses_the_undeclared_field_on_every_verb(kubectl: Kubectl, namespace: str,
                                                                            appwrappers: None, write: Write) -> None:
    refused = send(kubectl, namespace, "aw", write, check=False)
    assert refused.returncode == 1 and 'unknown field "spec.bogusField"' in refused.stderr


@pytest.mark.parametrize("validate", ["--validate=false", "--validate=strict"])
@pytest.mark.parametrize("existing", [False, True], ids=["of a new object", "of an existing object"])
def test_server_side_apply_refuses_an_undeclared_field_as_kube_apiserver_types_the_patch(
        kubectl: Kubectl, namespace: str, appwrappers: None, existing: bool, validate: str) -> None:
    write = Write(("apply", "--server-side", validate, "-f", "-"), existing=existing)
    refused = send(kubectl, namespace, "aw", write, check=False)
    assert refused.returncode == 1
    assert (f"failed to create typed patch object ({namespace}/aw; workload.codeflare.dev/v1beta2, Kind=AppWrapper): "
            ".spec.bogusField: field not declared in schema") in refused.stderr
    found = kubectl("-n", namespace, "get", "appwrapper", "aw", "-o", "json", check=False)
    assert found.returncode == (0 if existing else 1)
    if existing:
        assert "bogusField" not in json.loads(found.stdout)["spec"]


# The same stages for every verb, seen from the webhooks and the store.

GIZMO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.pipeline.example.com"},
    "spec": {"group": "pipeline.example.com", "scope": "Namespaced",
             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "size": {"type": "integer", "minimum": 1, "maximum": 10},
                     "color": {"type": "string", "default": "red"},
                     "stamp": {"type": "string"}}}}}}}]},
}


def gizmo(name: str, size: int) -> str:
    return json.dumps({"apiVersion": "pipeline.example.com/v1", "kind": "Gizmo", "metadata": {"name": name},
                       "spec": {"size": size}})


@dataclass(frozen=True)
class Verb:
    """A kubectl command that writes a Gizmo of some size, the operation admission sees, and
    whether the Gizmo exists first."""

    operation: str
    existing: bool
    run: Callable[[Kubectl, str, str, int], subprocess.CompletedProcess]


def _with_body(*args: str) -> Callable[[Kubectl, str, str, int], subprocess.CompletedProcess]:
    return lambda kubectl, ns, name, size: kubectl("-n", ns, *args, "-f", "-", input=gizmo(name, size), check=False)


def _patch(kind: str, patch: Callable[[int], Any]) -> Callable[[Kubectl, str, str, int], subprocess.CompletedProcess]:
    return lambda kubectl, ns, name, size: kubectl("-n", ns, "patch", "gizmo", name, f"--type={kind}",
                                                  "-p", json.dumps(patch(size)), check=False)


VERBS = [
    pytest.param(Verb("CREATE", False, _with_body("create")), id="create"),
    pytest.param(Verb("UPDATE", True, _with_body("replace")), id="update (replace)"),
    pytest.param(Verb("UPDATE", True, _patch("merge", lambda size: {"spec": {"size": size}})), id="merge patch"),
    pytest.param(Verb("UPDATE", True, _patch("json", lambda size: [{"op": "replace", "path": "/spec/size",
                                                                      "value": size}])), id="JSON patch"),
    pytest.param(Verb("UPDATE", True, _with_body("apply")), id="client-side apply"),
    pytest.param(Verb("CREATE", False, _with_body("apply", "--server-side")), id="server-side apply that creates"),
    pytest.param(Verb("UPDATE", True, _with_body("apply", "--server-side", "--force-conflicts")),
                 id="server-side apply that updates"),
]


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookStub]:
    with WebhookStub(tmp_path_factory.mktemp("pipeline-stub"), service="pipeline-stub") as server:
        yield server


@pytest.fixture
def policed(kubectl: Kubectl, stub: WebhookStub) -> Iterator[str]:
    """A fresh namespace whose Gizmos a mutating (/stamp) and a validating (/allow) webhook judge."""
    kubectl("apply", "-f", "-", input=json.dumps(GIZMO_CRD))
    kubectl("wait", "--for=condition=established", "crd/gizmos.pipeline.example.com", "--timeout=10s")
    kubectl("apply", "-f", "-", input=stub.routing())
    namespace = f"g-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", namespace)
    kubectl("label", "namespace", namespace, f"gizmos={namespace}")
    configurations = []
    for kind, path in (("MutatingWebhookConfiguration", "/stamp"), ("ValidatingWebhookConfiguration", "/allow")):
        name = f"{namespace}-{path.strip('/')}"
        kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": f"{path.strip('/')}.pipeline.example.com", "sideEffects": "None",
                          "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
                          "namespaceSelector": {"matchLabels": {"gizmos": namespace}},
                          "rules": [{"apiGroups": ["pipeline.example.com"], "apiVersions": ["v1"],
                                     "operations": ["CREATE", "UPDATE"], "resources": ["gizmos"]}],
                          "clientConfig": {"caBundle": stub.files.ca_bundle,
                                           "service": {"name": stub.service, "namespace": stub.namespace,
                                                       "path": path}}}]}))
        configurations.append(f"{kind.lower()}s/{name}")
    yield namespace
    for ref in configurations:
        kubectl("delete", ref, "--ignore-not-found")


def reviews(stub: WebhookStub, since: int, namespace: str) -> dict[str, Received]:
    """The last review each webhook path received for `namespace` after the first `since` ones."""
    return {r.path: r for r in stub.received[since:] if r.review["request"]["namespace"] == namespace}


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_defaults_then_mutates_prunes_and_validates_before_it_stores(
        kubectl: Kubectl, stub: WebhookStub, policed: str, verb: Verb) -> None:
    if verb.existing:
        kubectl("-n", policed, "create", "-f", "-", input=gizmo("g", 1))
    since = len(stub.received)
    verb.run(kubectl, policed, "g", 3).check_returncode()
    seen = reviews(stub, since, policed)
    mutating, validating = seen["/stamp"].review["request"], seen["/allow"].review["request"]
    assert (mutating["operation"], validating["operation"]) == (verb.operation, verb.operation)
    assert mutating["object"]["spec"]["color"] == "red"  # defaulted before any webhook
    assert validating["object"]["spec"] == {"size": 3, "color": "red", "stamp": verb.operation}  # smuggled: pruned
    stored = json.loads(kubectl("-n", policed, "get", "gizmo", "g", "-o", "json").stdout)
    assert stored["spec"] == {"size": 3, "color": "red", "stamp": verb.operation}


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_is_refused_by_the_schema_before_the_validating_webhooks(
        kubectl: Kubectl, stub: WebhookStub, policed: str, verb: Verb) -> None:
    if verb.existing:
        kubectl("-n", policed, "create", "-f", "-", input=gizmo("g", 1))
    since = len(stub.received)
    refused = verb.run(kubectl, policed, "g", 11)
    assert refused.returncode == 1
    assert "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10" in refused.stderr
    seen = reviews(stub, since, policed)
    assert "/stamp" in seen and "/allow" not in seen
    found = kubectl("-n", policed, "get", "gizmo", "g", "-o", "json", check=False)
    assert found.returncode == (0 if verb.existing else 1)
    if verb.existing:
        assert json.loads(found.stdout)["spec"]["size"] == 1

