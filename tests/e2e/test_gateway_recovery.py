"""Recovery is quick (issue 20 item 3), end to end: the real gateway, controller and kubectl.

A Job is admitted while the gateway is down: the controller's un-suspend is refused by the API
server ("failed calling webhook", failurePolicy Fail) for as long as the outage lasts. Once the
gateway answers again on the same address, the Job starts within a probe interval or two, not
after an exponential backoff that grew through the outage (10 -> 20 -> 41 -> 82 s).
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest
import yaml

from batchgate import keys
from batchgate.clock import SystemClock
from controller.adapters.kube import KubeClient
from controller.adapters.manager import Controller, ControllerOptions
from tests.e2e.stack import NAMESPACE, Stack, running_stack, submit
from tests.e2e.test_gang_shipped_policy import wait

pytestmark = pytest.mark.timeout(240)
OUTAGE_SECONDS = 25.0
"""Long enough that the old backoff's next retry (about 16 s after the return) would be far off."""
STARTS_WITHIN_SECONDS = 10.0
"""A generous bound for a loaded machine: the controller probes every second."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("recovery-e2e")) as stack:
        queues = [
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": "f"}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {
                "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "f", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]}]}},
            {"apiVersion": keys.KUEUE_API_VERSION, "kind": "LocalQueue",
             "metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq"}},
        ]
        stack.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(queues))
        yield stack


def a_job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": NAMESPACE, "labels": {keys.QUEUE_NAME_LABEL: "q"}}, "spec": {
        "parallelism": 2, "completions": 2, "template": {
            "metadata": {"annotations": {"localcluster.batchgate.dev/behavior": json.dumps({"runFor": "6000s"})}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "resources": {
                "requests": {"cpu": "1"}}}]}}}}


def suspended(stack: Stack, name: str) -> bool:
    job = json.loads(stack.kubectl("get", "job", name, "-n", NAMESPACE, "-o", "json").stdout)
    return job["spec"].get("suspend") is True


def test_a_job_admitted_during_an_outage_starts_soon_after_the_gateway_returns(stack: Stack) -> None:
    client = KubeClient.from_kubeconfig(str(stack.controller_kubeconfig))
    ctl = Controller(client, SystemClock(), ControllerOptions(leader_elect=False, watch_timeout=5))
    ctl.start()
    try:
        assert ctl.wait_synced(20)
        submit(stack.kubectl, a_job("first"))
        submit(stack.kubectl, a_job("second"))  # waits: the queue holds 2 cpu, "first" takes them
        wait(lambda: not suspended(stack, "first"), 30, "the first Job started")
        assert suspended(stack, "second")

        stack.gateway.stop()
        # Deleting is not policed, so the outage does not stop it: "second" is admitted at once, but
        # the controller cannot un-suspend it while the gateway is down.
        stack.kubectl("delete", "job", "first", "-n", NAMESPACE, "--wait=false")
        wait(lambda: ctl.waiting_for_webhooks, 30, "the controller's un-suspend to meet the outage")
        time.sleep(OUTAGE_SECONDS)
        assert suspended(stack, "second")

        stack.gateway.start()
        back = time.monotonic()
        wait(lambda: not suspended(stack, "second"), STARTS_WITHIN_SECONDS, "the admitted Job started after the outage")
        print(f"started {time.monotonic() - back:.1f}s after the gateway returned")
        # The key is released once its reconcile returns, a moment after the write that started the Job.
        wait(lambda: ctl.waiting_for_webhooks == 0, 5, "the waiting keys to be released")
    finally:
        ctl.stop()
        client.close()
