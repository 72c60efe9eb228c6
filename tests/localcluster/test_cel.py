"""The CEL subset behind matchConditions: values, CEL's error absorption, and refusals."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.apiserver.cel import CelError, evaluate

VARIABLES: dict[str, Any] = {
    "request": {"operation": "CREATE", "userInfo": {"username": "system:serviceaccount:kube-system:gc",
                                                    "groups": ["system:serviceaccounts", "system:authenticated"]},
                "resource": {"group": "batch", "version": "v1", "resource": "jobs"}},
    "object": {"metadata": {"name": "train", "labels": {"team": "a"}},
               "spec": {"parallelism": 4, "template": {"spec": {"containers": [{"name": "c", "image": "t:1"}]}}}},
    "oldObject": None,
}

VALUES = [
    pytest.param("!request.userInfo.username.startsWith('system:')", False, id="a system user is excluded"),
    pytest.param("request.resource.group == 'batch' && request.resource.resource in ['jobs', 'cronjobs']", True,
                 id="a resource list membership"),
    pytest.param("has(object.metadata.labels) && object.metadata.labels.team == 'a'", True, id="has then select"),
    pytest.param("has(object.metadata.annotations)", False, id="has of a missing field"),
    pytest.param("'team' in object.metadata.labels", True, id="in over a map's keys"),
    pytest.param("object.spec.template.spec.containers.exists(c, c.image.endsWith(':1'))", True, id="exists"),
    pytest.param("object.spec.template.spec.containers.all(c, c.name.size() > 3)", False, id="all"),
    pytest.param("size(object.spec.template.spec.containers) == 1", True, id="size as a function"),
    pytest.param("object.spec.parallelism + 1 >= 5 ? 'big' : 'small'", "big", id="arithmetic and a conditional"),
    pytest.param("oldObject == null || oldObject.metadata.name == 'x'", True, id="or short circuits a null"),
    pytest.param("object.metadata.missing == 'x' || true", True, id="a true operand absorbs an error in or"),
    pytest.param("false && object.metadata.missing == 'x'", False, id="a false operand absorbs an error in and"),
    pytest.param("object.metadata.name.matches('^tr[a-z]+$')", True, id="a regular expression"),
    pytest.param('"a\\"b" + \'c\'', 'a"bc', id="string escapes and concatenation"),
    pytest.param("-object.spec.parallelism < 0 && 1 == 1.0", True, id="negation and numeric equality"),
]


@pytest.mark.parametrize(("expression", "expected"), VALUES)
def test_expressions_evaluate_as_cel_does(expression: str, expected: Any) -> None:
    assert evaluate(expression, VARIABLES) == expected


ERRORS = [
    pytest.param("object.metadata.missing == 'x'", "no such key: missing", id="a missing field"),
    pytest.param("object.metadata.missing == 'x' && true", "no such key", id="an error and must decide"),
    pytest.param("authorizer.group('').resource('pods').check('get').allowed()", "undeclared reference",
                 id="the authorizer is not available"),
    pytest.param("object.spec.parallelism < 'four'", "no such overload", id="comparing a number to a string"),
    pytest.param("!object.spec.parallelism", "expected a bool", id="negating a number"),
    pytest.param("object.metadata.name.lowerAscii()", "no such overload", id="an unsupported method"),
    pytest.param("object.metadata.labels[", "expected more", id="an unfinished expression"),
    pytest.param("object.metadata.name @ 1", "cannot read", id="an unknown operator"),
    pytest.param("{'a': 1}", "cannot read", id="a map literal"),
    pytest.param("object.metadata.name.matches('(')", "invalid regular expression", id="a bad regular expression"),
    pytest.param("(" * 5000 + "1" + ")" * 5000, "nests too deeply", id="nesting deeper than the parser goes"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS)
def test_what_cannot_be_evaluated_raises_cel_error(expression: str, message: str) -> None:
    with pytest.raises(CelError, match=message):
        evaluate(expression, VARIABLES)


PIECES = st.sampled_from(["object", "request", ".", "metadata", "labels", "[", "]", "(", ")", "'a'", "1", "2.5",
                          "==", "!=", "&&", "||", "!", "-", "+", "in", "has", "size", ",", "?", ":", "true",
                          "null", "exists", "c", "x", " "])


@settings(max_examples=500)
@given(st.lists(PIECES, max_size=14).map("".join) | st.text(max_size=20))
def test_any_text_evaluates_or_raises_cel_error_never_anything_else(expression: str) -> None:
    try:
        evaluate(expression, VARIABLES)
    except CelError:
        pass
