"""CRD validation rules (`x-kubernetes-validations`) of the shipped CRDs, evaluated as kube-apiserver does.

Reference: apiextensions-apiserver pkg/apiserver/schema/cel/validation.go (a false rule is
`field.Invalid(path, <schema type>, message)`; transition rules run only where the old object
correlates; validation ratcheting skips unchanged values) and its validation_test.go, and
pkg/registry/customresource/strategy.go (hasBlockingErr). The rules are the shipped CRDs'
(manifests/crds/batchgate), taken from Kueue v0.10.2's config/components/crd/bases/
kueue.x-k8s.io_clusterqueues.yaml (borrowingLimit needs a cohort; flavors cover every resource;
reclaimWithinCohort Never forbids borrowWithinCohort) and kueue.x-k8s.io_localqueues.yaml
(clusterQueue immutable); the Workload's `podSets` rule stands for the immutability Kueue's webhook
enforces (pkg/webhooks/workload_webhook.go ValidateWorkloadUpdate), exercised upstream by
test/integration/webhook/core/clusterqueue_test.go, localqueue_test.go and workload_test.go.
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


BLOCKED = '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; ' \
          "correct the existing errors to complete validation"


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(queue(cohort=3, limits={"borrowingLimit": "2"}),
                 ['spec.cohort: Invalid value: "integer": spec.cohort in body must be of type string: "integer"',
                  BLOCKED], id="a type error stops the rules with kube-apiserver's note"),
    pytest.param(queue(queueingStrategy="Fastest", limits={"borrowingLimit": "2"}),
                 ['spec.queueingStrategy: Unsupported value: "Fastest": supported values: "StrictFIFO", '
                  '"BestEffortFIFO"', BLOCKED], id="a value outside its enum stops the rules"),
    pytest.param(queue(cohort="x" * 254, limits={"borrowingLimit": "2"}),
                 ["spec.cohort: Too long: ", BLOCKED], id="a value too long stops the rules"),
])
def test_a_blocking_schema_error_stops_the_rules(obj: dict[str, Any], expected: list[str]) -> None:
    """apiextensions-apiserver pkg/registry/customresource/strategy.go hasBlockingErr."""
    found = errors(CLUSTER_QUEUES, obj)
    assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected)), found


def test_a_non_blocking_schema_error_lets_the_rules_run() -> None:
    bad = workload(2)
    bad["spec"]["podSets"][0]["minCount"] = 0
    assert errors(WORKLOADS, bad, workload(1)) == [
        'spec.podSets[0].minCount: Invalid value: 0: spec.podSets[0].minCount in body should be greater than or '
        "equal to 1", 'spec.podSets: Invalid value: "array": field is immutable']


def rules_of(rule: dict[str, Any]) -> crd_rules.RuleNode | None:
    return crd_rules.compile_schema({"type": "object", "x-kubernetes-validations": [], "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [rule], "properties": {
            "replicas": {"type": "integer"}, "ratio": {"type": "number"},
            "port": {"x-kubernetes-int-or-string": True}}}}})


# The forms of apiextensions-apiserver pkg/apiserver/schema/cel/validation.go: ruleMessageOrDefault,
# fieldErrorForReason, and the evaluation errors ("<error> evaluating rule: <message or rule>").
RULE_SCHEMAS = [
    pytest.param({"rule": "self.replicas >= 0"}, {"replicas": -1},
                 ['spec: Invalid value: "object": failed rule: self.replicas >= 0'],
                 id="a rule without a message reports the rule"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "fieldPath": ".replicas"}, {"replicas": -1},
                 ['spec.replicas: Invalid value: "object": no'], id="fieldPath moves the error to the field"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "reason": "FieldValueForbidden"}, {"replicas": -1},
                 ["spec: Forbidden: no"], id="reason Forbidden gives a Forbidden error"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "reason": "FieldValueRequired"}, {"replicas": -1},
                 ["spec: Required value: no"], id="reason Required gives a Required error"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "reason": "FieldValueDuplicate"}, {"replicas": -1},
                 ['spec: Duplicate value: "object"'], id="reason Duplicate gives a Duplicate error without message"),
    pytest.param({"rule": "self.missing == 1", "message": "no"}, {"replicas": 1},
                 ['spec: Invalid value: "object": no such key: missing evaluating rule: no'],
                 id="a missing field read is an evaluation error named as cel-go names it"),
    pytest.param({"rule": "self.port > 1"}, {"port": "http"},
                 ['spec: Invalid value: "object": \'no such overload\': call arguments did not match a supported '
                  "operator, function or macro signature for rule: self.port > 1"],
                 id="an int-or-string compared as a number is kube-apiserver's overload error"),
    pytest.param({"rule": "self.replicas.size == 1"}, {"replicas": 3},
                 ['spec: Invalid value: "object": type \'int\' does not support field selection evaluating rule: '
                  "self.replicas.size == 1"], id="a field read on a scalar names its type, not its value"),
    pytest.param({"rule": "self.ratio == 1.0"}, {"ratio": 1}, [], id="a number field written as an integer is a double"),
    pytest.param({"rule": "self.replicas >= 0"}, {"replicas": 0}, [], id="a true rule passes"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "messageExpression": "'got ' + string(self.replicas)"},
                 {"replicas": -1}, ['spec: Invalid value: "object": got -1'],
                 id="messageExpression gives the message"),
    pytest.param({"rule": "self.replicas >= 0", "message": "no", "messageExpression": "self.nothing"},
                 {"replicas": -1}, ['spec: Invalid value: "object": no'],
                 id="a messageExpression that errs falls back to the message"),
    pytest.param({"rule": "self.replicas >= 0", "messageExpression": "''"},
                 {"replicas": -1}, ['spec: Invalid value: "object": failed rule: self.replicas >= 0'],
                 id="an empty messageExpression falls back to the default"),
]


@pytest.mark.parametrize(("rule", "spec", "expected"), RULE_SCHEMAS)
def test_rule_error_forms(rule: dict[str, Any], spec: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in crd_rules.rule_errors(rules_of(rule), {"spec": spec})] == expected


def test_an_evaluation_error_does_not_carry_the_object() -> None:
    """cel-python appends its whole activation to an error; kube-apiserver's message is short."""
    found = [str(e) for e in crd_rules.rule_errors(rules_of({"rule": "nosuch(self)"}), {"spec": {"x": "y" * 1000}})]
    assert found == ['spec: Invalid value: "object": undeclared reference to \'nosuch\' evaluating rule: nosuch(self)']


