"""Every bad input gets a clear 400 or 403 naming the field, in bounded work (issue 19 item 3).

The shapes that used to end in an exception (RecursionError, OverflowError, ReaderError,
IndexError) or in unbounded work (a YAML "billion laughs", a framework job of millions of pods).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from batchgate import keys
from batchgate.frameworks.roles import MAX_PODS
from batchgate.policy import DEFAULT_POLICY
from tests.builders import a_pod, a_request, an_appwrapper
from tests.webhook.rules.frameworks.builders import indexed_job
from webhook.serving.gateway import review_offline
from webhook.rules.review import AdmissionRequest

FT = "workload.codeflare.dev.appwrapper/"
LAUGHS = "\n".join(["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
                   + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)])


def policy_edit(text: str) -> AdmissionRequest:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "batchgate-policy", "namespace": "batchgate-system"},
                 "data": {"policy.yaml": text}}
    return a_request(configmap, namespace="batchgate-system")


def framework_pod(framework: str, slots: list[dict[str, Any]]) -> AdmissionRequest:
    layout = {"framework": framework, "service": "s", "port": 1, "nproc_per_node": "auto", "hostfile_path": "/h",
              "slots_per_host": 1, "wait_image": "busybox", "wait_timeout_seconds": 1,
              "slots": [{"prefix": "p-", "start": 0, "subdomain": "s", **slot} for slot in slots]}
    pod = a_pod().labelled(keys.FRAMEWORK_LABEL, framework).build()
    pod["metadata"]["annotations"] = {keys.FRAMEWORK_LAYOUT_ANNOTATION: json.dumps(layout),
                                      keys.HOST_PREFIX_ANNOTATION: "p-",
                                      keys.JOB_COMPLETION_INDEX_ANNOTATION: "0"}
    return a_request(pod)


def queued_framework_job(pods: int) -> AdmissionRequest:
    job = indexed_job("big", pods, framework="pytorch")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "q"
    return a_request(job)


@pytest.mark.parametrize(
    "request_, code, reason, message",
    [
        pytest.param(policy_edit("queues: {defaultQueueName: a\x00b}"), 403, "InvalidPolicy",
                     "unacceptable character #x0000", id="a policy with a NUL character"),
        pytest.param(policy_edit("queues: " + "[" * 5000 + "]" * 5000), 403, "InvalidPolicy",
                     "nested more than 100 levels deep", id="a policy nested 5000 deep"),
        pytest.param(policy_edit("faultTolerance: {retryLimit: " + "9" * 5000 + "}"), 403, "InvalidPolicy",
                     "a value cannot be read", id="a policy with a 5000-digit integer"),
        pytest.param(policy_edit(LAUGHS), 403, "InvalidPolicy", "expands to more than 100000 values",
                     id="a policy that is a billion laughs"),
        pytest.param(framework_pod("pytorch", [{"role": "worker", "count": 2}]), 403, "InvalidFramework",
                     "pytorch needs one 'master' pod", id="a pytorch pod layout with only worker slots"),
        pytest.param(framework_pod("mxnet", [{"role": "server", "count": 1}, {"role": "worker", "count": 2}]), 403,
                     "InvalidFramework", "mxnet needs one 'scheduler' pod", id="an mxnet pod layout with no scheduler"),
        pytest.param(framework_pod("tensorflow", [{"role": "worker", "count": 10**9}]), 403, "InvalidFramework",
                     f"at most {MAX_PODS} pods", id="a pod layout of a billion workers"),
        pytest.param(queued_framework_job(3_000_000), 403, "InvalidFramework", f"at most {MAX_PODS} pods, found 3000000",
                     id="a framework job declaring three million pods"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "admissionGracePeriodDuration", "9" * 30 + "h")
                               .with_job().build()), 403, "InvalidAnnotation", "out of range",
                     id="a duration past what Go can hold"),
        pytest.param(a_request(an_appwrapper().annotated("batchgate.dev/failure-policy", LAUGHS).with_job().build()),
                     403, "InvalidAnnotation", "expands to more than 100000 values",
                     id="a failure-policy annotation that is a billion laughs"),
    ],
)
def test_bad_input_gets_a_clear_denial(request_: AdmissionRequest, code: int, reason: str, message: str) -> None:
    reply = review_offline(request_, DEFAULT_POLICY).reply
    assert (reply.allowed, reply.code, reply.reason) == (False, code, reason), reply.message
    assert message in reply.message
    assert "Error" not in reply.message  # no exception names


def test_an_honest_framework_job_at_the_limit_is_laid_out() -> None:
    reply = review_offline(queued_framework_job(MAX_PODS), DEFAULT_POLICY).reply
    assert reply.allowed, reply.message
