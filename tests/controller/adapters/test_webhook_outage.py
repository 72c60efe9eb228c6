"""Writes that met an unreachable admission webhook wait for the gateway, not for a growing backoff
(issue 20 item 3): one probe key retries every second, the rest are capped, and the first write
that gets through again releases them all (FakeClock time)."""

from __future__ import annotations

from batchgate.clock import FakeClock
from controller.adapters.kube import ApiError
from controller.adapters.webhook_outage import WebhookOutage
from controller.adapters.workqueue import WorkQueue
from tests.controller.adapters.test_workqueue import drain

UNREACHABLE = ('Internal error occurred: failed calling webhook "workloads.validate.batchgate.dev": failed to call '
               'webhook: Post "https://batchgate-webhook.batchgate-system.svc:443/validate?timeout=5s": dial tcp '
               '127.0.0.1:9443: connect: connection refused')


def test_kube_apiservers_webhook_call_failure_is_recognised() -> None:
    assert ApiError(500, "InternalError", UNREACHABLE).webhook_unreachable
    assert not ApiError(500, "InternalError", "Internal error occurred: etcd timed out").webhook_unreachable
    assert not ApiError(403, "Forbidden", 'admission webhook "x" denied the request: no').webhook_unreachable


def outage() -> tuple[FakeClock, WorkQueue, WebhookOutage]:
    clock = FakeClock()
    queue = WorkQueue(clock)
    return clock, queue, WebhookOutage(queue, probe_every=1.0, max_delay=10.0)


def test_the_first_key_probes_every_second_however_long_the_outage() -> None:
    clock, queue, waiting = outage()
    delays = [waiting.failed("probe") for _ in range(30)]
    assert set(delays) == {1.0}
    clock.advance(1.0)
    assert drain(queue) == ["probe"]


def test_other_keys_back_off_no_longer_than_the_cap() -> None:
    _, queue, waiting = outage()
    waiting.failed("probe")
    delays = [waiting.failed("job") for _ in range(30)]
    assert max(delays) == 10.0 and delays == sorted(delays)


def test_a_write_that_gets_through_releases_every_waiting_key_at_once() -> None:
    clock, queue, waiting = outage()
    for key in ("probe", "a", "b"):
        for _ in range(12):
            waiting.failed(key)
    assert waiting.waiting == 3
    waiting.passed("probe")
    assert (sorted(drain(queue)), waiting.waiting) == (["a", "b"], 0)
    assert queue.add_rate_limited("a") == queue.base_delay, "their backoff starts over"


def test_a_key_that_never_waited_releases_nothing() -> None:
    _, queue, waiting = outage()
    waiting.failed("probe")
    waiting.passed("elsewhere")
    assert waiting.waiting == 1 and drain(queue) == []