def test_a_root_rule_sees_the_name_but_not_the_rest_of_the_metadata() -> None:
    """validation.go binds the root's self with metadata.name and generateName only."""
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('cq-') && !has(self.metadata.labels)", "message": "bad name"}],
              "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}}}
    rt = ResourceType("example.com", "v1", "things", "Thing", False, builtin=False, schema=schema,
                      storage_version="v1", rules=crd_rules.compile_schema(schema))
    named = {"metadata": {"name": "cq-1", "labels": {"a": "b"}}, "spec": {}}
    assert crd_schema.validate_custom(rt, named, None) == []
    assert [str(e) for e in crd_schema.validate_custom(rt, {**named, "metadata": {"name": "x"}}, None)] == [
        ': Invalid value: "object": bad name']


def test_a_version_without_rules_compiles_to_nothing() -> None:
    """Only the nodes that lead to a rule are walked: a CRD without rules costs no CEL at all."""
    assert crd_rules.compile_schema(yaml.safe_load((CRDS / "kueue.x-k8s.io_resourceflavors.yaml").read_text())[
        "spec"]["versions"][0]["schema"]["openAPIV3Schema"]) is None
    assert set(CLUSTER_QUEUES.rules.properties) == {"spec"}


@pytest.mark.parametrize(("entry", "field", "value"), [
    pytest.param({"rule": "self.a ==="}, "rule", "self.a ===", id="a rule that does not parse"),
    pytest.param({"rule": "true", "messageExpression": "'a' +"}, "messageExpression", "'a' +",
                 id="a messageExpression that does not parse"),
])
def test_a_crd_whose_rule_does_not_compile_is_refused(entry: dict[str, str], field: str, value: str) -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-validations": [entry]}}}
    found = crd_rules.rule_compile_errors(schema, "spec.versions[0].schema.openAPIV3Schema")
    assert [(e.field, e.value) for e in found] == [
        (f"spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].{field}", value)]
    assert "compilation failed" in found[0].detail


# --- through the real kubectl --------------------------------------------------------------------


@pytest.fixture(scope="module")
def shows_values(kubectl: Any) -> bool:
    """Whether the server words field errors as kube-apiserver did after v1.32 (measured on v1.35): a failed
    rule shows the value (nothing for an object or a list), not the schema type, and a missing value is
    null, not "null". The stand-in answers as v1.32, the version it reports (docs/localcluster-wire.md)."""
    server = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]
    return int(server["minor"].rstrip("+")) > 32


@pytest.fixture(scope="module")
def kueue_crds(kubectl: Any) -> None:
    for file in ("kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml"):
        kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRDS / file))


def test_kubectl_create_of_an_invalid_cluster_queue_is_refused_with_the_rules_message(kubectl: Any, kueue_crds: None,
                                                                                       shows_values: bool) -> None:
    bad = queue(limits={"borrowingLimit": "2"})
    bad["metadata"]["name"] = name = f"cq-{uuid.uuid4().hex[:8]}"
    refused = kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.returncode == 1
    shown = "" if shows_values else '"object": '
    assert refused.stderr.strip() == (f'The ClusterQueue "{name}" is invalid: spec: Invalid value: {shown}'
                                      "borrowingLimit must be nil when cohort is empty")
    assert kubectl("get", "clusterqueue", name, check=False).returncode != 0
    bad["spec"]["cohort"] = "all"
    kubectl("create", "-f", "-", input=json.dumps(bad))


def test_kubectl_cannot_move_a_local_queue_to_another_cluster_queue(kubectl: Any, kueue_crds: None,
                                                                    namespace: str, shows_values: bool) -> None:
    created = local_queue("cq")
    created["metadata"]["namespace"] = namespace
    kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(created))
    refused = kubectl("-n", namespace, "patch", "localqueue", "lq", "--type=merge",
                      "-p", '{"spec":{"clusterQueue":"other"}}', check=False)
    shown = '"other"' if shows_values else '"string"'
    assert refused.stderr.strip() == (f'The LocalQueue "lq" is invalid: spec.clusterQueue: Invalid value: {shown}: '
                                      "field is immutable")
    kubectl("-n", namespace, "label", "localqueue", "lq", "team=a")


def test_kubectl_shows_that_rules_were_not_checked_after_a_type_error(kubectl: Any, kueue_crds: None,
                                                                      shows_values: bool) -> None:
    bad = queue(cohort=3, limits={"borrowingLimit": "2"})
    bad["metadata"]["name"] = name = f"cq-{uuid.uuid4().hex[:8]}"
    refused = kubectl("create", "--validate=false", "-f", "-", input=json.dumps(bad), check=False)
    assert refused.stderr.strip().splitlines() == [
        f'The ClusterQueue "{name}" is invalid: ',
        '* spec.cohort: Invalid value: "integer": spec.cohort in body must be of type string: "integer"',
        "* " + (BLOCKED.replace('"null"', "null") if shows_values else BLOCKED)]
