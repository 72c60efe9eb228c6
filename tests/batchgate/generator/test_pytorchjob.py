"""The pytorchjob-generator chart's own test suite, run against `batchgate generate pytorchjob`.

Each helm-unittest case of `tests_helloworld_test.yaml` sets its values over
`tests_helloworld.settings.yaml`; its asserts (snapshots from `helloworld_test.yaml.snap`,
`equal`, `isSubset`, `exists`, `notExists`, `isEmpty`, `failedTemplate`) are checked on the
generated AppWrapper, compared as objects. No case needs an exception: where batchgate differs
from the chart (tests/batchgate/generator/test_settings.py), no upstream case looks.

The second half submits every snapshot through the gateway (mutate, then validate, under the
default policy): it is allowed, and it differs from the chart's output only by what the gateway
adds to every AppWrapper.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchgate import keys
from batchgate.generator.pytorchjob import generate_appwrapper
from batchgate.generator.settings import SettingsError, parse_settings
from batchgate.policy import DEFAULT_POLICY
from tests.builders import a_request, value_at
from tests.upstream_corpus import CORPUS, upstream
from webhook.rules import mutate, validate

pytestmark = upstream  # skipped where the upstream samples are absent (tests/conftest.py)


def _load(*parts: str) -> Any:
    path = CORPUS.joinpath("mlbatch", *parts) if CORPUS else None
    return yaml.safe_load(path.read_text()) if path and path.is_file() else None


SUITE = _load("pytorchjob-generator", "tests_helloworld_test.yaml") or {"tests": []}
BASE = _load("pytorchjob-generator", "tests_helloworld.settings.yaml") or {}
SNAPSHOTS = _load("helloworld_test.yaml.snap") or {}


def with_set(base: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """helm's `--set`: a dotted key sets a nested value; null unsets (the chart then sees nil)."""
    out = copy.deepcopy(base)
    for dotted, value in values.items():
        *parents, last = dotted.split(".")
        target = out
        for name in parents:
            if not isinstance(target.get(name), dict):
                target[name] = {}
            target = target[name]
        target[last] = value
    return out


def generated(case: dict[str, Any]) -> dict[str, Any]:
    text = yaml.safe_dump(with_set(BASE, case.get("set") or {}))
    return generate_appwrapper(parse_settings(text))


def snapshot(name: str) -> dict[str, Any]:
    return yaml.safe_load(SNAPSHOTS[name][1])


def _found(obj: Any, path: str) -> bool:
    return value_at(obj, path) is not None


ASSERTS = ("matchSnapshot", "equal", "isSubset", "exists", "notExists", "isEmpty", "failedTemplate")


def check(assertion: dict[str, Any], case: dict[str, Any], got: dict[str, Any]) -> None:
    """One helm-unittest assert. A `matchSnapshot` compares the whole document: in this suite its
    `path` (once spelled `patch`) is written beside it, not under it, so helm-unittest snapshots
    the whole document too."""
    (kind,) = [k for k in assertion if k in ASSERTS]
    spec = assertion[kind] or {}
    if kind == "matchSnapshot":
        assert got == snapshot(case["it"])
    elif kind == "equal":
        assert value_at(got, spec["path"]) == spec["value"]
    elif kind == "isSubset":
        assert dict(value_at(got, spec["path"])).items() >= spec["content"].items()
    elif kind == "exists":
        assert _found(got, spec["path"])
    elif kind == "notExists":
        assert not _found(got, spec["path"])
    elif kind == "isEmpty":
        assert value_at(got, spec["path"]) in (None, [], {}, "")
    else:
        raise AssertionError(f"an assert this runner does not know: {kind}")


CASES = [pytest.param(case, id=case["it"]) for case in SUITE["tests"]]


def test_the_suite_is_all_there() -> None:
    assert len(CASES) == 25
    assert len(SNAPSHOTS) == 11


@pytest.mark.parametrize("case", CASES)
def test_upstream_case(case: dict[str, Any]) -> None:
    kinds = {k for a in case["asserts"] for k in a if k in ASSERTS}
    if kinds == {"failedTemplate"}:
        with pytest.raises(SettingsError):
            generated(case)
        return
    got = generated(case)
    for assertion in case["asserts"]:
        check(assertion, case, got)


def test_the_runner_catches_a_wrong_output() -> None:
    """A runner that passes everything would prove nothing: one changed field fails a snapshot."""
    case = next(c for c in SUITE["tests"] if c["it"] == "Enabling all advanced features at once")
    got = generated(case)
    got["spec"]["components"][0]["template"]["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 4
    with pytest.raises(AssertionError):
        check(case["asserts"][0], case, got)


# --- through the gateway -------------------------------------------------------------------

@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in SNAPSHOTS])
def test_the_gateway_adds_only_its_own_fields_to_a_generated_appwrapper(name: str) -> None:
    """What the gateway adds to every AppWrapper (docs/rules.md): the submitter's labels, created
    suspended (the controller resumes it once it is admitted), the gang label on each pod
    template, and batchgate's scheduler on each pod template that names none. MLBatch's
    AppWrapper controller puts its own scheduler (scheduler-plugins-scheduler) in the same place
    when it creates the PyTorchJob; a scheduler the settings name (sakkara here) is kept."""
    case = next(c for c in SUITE["tests"] if c["it"] == name)
    request = a_request(generated(case), user="alice", uid="uid-alice", namespace="my-namespace")
    mutation = mutate(request, DEFAULT_POLICY)
    assert mutation.denial is None and mutation.object is not None
    verdict = validate(dataclasses.replace(request, object=mutation.object), DEFAULT_POLICY)
    assert verdict.allowed, verdict.message

    expected = snapshot(name)
    expected["metadata"]["labels"].update({keys.USER_LABEL: "alice", keys.USERID_LABEL: "uid-alice"})
    expected["spec"]["suspend"] = True
    for replicas in expected["spec"]["components"][0]["template"]["spec"]["pytorchReplicaSpecs"].values():
        template = replicas["template"]
        template.setdefault("metadata", {}).setdefault("labels", {})[keys.POD_GROUP_LABEL] = "my-job"
        template["spec"].setdefault("schedulerName", DEFAULT_POLICY.scheduling.scheduler_name)
    assert mutation.object == expected
