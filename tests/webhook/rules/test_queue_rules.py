"""No escape from the queue (issue 20 item 2): the UPDATEs of a queued workload the gateway refuses.

Each case starts from the stored form of a workload alice created (queued and suspended by the
gateway), applies one change, and sends it as an UPDATE from alice, or from the controller's
identity, which the policy exempts.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from batchgate.policy import DEFAULT_POLICY, parse_policy
from tests.builders import ObjectBuilder, a_job, a_pytorchjob, a_raycluster, a_rayjob, a_request, an_appwrapper
from webhook.rules import mutate, validate

QUEUE = "kueue.x-k8s.io/queue-name"
CONTROLLER = "system:serviceaccount:batchgate-system:batchgate-controller"
POLICY = parse_policy(f"exempt: {{users: [{CONTROLLER}]}}\n")
OPEN_POLICY = parse_policy(f"exempt: {{users: [{CONTROLLER}]}}\nqueues: {{requireQueueFor: []}}\n")

KINDS: dict[str, tuple[Callable[[], ObjectBuilder], tuple[str, ...]]] = {
    "Job": (lambda: a_job(namespace="team-a").with_queue(), ("spec", "suspend")),
    "PyTorchJob": (lambda: a_pytorchjob(namespace="team-a").with_queue(), ("spec", "runPolicy", "suspend")),
    "RayJob": (lambda: a_rayjob(namespace="team-a").with_queue(), ("spec", "suspend")),
    "RayCluster": (lambda: a_raycluster(namespace="team-a").with_queue(), ("spec", "suspend")),
    "AppWrapper": (lambda: an_appwrapper().with_job(), ("spec", "suspend")),  # the gateway gives it a queue
}


def stored(kind: str) -> dict[str, Any]:
    """What the API server holds after alice's CREATE: queued and suspended by the gateway."""
    obj = KINDS[kind][0]().build()
    return mutate(a_request(obj), POLICY).object or obj


def set_suspend(obj: dict[str, Any], kind: str, value: bool) -> None:
    *parents, last = KINDS[kind][1]
    for step in parents:
        obj = obj[step]
    obj[last] = value


def unsuspend(kind: str) -> Callable[[dict[str, Any]], None]:
    return lambda o: set_suspend(o, kind, False)


def drop_queue(o: dict[str, Any]) -> None:
    o["metadata"]["labels"].pop(QUEUE)


def rename_queue(o: dict[str, Any]) -> None:
    o["metadata"]["labels"][QUEUE] = "other-queue"


def escape(kind: str) -> Callable[[dict[str, Any]], None]:
    """alice's patch: queue label null and suspend false at once."""
    def change(o: dict[str, Any]) -> None:
        drop_queue(o)
        set_suspend(o, kind, False)
    return change


def running(kind: str, change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """A change made to the workload while it runs (admitted and un-suspended by the controller)."""
    def both(o: dict[str, Any]) -> None:
        set_suspend(o, kind, False)
        change(o)
    return both


def update(kind: str, change: Callable[[dict[str, Any]], None], *, user: str = "alice",
           policy: Any = POLICY, before: Callable[[dict[str, Any]], None] | None = None) -> Any:
    old = stored(kind)
    if before is not None:
        before(old)
    new = copy.deepcopy(old)
    change(new)
    return validate(a_request(new, user=user, operation="UPDATE", old=old), policy)


REFUSED = [
    *(pytest.param(kind, escape(kind), None, "QueueNameImmutable",
                   f"metadata.labels[{QUEUE}]: cannot change while the {kind} is not suspended",
                   id=f"dropping the queue label and un-suspending a {kind} in one patch is refused")
      for kind in KINDS),
    *(pytest.param(kind, rename_queue, unsuspend(kind), "QueueNameImmutable", "cannot change while the",
                   id=f"moving a running {kind} to another queue is refused") for kind in KINDS),
    *(pytest.param(kind, unsuspend(kind), None, "UnsuspendRefused",
                   "un-suspended by the batchgate controller once its Workload is admitted",
                   id=f"a user un-suspending a queued {kind} is refused") for kind in KINDS),
    pytest.param("PyTorchJob", unsuspend("PyTorchJob"), None, "UnsuspendRefused", "spec.runPolicy.suspend:",
                 id="the refusal names the kind's own suspend field"),
    pytest.param("Job", drop_queue, None, "QueueRequired", f"metadata.labels[{QUEUE}]: Job needs a LocalQueue label",
                 id="dropping the queue label of a suspended Job is refused where Jobs require a queue"),
]


@pytest.mark.parametrize("kind, change, before, reason, message", REFUSED)
def test_refused(kind: str, change: Any, before: Any, reason: str, message: str) -> None:
    verdict = update(kind, change, before=before)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 403, reason), verdict
    assert message in verdict.message


ALLOWED = [
    *(pytest.param(kind, unsuspend(kind), CONTROLLER, POLICY, None,
                   id=f"the controller un-suspends an admitted {kind}") for kind in KINDS),
    *(pytest.param(kind, lambda o, k=kind: set_suspend(o, k, True), "alice", POLICY, unsuspend(kind),
                   id=f"a user suspends a running {kind}") for kind in KINDS),
    pytest.param("Job", rename_queue, "alice", POLICY, None, id="moving a suspended Job to another queue is allowed"),
    pytest.param("Job", drop_queue, "alice", OPEN_POLICY, None,
                 id="dropping the queue label of a suspended Job is allowed where no queue is required"),
    pytest.param("Job", lambda o: o["metadata"]["labels"].update(team="x"), "alice", POLICY, unsuspend("Job"),
                 id="relabelling a running Job without touching its queue is allowed"),
    pytest.param("RayCluster", running("RayCluster", lambda o: o["spec"]["workerGroupSpecs"][0].update(replicas=3)),
                 "alice", POLICY, unsuspend("RayCluster"), id="scaling a running RayCluster is not this rule's business"),
]


@pytest.mark.parametrize("kind, change, user, policy, before", ALLOWED)
def test_allowed(kind: str, change: Any, user: str, policy: Any, before: Any) -> None:
    verdict = update(kind, change, user=user, policy=policy, before=before)
    assert verdict.allowed, verdict.message


def test_an_unqueued_job_may_be_resumed_by_its_user() -> None:
    old = a_job(namespace="team-a").with_spec(suspend=True).build()
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    assert validate(a_request(new, operation="UPDATE", old=old), OPEN_POLICY).allowed


def test_the_default_policy_exempts_no_user_so_nobody_else_unsuspends() -> None:
    assert DEFAULT_POLICY.exempt.users == ()
    verdict = update("Job", unsuspend("Job"), user=CONTROLLER, policy=DEFAULT_POLICY)
    assert verdict.reason == "UnsuspendRefused"
