"""The CRDs in manifests/crds/: they parse, their schemas are structural, they carry the names,
printer columns and subresources docs/architecture.md ("API compatibility") promises, and the demo's samples and real
upstream manifests (shared/corpus, skipped where absent) validate against them.

"Structural" follows apiextensions.k8s.io/v1: every node has a type unless it is int-or-string
or preserves unknown fields, `anyOf` appears only for int-or-string, list-map keys are required
(or defaulted), embedded resources are objects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.builders import samples
from tests.upstream_corpus import corpus_manifests, corpus_rows

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "manifests" / "crds"


# plural.group -> (kind, version, scope, shortNames, printer column names, status subresource)
EXPECTED = {
    "clusterqueues.kueue.x-k8s.io": (
        "ClusterQueue", "v1beta1", "Cluster", ["cq"],
        ["Cohort", "Strategy", "Pending Workloads", "Admitted Workloads"], True,
    ),
    "localqueues.kueue.x-k8s.io": (
        "LocalQueue", "v1beta1", "Namespaced", ["queue", "queues", "lq"],
        ["ClusterQueue", "Pending Workloads", "Admitted Workloads"], True,
    ),
    "resourceflavors.kueue.x-k8s.io": (
        "ResourceFlavor", "v1beta1", "Cluster", ["flavor", "flavors", "rf"], [], False,
    ),
    "workloads.kueue.x-k8s.io": (
        "Workload", "v1beta1", "Namespaced", ["wl"],
        ["Queue", "Reserved in", "Admitted", "Finished", "Age"], True,
    ),
    "workloadpriorityclasses.kueue.x-k8s.io": (
        "WorkloadPriorityClass", "v1beta1", "Cluster", [], ["Value"], False,
    ),
    "appwrappers.workload.codeflare.dev": (
        "AppWrapper", "v1beta2", "Namespaced", ["aw"],
        ["Status", "Quota Reserved", "Resources Deployed", "Unhealthy", "Age"], True,
    ),
    "podgroups.scheduling.x-k8s.io": (
        "PodGroup", "v1alpha1", "Namespaced", ["pg", "pgs"],
        ["Phase", "MinMember", "Running", "Succeeded", "Failed", "Age"], True,
    ),
    "pytorchjobs.kubeflow.org": ("PyTorchJob", "v1", "Namespaced", [], ["State", "Age"], True),
    "rayjobs.ray.io": (
        "RayJob", "v1", "Namespaced", [],
        ["job status", "deployment status", "ray cluster name", "start time", "end time", "age"], True,
    ),
    "rayclusters.ray.io": (
        "RayCluster", "v1", "Namespaced", [],
        ["desired workers", "available workers", "cpus", "memory", "gpus", "status", "age"], True,
    ),
}

# Fields our code reads: they must be declared, not only preserved (kind -> dotted paths).
DECLARED_FIELDS = {
    "AppWrapper": ["spec.suspend", "spec.components.template", "spec.components.podSets.path",
                   "spec.components.podSetInfos.nodeSelector", "status.phase", "status.componentStatus"],
    "Workload": ["spec.podSets.count", "spec.podSets.template", "spec.queueName", "spec.priority",
                 "status.admission.podSetAssignments.flavors", "status.conditions"],
    "ClusterQueue": ["spec.resourceGroups.flavors.resources.nominalQuota", "spec.preemption.withinClusterQueue",
                     "spec.stopPolicy", "status.flavorsUsage.resources.borrowed"],
    "PyTorchJob": ["spec.runPolicy.suspend", "spec.pytorchReplicaSpecs.Master.replicas",
                   "spec.pytorchReplicaSpecs.Worker.template"],
    "RayJob": ["spec.suspend", "spec.rayClusterSpec.workerGroupSpecs.replicas", "status.jobDeploymentStatus"],
    "RayCluster": ["spec.suspend", "spec.headGroupSpec.template", "spec.workerGroupSpecs.numOfHosts"],
    "PodGroup": ["spec.minMember", "status.phase"],
}


def load_crds() -> dict[str, dict[str, Any]]:
    crds = {}
    for path in sorted(CRD_DIR.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        doc = yaml.safe_load(path.read_text())
        crds[doc["metadata"]["name"]] = doc
    return crds


CRDS = load_crds()


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def structural_errors(node: dict[str, Any], path: str = "") -> Iterator[str]:
    """Yield a message per violation of the structural-schema rules we rely on."""
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if "type" not in node and not (int_or_string or preserve):
        yield f"{path or '<root>'}: no type"
    if "anyOf" in node and not int_or_string:
        yield f"{path}: anyOf outside int-or-string"
    if int_or_string and "type" in node:
        yield f"{path}: int-or-string must not name a type"
    if "properties" in node and "additionalProperties" in node:
        yield f"{path}: both properties and additionalProperties"
    if node.get("x-kubernetes-embedded-resource") and not (node.get("type") == "object" and (preserve or "properties" in node)):
        yield f"{path}: embedded resource must be an object with properties or preserved fields"
    if node.get("type") == "array":
        items = node.get("items")
        if not isinstance(items, dict):
            yield f"{path}: array without items"
            return
        for key in node.get("x-kubernetes-list-map-keys", []):
            key_schema = items.get("properties", {}).get(key, {})
            if key not in items.get("required", []) and "default" not in key_schema:
                yield f"{path}: list-map key {key} is neither required nor defaulted"
        yield from structural_errors(items, f"{path}[]")
    for name, child in node.get("properties", {}).items():
        yield from structural_errors(child, f"{path}.{name}" if path else name)
    if isinstance(node.get("additionalProperties"), dict):
        yield from structural_errors(node["additionalProperties"], f"{path}{{}}")


def validation_errors(node: dict[str, Any], value: Any, path: str = "") -> Iterator[str]:
    """A small OpenAPI v3 validator: types, enums, required fields, pruning of unknown fields."""
    if node.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            yield f"{path}: want int or string, got {value!r}"
        return
    kind = node.get("type")
    python_types = {"object": dict, "array": list, "string": str, "integer": int, "boolean": bool, "number": (int, float)}
    if kind and not isinstance(value, python_types[kind]) or (kind == "integer" and isinstance(value, bool)):
        yield f"{path}: want {kind}, got {type(value).__name__}"
        return
    if "enum" in node and value not in node["enum"]:
        yield f"{path}: {value!r} not in {node['enum']}"
    if isinstance(value, dict):
        for req in node.get("required", []):
            if req not in value:
                yield f"{path}.{req}: required"
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for key, child in value.items():
            if key in props:
                yield from validation_errors(props[key], child, f"{path}.{key}")
            elif isinstance(extra, dict):
                yield from validation_errors(extra, child, f"{path}.{key}")
            elif not node.get("x-kubernetes-preserve-unknown-fields") and kind == "object" and props:
                yield f"{path}.{key}: unknown field (would be pruned)"
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            yield from validation_errors(node["items"], item, f"{path}[{index}]")


def declared(schema: dict[str, Any], dotted: str) -> bool:
    node = schema
    for part in dotted.split("."):
        while node.get("type") == "array":
            node = node["items"]
        if part not in node.get("properties", {}):
            return False
        node = node["properties"][part]
    return True


def test_every_expected_crd_is_present_and_nothing_else() -> None:
    assert sorted(CRDS) == sorted(EXPECTED)


@pytest.mark.parametrize("part", ["batchgate", "third-party"], ids=lambda p: f"the {p} kustomization lists every CRD file beside it")
def test_kustomization_lists_every_crd_file(part: str) -> None:
    listed = yaml.safe_load((CRD_DIR / part / "kustomization.yaml").read_text())["resources"]
    on_disk = sorted(p.name for p in (CRD_DIR / part).glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(listed) == on_disk
    assert yaml.safe_load((CRD_DIR / "kustomization.yaml").read_text())["resources"] == ["batchgate", "third-party"]


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=lambda n: f"{n} names its kind, scope, short names, columns and status")
def test_crd_names_what_design_section_4_requires(name: str) -> None:
    kind, version, scope, short_names, columns, has_status = EXPECTED[name]
    crd = CRDS[name]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1" and crd["kind"] == "CustomResourceDefinition"
    plural, _, group = name.partition(".")
    spec = crd["spec"]
    assert (spec["group"], spec["names"]["plural"], spec["names"]["kind"], spec["scope"]) == (group, plural, kind, scope)
    assert spec["names"].get("shortNames", []) == short_names
    (only_version,) = spec["versions"]
    assert (only_version["name"], only_version["served"], only_version["storage"]) == (version, True, True)
    assert [c["name"] for c in only_version.get("additionalPrinterColumns", [])] == columns
    assert ("status" in only_version.get("subresources", {})) is has_status


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=lambda n: f"{n} has a structural schema")
def test_schema_is_structural(name: str) -> None:
    schema = schema_of(CRDS[name])
    assert schema.get("type") == "object"
    assert list(structural_errors(schema)) == []


@pytest.mark.parametrize(
    "kind,field",
    [pytest.param(k, f, id=f"{k} declares {f}") for k, fields in DECLARED_FIELDS.items() for f in fields],
)
def test_fields_the_controller_reads_are_declared(kind: str, field: str) -> None:
    (crd,) = [c for c in CRDS.values() if c["spec"]["names"]["kind"] == kind]
    assert declared(schema_of(crd), field)


def sample_objects() -> list[Any]:
    """The demo's samples and upstream's manifests (marked) of a kind these CRDs define."""
    kinds = {c["spec"]["names"]["kind"] for c in CRDS.values()}
    ours = [pytest.param(doc, id=f"demo/samples/{name} validates against its CRD")
            for name, doc in samples() if doc["kind"] in kinds]
    return ours + corpus_rows(((f"{name}#{index} validates against its CRD", (doc,))
                               for name, index, doc in corpus_manifests() if name.count("/") == 1 and doc["kind"] in kinds), 1)


@pytest.mark.parametrize("obj", sample_objects())
def test_samples_validate_against_the_crds(obj: dict[str, Any]) -> None:
    (crd,) = [c for c in CRDS.values() if c["spec"]["names"]["kind"] == obj["kind"]]
    assert list(validation_errors(schema_of(crd), obj)) == []


@pytest.mark.parametrize(
    "kind,obj,expected",
    [
        pytest.param("ClusterQueue", {"spec": {"queueingStrategy": "Fastest"}},
                     ".spec.queueingStrategy: 'Fastest' not in ['StrictFIFO', 'BestEffortFIFO']",
                     id="an unknown queueing strategy is rejected"),
        pytest.param("Workload", {"spec": {"podSets": [{"name": "main", "count": "two", "template": {}}]}},
                     ".spec.podSets[0].count: want integer, got str", id="a podSet count must be an integer"),
        pytest.param("AppWrapper", {"spec": {"components": [{"podSets": []}]}},
                     ".spec.components[0].template: required", id="an AppWrapper component needs a template"),
        pytest.param("ClusterQueue", {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "f", "resources": [{"name": "cpu", "nominalQuota": True}]}]}]}},
                     ".spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: want int or string, got True",
                     id="a quota must be a quantity"),
    ],
)
def test_the_validator_catches_bad_objects(kind: str, obj: dict[str, Any], expected: str) -> None:
    (crd,) = [c for c in CRDS.values() if c["spec"]["names"]["kind"] == kind]
    assert expected in list(validation_errors(schema_of(crd), obj))
