"""Discovery, OpenAPI and CRD versions as clients read them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator

import pytest
import requests

from localcluster.runner import LocalCluster
from tests.localcluster.test_client_api import WIDGET_CRD

Kubectl = Callable[..., subprocess.CompletedProcess]
AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")

GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Cluster",
             "names": {"plural": "gadgets", "kind": "Gadget"},
             "versions": [
                 {"name": "v1beta1", "served": True, "storage": False,
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                 {"name": "v1", "served": True, "storage": True,
                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                      "spec": {"type": "object", "properties": {"level": {"type": "integer"}}}}}}}]},
}


@pytest.fixture(scope="module")
def http(local_cluster: LocalCluster) -> Iterator[requests.Session]:
    session = requests.Session()
    session.trust_env = False
    session.verify = str(local_cluster.ca_file)
    session.headers["Authorization"] = f"Bearer {local_cluster.token('admin')}"
    yield session
    session.close()


@pytest.fixture(scope="module")
def crds(kubectl: Kubectl) -> None:
    for crd in (WIDGET_CRD, GADGET_CRD):
        kubectl("apply", "-f", "-", input=json.dumps(crd))


def test_aggregated_discovery_lists_resources_with_short_names_verbs_and_categories(
        http: requests.Session, local_cluster: LocalCluster, crds: None) -> None:
    reply = http.get(local_cluster.url + "/apis", headers={"Accept": AGGREGATED}, timeout=10)
    assert reply.headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    groups = {g["metadata"]["name"]: g for g in reply.json()["items"]}
    example = groups["example.com"]["versions"]
    assert [v["version"] for v in example] == ["v1", "v1beta1"]
    widgets = next(r for r in example[0]["resources"] if r["resource"] == "widgets")
    assert widgets["shortNames"] == ["wd"] and widgets["categories"] == ["all"] and "watch" in widgets["verbs"]
    assert widgets["subresources"][0]["subresource"] == "status"
    core = http.get(local_cluster.url + "/api", headers={"Accept": AGGREGATED}, timeout=10).json()
    pods = next(r for r in core["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert {"status", "binding"} <= {s["subresource"] for s in pods["subresources"]}


def test_legacy_discovery_prefers_the_highest_crd_version(http: requests.Session, local_cluster: LocalCluster,
                                                        crds: None) -> None:
    groups = {g["name"]: g for g in http.get(local_cluster.url + "/apis", timeout=10).json()["groups"]}
    assert groups["example.com"]["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}
    resources = http.get(local_cluster.url + "/apis/example.com/v1beta1", timeout=10).json()["resources"]
    assert [(r["name"], r["namespaced"]) for r in resources] == [("gadgets", False)]


def test_openapi_v3_names_every_group_version_with_patchable_gvks(http: requests.Session, local_cluster: LocalCluster,
                                                                  crds: None) -> None:
    index = http.get(local_cluster.url + "/openapi/v3", timeout=10).json()["paths"]
    assert {"api/v1", "apis/batch/v1", "apis/example.com/v1"} <= set(index)
    document = http.get(local_cluster.url + index["apis/example.com/v1"]["serverRelativeURL"], timeout=10).json()
    patch = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def test_one_object_is_served_through_every_version_of_its_crd(kubectl: Kubectl, crds: None) -> None:
    kubectl("apply", "-f", "-", input="apiVersion: example.com/v1beta1\nkind: Gadget\nmetadata:\n  name: g1\n"
                                      "spec:\n  level: 3\n")
    as_v1 = json.loads(kubectl("get", "gadgets.v1.example.com", "g1", "-o", "json").stdout)
    as_beta = json.loads(kubectl("get", "gadgets.v1beta1.example.com", "g1", "-o", "json").stdout)
    assert (as_v1["apiVersion"], as_beta["apiVersion"]) == ("example.com/v1", "example.com/v1beta1")
    assert as_v1["spec"] == as_beta["spec"] == {"level": 3}


def test_strict_field_validation_rejects_unknown_fields_of_custom_resources(kubectl: Kubectl, crds: None) -> None:
    unknown = "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g2\nspec:\n  level: 1\n  colour: red\n"
    refused = kubectl("create", "-f", "-", input=unknown, check=False)
    assert refused.returncode == 1 and 'unknown field "spec.colour"' in refused.stderr
    kubectl("create", "--validate=false", "-f", "-", input=unknown)
    assert json.loads(kubectl("get", "gadget", "g2", "-o", "json").stdout)["spec"] == {"level": 1}
