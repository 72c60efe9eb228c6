"""The policy ConfigMap's one meaning, as the gateway, the controller and the keeper all read it,
and the Event each of them records for an invalid one."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from batchgate.policy import DEFAULT_POLICY, PolicyError
from batchgate.policy_configmap import (EVENT_ERROR_CHARS, invalid_policy_event, policy_from_configmap,
                                        rejection)

NOW = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)


def configmap(data: Any, version: str = "7") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "policy", "namespace": "sys", "uid": "u-1", "resourceVersion": version},
            **({"data": data} if data is not None else {})}


@pytest.mark.parametrize("configmap_, queue", [
    pytest.param(None, "default-queue", id="no ConfigMap is the built-in defaults"),
    pytest.param(configmap({"policy.yaml": ""}), "default-queue", id="an empty policy.yaml is the defaults too"),
    pytest.param(configmap({"policy.yaml": "queues: {defaultQueueName: team}\n"}), "team",
                 id="policy.yaml holds the policy"),
])
def test_what_a_configmap_holds(configmap_: Any, queue: str) -> None:
    assert policy_from_configmap(configmap_, "sys", "policy").queues.default_queue_name == queue


@pytest.mark.parametrize("configmap_, says", [
    pytest.param(configmap({"policy.yml": "queues: {}\n"}), "configmap sys/policy: data: ConfigMap has no "
                 "'policy.yaml' key", id="a misspelled key is an invalid policy, not the defaults"),
    pytest.param(configmap(None), "ConfigMap has no 'policy.yaml' key", id="a ConfigMap without data is invalid"),
    pytest.param(configmap({}), "ConfigMap has no 'policy.yaml' key", id="an empty data is invalid"),
    pytest.param(configmap({"policy.yaml": "faultTolerance:\n  retryLimit: -3\n"}),
                 "configmap sys/policy:2: faultTolerance.retryLimit", id="an invalid policy names its line and field"),
])
def test_what_is_an_invalid_policy(configmap_: Any, says: str) -> None:
    with pytest.raises(PolicyError) as caught:
        policy_from_configmap(configmap_, "sys", "policy")
    assert says in str(caught.value)


def test_the_defaults_are_the_default_policy_itself() -> None:
    assert policy_from_configmap(None, "sys", "policy") is DEFAULT_POLICY


def test_a_rejection_names_the_fix() -> None:
    assert rejection("bad", "sys", "policy").startswith("bad; fix it with: kubectl edit configmap -n sys policy")


def event(component: str = "batchgate-webhook", version: str = "7", error: str = "bad") -> dict[str, Any]:
    return invalid_policy_event(configmap({"policy.yaml": "x"}, version), "sys", "policy", error,
                                "the reporter keeps policy abc", component, NOW)


def test_the_event_is_a_warning_on_the_configmap_saying_what_the_reporter_keeps() -> None:
    body = event()
    assert (body["type"], body["reason"], body["metadata"]["namespace"]) == ("Warning", "InvalidPolicy", "sys")
    assert body["involvedObject"] == {"apiVersion": "v1", "kind": "ConfigMap", "name": "policy", "namespace": "sys",
                                      "uid": "u-1", "resourceVersion": "7"}
    assert body["message"] == "bad; the reporter keeps policy abc"
    assert body["source"] == {"component": "batchgate-webhook"}


@pytest.mark.parametrize("other, same", [
    pytest.param({}, True, id="the same component seeing the same edit makes the same Event"),
    pytest.param({"component": "batchgate-controller"}, False, id="each component makes its own"),
    pytest.param({"version": "8"}, False, id="another edit is another Event"),
    pytest.param({"error": "worse"}, False, id="another error is another Event"),
])
def test_which_reports_are_one_event(other: dict[str, str], same: bool) -> None:
    assert (event()["metadata"]["name"] == event(**other)["metadata"]["name"]) is same


def test_a_long_error_is_cut_so_the_message_keeps_what_is_in_force() -> None:
    message = event(error="x" * 5000)["message"]
    assert message == "x" * EVENT_ERROR_CHARS + "; the reporter keeps policy abc"
