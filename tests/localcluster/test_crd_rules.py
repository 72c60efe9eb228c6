"""CRD validation rules (`x-kubernetes-validations`) of the shipped CRDs, evaluated as kube-apiserver does.

Reference: apiextensions-apiserver pkg/apiserver/schema/cel/validation.go (a false rule is
`field.Invalid(path, <schema type>, message)`; transition rules run only where the old object
correlates; validation ratcheting skips unchanged values) and its validation_test.go; the rules
themselves and the objects they refuse are Kueue v0.10's (apis/kueue/v1beta1 markers, exercised by
test/integration/webhook/core/clusterqueue_test.go, localqueue_test.go and workload_test.go).
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import crd_rules, crd_schema
from localcluster.resources import ResourceType

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds" / "batchgate"


def served(file: str) -> ResourceType:
    crd = yaml.safe_load((CRDS / file).read_text())
    return next(t for t in crd_schema.resource_types(crd) if t.version == "v1beta1")


CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS = (served("kueue.x-k8s.io_clusterqueues.yaml"),
                                           served("kueue.x-k8s.io_localqueues.yaml"),
                                           served("kueue.x-k8s.io_workloads.yaml"))


def queue(**spec: Any) -> dict[str, Any]:
    cpu = {"name": "cpu", "nominalQuota": "4", **spec.pop("limits", {})}
    groups = spec.pop("groups", [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [cpu]}]}])
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
            "spec": {"resourceGroups": groups, **spec}}


def workload(pods: int) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": pods, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}


def local_queue(cluster_queue: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": cluster_queue}}


def errors(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    obj = copy.deepcopy(obj)
    crd_schema.decode_custom(rt, obj)
    if old is not None:
        old = copy.deepcopy(old)
        crd_schema.decode_custom(rt, old)
    return [str(e) for e in crd_schema.validate_custom(rt, obj, old)]


TWO_RESOURCES = [{"coveredResources": ["cpu", "memory"],
                  "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]

CASES = [
    pytest.param(CLUSTER_QUEUES, queue(), None, [], id="a plain cluster queue passes every rule"),
    pytest.param(CLUSTER_QUEUES, queue(limits={"borrowingLimit": "2"}), None,
                 ['spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty'],
                 id="a borrowing limit without a cohort is refused"),
    pytest.param(CLUSTER_QUEUES, queue(cohort="", limits={"borrowingLimit": "2"}), None,
                 ['spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty'],
                 id="a borrowing limit with an empty cohort is refused"),
    pytest.param(CLUSTER_QUEUES, queue(cohort="all", limits={"borrowingLimit": "2"}), None, [],
                 id="a borrowing limit within a cohort is allowed"),
    pytest.param(CLUSTER_QUEUES, queue(preemption={"reclaimWithinCohort": "Never",
                                                   "borrowWithinCohort": {"policy": "LowerPriority"}}), None,
                 ['spec: Invalid value: "object": reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never '
                  "is not allowed"], id="borrowing preemption without reclaiming is refused"),
    pytest.param(CLUSTER_QUEUES, queue(preemption={"reclaimWithinCohort": "Any",
                                                   "borrowWithinCohort": {"policy": "LowerPriority"}}), None, [],
                 id="borrowing preemption with reclaiming is allowed"),
    pytest.param(CLUSTER_QUEUES, queue(groups=TWO_RESOURCES), None,
                 ['spec.resourceGroups[0]: Invalid value: "object": flavors must have the same number of resources '
                  "as the coveredResources"], id="a flavor missing a covered resource is refused at its group"),
    pytest.param(LOCAL_QUEUES, local_queue("other"), None, [],
                 id="a transition rule is not evaluated on create"),
    pytest.param(LOCAL_QUEUES, local_queue("other"), local_queue("cq"),
                 ['spec.clusterQueue: Invalid value: "string": field is immutable'],
                 id="a local queue cannot move to another cluster queue"),
    pytest.param(LOCAL_QUEUES, local_queue("cq"), local_queue("cq"), [],
                 id="an unchanged cluster queue name passes the transition rule"),
    pytest.param(WORKLOADS, workload(2), workload(1),
                 ['spec.podSets: Invalid value: "array": field is immutable'],
                 id="a workload's pod sets are immutable"),
    pytest.param(CLUSTER_QUEUES, queue(limits={"borrowingLimit": "2"}, stopPolicy="Hold"),
                 queue(limits={"borrowingLimit": "2"}), ['spec: Invalid value: "object": borrowingLimit must be nil '
                                                         "when cohort is empty"],
                 id="a changed spec is judged again even when the failing part did not change"),
    pytest.param(CLUSTER_QUEUES, queue(limits={"borrowingLimit": "2"}), queue(limits={"borrowingLimit": "2"}), [],
                 id="an unchanged invalid spec is ratcheted on update"),
]


@pytest.mark.parametrize(("rt", "obj", "old", "expected"), CASES)
def test_the_shipped_crds_validation_rules(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None,
                                           expected: list[str]) -> None:
    assert errors(rt, obj, old) == expected


def test_rules_are_skipped_when_the_object_has_a_type_error() -> None:
    bad = queue(cohort=3, limits={"borrowingLimit": "2"})
    assert errors(CLUSTER_QUEUES, bad) == ['spec.cohort: Invalid value: "integer": spec.cohort in body must be of '
                                           'type string: "integer"']


RULE_SCHEMAS = [
    pytest.param({"rule": "self.replicas >= 0"}, {"replicas": -1}, ['spec: Invalid value: "object": failed rule: '
                                                                     "self.replicas >= 0"],
                 id="a rule without a message reports the rule"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "fieldPath": ".replicas"}, {"replicas": -1},
                 ['spec.replicas: Invalid value: "object": no'], id="fieldPath moves the error to the field"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "reason": "FieldValueForbidden"}, {"replicas": -1},
                 ["spec: Forbidden: no"], id="reason chooses the error type"),
    pytest.param({"rule": "self.missing == 1", "message": "no"}, {"replicas": 1},
                 None, id="a runtime error is a failure of the rule"),
    pytest.param({"rule": "nosuch(self)", "message": "no"}, {"replicas": 1},
                 None, id="an undeclared function is a failure of the rule"),
    pytest.param({"rule": "self.ratio == 1.0"}, {"ratio": 1}, [], id="a number field written as an integer is a double"),
]


@pytest.mark.parametrize(("rule", "spec", "expected"), RULE_SCHEMAS)
def test_rule_error_forms(rule: dict[str, Any], spec: dict[str, Any], expected: list[str] | None) -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": [rule],
                                                        "properties": {"replicas": {"type": "integer"},
                                                                       "ratio": {"type": "number"}}}}}
    found = [str(e) for e in crd_rules.rule_errors(schema, {"spec": spec})]
    if expected is None:
        assert len(found) == 1 and found[0].startswith('spec: Invalid value: "object": no: ')
        assert "activation" not in found[0] and len(found[0]) < 200
    else:
        assert found == expected


def test_a_crd_whose_rule_does_not_compile_is_refused() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object",
                                                        "x-kubernetes-validations": [{"rule": "self.a ==="}]}}}
    found = crd_rules.rule_compile_errors(schema, "spec.versions[0].schema.openAPIV3Schema")
    assert [(e.field, e.value) for e in found] == [
        ("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule", "self.a ===")]
    assert "compilation failed" in found[0].detail


# --- through the real kubectl --------------------------------------------------------------------


@pytest.fixture(scope="module")
def kueue_crds(kubectl: Any) -> None:
    for file in ("kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml"):
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS / file))


def test_kubectl_create_of_an_invalid_cluster_queue_is_refused_with_the_rules_message(kubectl: Any,
                                                                                       kueue_crds: None) -> None:
    bad = queue(limits={"borrowingLimit": "2"})
    bad["metadata"]["name"] = name = f"cq-{uuid.uuid4().hex[:8]}"
    refused = kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (f'The ClusterQueue "{name}" is invalid: spec: Invalid value: "object": '
                                      "borrowingLimit must be nil when cohort is empty")
    assert kubectl("get", "clusterqueue", name, check=False).returncode != 0
    bad["spec"]["cohort"] = "all"
    kubectl("create", "-f", "-", input=json.dumps(bad))


def test_kubectl_cannot_move_a_local_queue_to_another_cluster_queue(kubectl: Any, kueue_crds: None,
                                                                    namespace: str) -> None:
    created = local_queue("cq")
    created["metadata"]["namespace"] = namespace
    kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(created))
    refused = kubectl("-n", namespace, "patch", "localqueue", "lq", "--type=merge",
                      "-p", '{"spec":{"clusterQueue":"other"}}', check=False)
    assert refused.stderr.strip() == ('The LocalQueue "lq" is invalid: spec.clusterQueue: Invalid value: "string": '
                                      "field is immutable")
    kubectl("-n", namespace, "label", "localqueue", "lq", "team=a")
