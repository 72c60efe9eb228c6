"""Label selectors, failure-policy rules and the typed AppWrapper: parse once, errors with paths."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.appwrapper import effective_pod_sets, parse_appwrapper
from batchgate.api.errors import FieldError
from batchgate.api.failure_policy import FailurePolicyRule, parse_failure_policy_annotation
from batchgate.api.selectors import parse_label_selector
from tests.builders import a_job, a_pod, an_appwrapper


@pytest.mark.parametrize(
    "selector, labels, matches",
    [
        pytest.param({}, {}, True, id="the empty selector matches everything"),
        pytest.param(None, {"a": "b"}, True, id="a missing selector matches everything"),
        pytest.param({"matchLabels": {"team": "a"}}, {"team": "a", "x": "y"}, True, id="match labels"),
        pytest.param({"matchLabels": {"team": "a"}}, {"team": "b"}, False, id="a different value"),
        pytest.param({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "test"]}]},
                     {"env": "test"}, True, id="In matches a listed value"),
        pytest.param({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
                     {}, True, id="NotIn matches a missing key"),
        pytest.param({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, {}, False,
                     id="Exists needs the key"),
        pytest.param({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, {"env": ""}, False,
                     id="DoesNotExist fails on an empty value"),
        pytest.param({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
                     {"a": "1"}, False, id="labels and expressions must all hold"),
    ],
)
def test_label_selectors(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(selector, "selector").matches(labels) is matches


@pytest.mark.parametrize(
    "selector, problem",
    [
        pytest.param([], "selector: must be a label selector mapping, got list", id="a list"),
        pytest.param({"matchLabel": {}}, "selector.matchLabel: unknown field", id="a misspelled field"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Near"}]},
                     r"selector.matchExpressions\[0\].operator: must be one of", id="an unknown operator"),
        pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
                     "must be empty for operator Exists", id="Exists with values"),
        pytest.param({"matchLabels": {"a": 1}}, r"selector.matchLabels.a: must be a string, got number",
                     id="a numeric label value"),
    ],
)
def test_invalid_label_selectors(selector: Any, problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        parse_label_selector(selector, "selector")


def test_failure_policy_annotation_in_json_and_yaml() -> None:
    as_json = '[{"action": "Reset", "onReasons": ["FoundFailedPods"], "onExitCodes": [137]}]'
    as_yaml = "- action: Reset\n  onReasons: [FoundFailedPods]\n  onExitCodes: [137]\n"
    expected = (FailurePolicyRule("Reset", ("FoundFailedPods",), (137,)),)
    assert parse_failure_policy_annotation(as_json, "a") == expected
    assert parse_failure_policy_annotation(as_yaml, "a") == expected
    assert expected[0].to_wire() == {"action": "Reset", "onReasons": ["FoundFailedPods"], "onExitCodes": [137]}


@pytest.mark.parametrize(
    "text, problem",
    [
        pytest.param("", "is empty", id="an empty annotation"),
        pytest.param("[{action: Fail, onExitCodes: [300]}]", r"a\[0\].onExitCodes\[0\]: must be an exit code",
                     id="an exit code above 255"),
        pytest.param("[{action: Fail, onExitCodes: [true]}]", "must be an exit code", id="a boolean exit code"),
        pytest.param("[{action: Fail, targetComponents: [-1]}]", "must be a component index", id="a negative index"),
        pytest.param("[{action: Fail, when: now}]", r"a\[0\].when: unknown field", id="an unknown rule field"),
        pytest.param("[Fail]", r"a\[0\]: must be a mapping with an action", id="a rule that is a string"),
        pytest.param("[{onReasons: [FoundFailedPods]}]", "action: must be one of", id="a rule without an action"),
    ],
)
def test_invalid_failure_policy_annotations(text: str, problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        parse_failure_policy_annotation(text, "a")


def test_the_typed_appwrapper() -> None:
    aw = parse_appwrapper(
        an_appwrapper("train").with_queue().suspended().with_component(a_job().build(), pod_sets=[
            {"path": "template.spec.template", "replicas": 1}]).with_pytorchjob(workers=2).build())
    assert (aw.name, aw.namespace, aw.suspend, aw.managed_by) == ("train", "team-a", True, None)
    assert aw.labels["kueue.x-k8s.io/queue-name"] == "default-queue"
    assert [c.kind for c in aw.components] == ["Job", "PyTorchJob"]
    assert [(p.path, p.replicas) for p in effective_pod_sets(aw.components[0])] == [("template.spec.template", 1)]
    assert [p.replicas for p in effective_pod_sets(aw.components[1])] == [1, 2]


@pytest.mark.parametrize(
    "obj, problem",
    [
        pytest.param([], "an AppWrapper must be a mapping", id="a list"),
        pytest.param(a_pod().build(), "apiVersion: expected workload.codeflare.dev/v1beta2 AppWrapper", id="a pod"),
        pytest.param({**an_appwrapper().build(), "metadata": "x"}, "metadata: must be a mapping", id="string metadata"),
        pytest.param({**an_appwrapper().with_job().build(), "spec": {"components": [], "suspend": "yes"}},
                     "spec.suspend: must be true or false", id="suspend as text"),
        pytest.param(an_appwrapper().with_pod(pod_sets={"path": "template"}).build(),
                     r"spec.components\[0\].podSets: must be a list", id="podSets as a mapping"),
        pytest.param(an_appwrapper().with_pod(pod_sets=[{"path": "template", "replicas": -2}]).build(),
                     r"spec.components\[0\].podSets\[0\].replicas: must be a non-negative integer",
                     id="negative replicas"),
        pytest.param(an_appwrapper().labelled("a", "b").build() | {"metadata": {"labels": {"a": 3}}},
                     "metadata.labels.a: must be a string, got number", id="a numeric label"),
        pytest.param({**an_appwrapper().build(), "spec": {"components": [{"template": {}}, 7]}},
                     r"spec.components\[1\]: must be a mapping, got number", id="a component that is a number"),
    ],
)
def test_malformed_appwrappers(obj: Any, problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        parse_appwrapper(obj)

