"""The Pod-phase webhook configuration: only framework pods are sent, to the gateway's /mutate."""

from __future__ import annotations

from batchgate import keys
from batchgate.api.selectors import parse_label_selector
from tests.manifests.kustomize import webhook_documents
from tests.webhook.rules.frameworks.builders import JOB, admit, indexed_job, pods_of


def pod_hook() -> dict:
    (config,) = [d for d in webhook_documents() if d["metadata"]["name"] == "batchgate-pod-frameworks"]
    (hook,) = config["webhooks"]
    return hook


def test_the_pod_phase_webhook_is_built_by_kustomize_and_calls_the_gateway_on_pod_creation() -> None:
    hook = pod_hook()
    assert hook["clientConfig"]["service"] == {"name": "batchgate-webhook", "namespace": "batchgate-system",
                                               "path": "/mutate", "port": 443}
    assert hook["rules"] == [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                              "resources": ["pods"], "scope": "Namespaced"}]
    assert (hook["failurePolicy"], hook["sideEffects"], hook["reinvocationPolicy"]) == ("Fail", "None", "IfNeeded")


def test_its_object_selector_takes_framework_pods_and_leaves_ordinary_pods_alone() -> None:
    selector = parse_label_selector(pod_hook()["objectSelector"], "objectSelector")
    job = indexed_job("train", 2, framework="pytorch")
    assert admit(job, JOB).error is None
    framework_pod = pods_of(job)[0]
    ordinary = pods_of(indexed_job("plain", 1))[0]
    assert selector.matches(framework_pod["metadata"]["labels"])
    assert not selector.matches(ordinary["metadata"]["labels"])
    assert not selector.matches({keys.ROLE_LABEL: "worker"})
