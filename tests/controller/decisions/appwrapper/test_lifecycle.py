"""The AppWrapper phase machine, branch by branch (docs/appwrapper.md, "Lifecycle" and "Deletion").

We test these aspects: every phase and every branch of upstream's checks in their order, as a
table from (AppWrapper, what was observed, timing, now) to the step taken; the outcome of
component creation; the deletion protocol shared by every phase that takes components down;
and how a step becomes a status patch (transition times kept unless a status flips).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

import pytest

from batchgate import keys
from batchgate.api.appwrapper_status import read_appwrapper_state as state
from batchgate.api.failure_policy import FailurePolicyRule
from controller.decisions.appwrapper.lifecycle import after_create, decide
from controller.decisions.appwrapper.pods import PodCounts
from controller.decisions.appwrapper.timing import Timing
from controller.decisions.appwrapper.transition import (
    AddFinalizer,
    ComponentState,
    CreateComponents,
    CreateOutcome,
    DeleteComponents,
    DeletePods,
    Observed,
    RemoveFinalizer,
    Transition,
    status_patch,
)
from tests.controller.decisions.appwrapper_builders import (
    DEFAULT_TIMING,
    GONE,
    an_aw,
    at,
    seen,
    timing,
)

R, S, F = keys.PHASE_RUNNING, keys.PHASE_SUSPENDED, keys.PHASE_FAILED
QR, RD, PR, UH, DR = (keys.COND_QUOTA_RESERVED, keys.COND_RESOURCES_DEPLOYED, keys.COND_PODS_READY,
                      keys.COND_UNHEALTHY, keys.COND_DELETING_RESOURCES)
SECONDS = _dt.timedelta(seconds=1)
UNSET = object()


@dataclass(frozen=True)
class Expect:
    phase: str
    conditions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (status, reason), last wins
    untouched: tuple[str, ...] = ()  # condition types the step must not set
    actions: tuple[Any, ...] = ()
    requeue: Any = UNSET  # a timedelta, None, or UNSET for "don't care"
    count: int | None = None  # resettingCount written
    events: tuple[str, ...] = ()  # event message prefixes, in order


def check(step: Transition | None, expect: Expect | None) -> None:
    if expect is None:
        assert step is None
        return
    assert step is not None
    assert step.phase == expect.phase, step.why
    set_ = {c.type: (c.status, c.reason) for c in step.conditions}
    for type_, wanted in expect.conditions.items():
        assert set_.get(type_) == wanted, f"{type_}: {set_.get(type_)} != {wanted} ({step.why})"
    for type_ in expect.untouched:
        assert type_ not in set_, f"{type_} was set: {set_[type_]}"
    assert step.actions == expect.actions
    if expect.requeue is not UNSET:
        assert step.requeue_after == expect.requeue
    assert step.resetting_count == expect.count
    assert len(step.events) == len(expect.events), step.events
    for event, prefix in zip(step.events, expect.events):
        assert event.message.startswith(prefix), event.message


FAIL_ON_BACKOFF = timing(failure_policy=(FailurePolicyRule("Fail", on_reasons=("BackoffLimitExceeded",)),))
JOB_FAILED = {0: ComponentState(True, failure=("BackoffLimitExceeded", "Job has reached the specified backoff limit"))}


def running() -> Any:
    """A fresh builder: a Running AppWrapper deployed at T0 (builders are mutable, never share one)."""
    return an_aw().deployed(R, at=0)


CASES = [
    # --- not ours, or being deleted ------------------------------------------------------------
    pytest.param(an_aw().in_phase(R).managed_by("kueue.x-k8s.io/multikueue").build(), seen(), DEFAULT_TIMING, 0, None,
                 id="an AppWrapper managed by another controller is left alone"),
    pytest.param(an_aw().deployed(R).being_deleted().build(), seen(running=2), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_TERMINATING, {DR: ("True", keys.REASON_DELETION_INITIATED)},
                        actions=(DeleteComponents((0,)),), requeue=5 * SECONDS),
                 id="deleting a running AppWrapper first deletes its components, shown as Terminating"),
    pytest.param(an_aw().deployed(R).being_deleted().build(), GONE, DEFAULT_TIMING, 10,
                 Expect(R, {RD: ("False", keys.PHASE_TERMINATING), QR: ("False", keys.PHASE_TERMINATING),
                            DR: ("False", keys.REASON_DELETION_COMPLETE)}, actions=(RemoveFinalizer(),)),
                 id="once its components and pods are gone a deleted AppWrapper drops the finalizer"),
    pytest.param(an_aw().undeployed(S).being_deleted().build(), seen(), DEFAULT_TIMING, 10,
                 Expect(S, untouched=(RD, QR, DR), actions=(RemoveFinalizer(),)),
                 id="deleting a suspended AppWrapper only drops the finalizer"),
    pytest.param(an_aw().in_phase(R).being_deleted().build(), seen(), DEFAULT_TIMING, 10, None,
                 id="a deleted AppWrapper without our finalizer needs nothing"),
    # --- Empty and Suspended -------------------------------------------------------------------
    pytest.param(an_aw().suspended().build(), seen(0), DEFAULT_TIMING, 0, Expect(S),
                 id="a new AppWrapper records its components and waits Suspended"),
    pytest.param(an_aw().in_phase(S).suspended().build(), seen(0), DEFAULT_TIMING, 0, None,
                 id="a suspended AppWrapper stays suspended"),
    pytest.param(an_aw().in_phase(S).build(), seen(0), DEFAULT_TIMING, 0,
                 Expect(keys.PHASE_RESUMING, {QR: ("True", keys.PHASE_RESUMING), RD: ("True", keys.PHASE_RESUMING),
                                              PR: ("False", keys.PHASE_RESUMING), UH: ("False", keys.PHASE_RESUMING)},
                        actions=(AddFinalizer(), CreateComponents((0,)))),
                 id="un-suspending reserves quota, adds the finalizer and goes Resuming creating the components"),
    pytest.param(an_aw().in_phase(S).with_finalizer().build(), seen(0), DEFAULT_TIMING, 0,
                 Expect(keys.PHASE_RESUMING, {QR: ("True", keys.PHASE_RESUMING)}, actions=(CreateComponents((0,)),)),
                 id="un-suspending an AppWrapper that has the finalizer does not add it again"),
    pytest.param(an_aw().in_phase(S).with_finalizer().components_deployed().build(), seen(0), DEFAULT_TIMING, 0,
                 Expect(keys.PHASE_RESUMING, {QR: ("True", keys.PHASE_RESUMING)}),
                 id="un-suspending with every component already deployed goes Resuming and creates nothing"),
    # --- Resuming ------------------------------------------------------------------------------
    pytest.param(an_aw().deployed(keys.PHASE_RESUMING).suspended().build(), seen(0), DEFAULT_TIMING, 0,
                 Expect(keys.PHASE_SUSPENDING, events=("Externally suspended while in the Resuming phase",)),
                 id="suspended while resuming it goes Suspending and says so"),
    pytest.param(an_aw(replicas=(2, 1)).deployed(keys.PHASE_RESUMING).components_deployed("False").build(), seen(0),
                 DEFAULT_TIMING, 0, Expect(keys.PHASE_RESUMING, actions=(CreateComponents((0, 1)),)),
                 id="resuming creates every component not yet deployed, in order"),
    pytest.param(an_aw().deployed(keys.PHASE_RESUMING).build(), seen(0), DEFAULT_TIMING, 0, Expect(R),
                 id="resuming with every component deployed is Running"),
    # --- Running, checks in upstream's order ---------------------------------------------------
    pytest.param(an_aw().deployed(R).suspended().build(), seen(running=2), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_SUSPENDING, events=("Externally suspended while in the Running phase",)),
                 id="suspending a running AppWrapper (Kueue eviction) goes Suspending"),
    pytest.param(running().build(), seen({0: ComponentState(False)}, running=2), DEFAULT_TIMING, 10,
                 Expect(F, {UH: ("True", keys.REASON_MISSING_COMPONENT)},
                        events=("MissingComponent: Only found 0 deployed components, but was expecting 1",)),
                 id="a component deleted behind its back fails the AppWrapper without retry"),
    pytest.param(running().build(), seen({0: ComponentState(True, deleting=True)}, running=2), DEFAULT_TIMING, 10,
                 Expect(F, {UH: ("True", keys.REASON_MISSING_COMPONENT)}, events=("MissingComponent",)),
                 id="a component being deleted counts as missing"),
    pytest.param(running().build(), seen(JOB_FAILED, failed=1, running=1), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_FAILED_COMPONENT)}, count=1,
                        events=("FailedComponent: Found 1 failed components: aw-0 (BackoffLimitExceeded",)),
                 id="a failed wrapped Job resets at once, without a grace period"),
    pytest.param(running().build(), seen(JOB_FAILED, failed=1), FAIL_ON_BACKOFF, 10,
                 Expect(F, {UH: ("True", keys.REASON_FAILED_COMPONENT)}, events=("FailedComponent",)),
                 id="a failure-policy rule on the Job's failure reason fails it instead"),
    pytest.param(running().build(), seen(succeeded=2), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_SUCCEEDED, {QR: ("False", keys.PHASE_SUCCEEDED), RD: ("True", keys.PHASE_SUCCEEDED)}),
                 id="all pods succeeded and none left is Succeeded, quota released, resources kept"),
    pytest.param(running().build(), seen(succeeded=2, failed=1), DEFAULT_TIMING, 10,
                 Expect(R, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, requeue=60 * SECONDS),
                 id="enough successes with one failed pod is not success"),
    pytest.param(running().build(), seen(running=1, failed=1), DEFAULT_TIMING, 10,
                 Expect(R, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, requeue=60 * SECONDS),
                 id="failed pods wait out the failure grace period from now"),
    pytest.param(running().with_condition(UH, "True", keys.REASON_FOUND_FAILED_PODS, at=5).build(),
                 seen(running=1, failed=1), DEFAULT_TIMING, 30,
                 Expect(R, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, requeue=35 * SECONDS),
                 id="the failure grace period counts from when Unhealthy turned True"),
    pytest.param(running().with_condition(UH, "True", keys.REASON_FOUND_FAILED_PODS, at=5).build(),
                 seen(running=1, failed=1), DEFAULT_TIMING, 66,
                 Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, count=1,
                        events=("FoundFailedPods: 1 failed pods",)),
                 id="failed pods past the failure grace period reset the AppWrapper"),
    pytest.param(running().with_condition(UH, "True", keys.REASON_FOUND_FAILED_PODS, at=5).resets(3).build(),
                 seen(running=1, failed=1), DEFAULT_TIMING, 66,
                 Expect(F, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, events=("FoundFailedPods",)),
                 id="failed pods at the retry limit fail the AppWrapper"),
    pytest.param(running().build(), seen(failed=1, failed_exit_codes=(42,)), timing(
                     failure_grace=0, terminal_exit_codes=frozenset({42})), 10,
                 Expect(F, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)},
                        events=("FoundFailedPods: 1 failed pods (exit code 42 is in terminalExitCodes",)),
                 id="a terminal exit code fails the AppWrapper with retries left"),
    pytest.param(running().build(), Observed({0: ComponentState(True)}, PodCounts(running=1, failed=1, present=2), (0,)),
                 timing(failure_grace=0, failure_policy=(FailurePolicyRule("Fail", on_reasons=(keys.REASON_FOUND_FAILED_PODS,),
                                                                           target_components=("aw-0",)),)), 10,
                 Expect(F, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)},
                        events=("FoundFailedPods: 1 failed pods (failure-policy rule 0",)),
                 id="a failure-policy rule targeting the component whose pod failed decides"),
    pytest.param(running().build(), Observed({0: ComponentState(True)}, PodCounts(running=1, failed=1, present=2), (0,)),
                 timing(failure_grace=0, failure_policy=(FailurePolicyRule("Fail", target_components=(1,)),)), 10,
                 Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, count=1,
                        events=("FoundFailedPods",)),
                 id="a rule targeting another component does not"),
    pytest.param(running().build(), seen(running=1, failed=1), timing(failure_grace=0, retry_limit=0), 10,
                 Expect(F, {UH: ("True", keys.REASON_FOUND_FAILED_PODS)}, events=("FoundFailedPods",)),
                 id="with retryLimit 0 the first failed pod fails the AppWrapper"),
    pytest.param(running().resets(1).build(), seen(running=2, evicting=("p1",), evicting_nodes=("n1",)),
                 DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_AUTOPILOT_NO_EXECUTE)}, count=1,
                        events=("Workload contains pods using NoExecute resources on Nodes: n1",)),
                 id="GPU pods on a NoExecute node reset the AppWrapper without counting"),
    pytest.param(running().resets(3).build(), seen(running=2, evicting=("p1",), evicting_nodes=("n1",)),
                 DEFAULT_TIMING, 10, Expect(F, {UH: ("True", keys.REASON_AUTOPILOT_NO_EXECUTE)}, events=("Workload",)),
                 id="an uncounted reset still stops at the retry limit"),
    pytest.param(running().with_condition(UH, "True", keys.REASON_FOUND_FAILED_PODS, at=5).build(),
                 seen(running=2), DEFAULT_TIMING, 10,
                 Expect(R, {UH: ("False", keys.REASON_FOUND_NO_FAILED_PODS), PR: ("True", keys.REASON_SUFFICIENT_PODS_READY)},
                        requeue=_dt.timedelta(minutes=1)),
                 id="all pods running clears Unhealthy and sets PodsReady, polled each minute"),
    pytest.param(running().build(), seen(running=1, succeeded=1), DEFAULT_TIMING, 10,
                 Expect(R, {PR: ("True", keys.REASON_SUFFICIENT_PODS_READY)}, untouched=(UH,)),
                 id="succeeded pods count as ready"),
    pytest.param(running().build(), seen(running=1, pending=1), DEFAULT_TIMING, 10,
                 Expect(R, untouched=(UH, PR), requeue=5 * SECONDS),
                 id="pods still starting within the warmup grace period are waited for"),
    pytest.param(running().with_condition(PR, "True", keys.REASON_SUFFICIENT_PODS_READY).build(),
                 seen(running=1, pending=1), DEFAULT_TIMING, 10,
                 Expect(R, {PR: ("False", keys.REASON_INSUFFICIENT_PODS_READY)}, requeue=5 * SECONDS),
                 id="a ready AppWrapper whose pod restarts is no longer PodsReady"),
    pytest.param(running().build(), seen(running=1, pending=1), DEFAULT_TIMING, 298,
                 Expect(R, requeue=2 * SECONDS), id="the wait is cut short at the warmup deadline"),
    pytest.param(running().build(), seen(running=1, pending=1), DEFAULT_TIMING, 301,
                 Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_INSUFFICIENT_PODS_READY)}, count=1,
                        events=("InsufficientPodsReady: 1 pods pending; 1 pods running; 0 pods succeeded",)),
                 id="all pods exist but are not ready after the warmup grace period: reset"),
    pytest.param(running().build(), seen(running=1), DEFAULT_TIMING, 61,
                 Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_INSUFFICIENT_PODS_READY)}, count=1,
                        events=("InsufficientPodsReady",)),
                 id="pods missing after the admission grace period: reset, without waiting for warmup"),
    pytest.param(running().build(), seen(running=1), DEFAULT_TIMING, 30, Expect(R, requeue=5 * SECONDS),
                 id="pods missing within the admission grace period are waited for"),
    # --- Resetting -----------------------------------------------------------------------------
    pytest.param(an_aw().deployed(keys.PHASE_RESETTING).suspended().build(), seen(running=2), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_SUSPENDING, events=("Externally suspended while in the Resetting phase",)),
                 id="suspending trumps resetting"),
    pytest.param(an_aw().deployed(keys.PHASE_RESETTING).with_condition(PR, "True").with_condition(UH, "True", at=5).build(),
                 seen(running=2), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_RESETTING, {PR: ("False", keys.PHASE_RESETTING), DR: ("True", keys.REASON_DELETION_INITIATED)},
                        actions=(DeleteComponents((0,)),), requeue=5 * SECONDS),
                 id="resetting deletes the components first, keeping the quota"),
    pytest.param(an_aw().deployed(keys.PHASE_RESETTING).with_condition(UH, "True", at=5).build(), GONE,
                 DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_RESETTING, {RD: ("False", keys.PHASE_RESETTING)}, untouched=(QR,),
                        requeue=85 * SECONDS),
                 id="with components and pods gone resetting waits out the retry pause from Unhealthy"),
    pytest.param(an_aw().undeployed(keys.PHASE_RESETTING).with_condition(QR, "True").with_condition(UH, "True", at=5)
                 .build(), GONE, DEFAULT_TIMING, 60, Expect(keys.PHASE_RESETTING, requeue=35 * SECONDS),
                 id="resetting within the retry pause waits"),
    pytest.param(an_aw().undeployed(keys.PHASE_RESETTING).with_condition(QR, "True").with_condition(UH, "True", at=5)
                 .build(), GONE, DEFAULT_TIMING, 96,
                 Expect(keys.PHASE_RESUMING, {RD: ("True", keys.PHASE_RESUMING)}, untouched=(QR,)),
                 id="after the retry pause resetting resumes with the same quota"),
    # --- Suspending ----------------------------------------------------------------------------
    pytest.param(an_aw().deployed(keys.PHASE_SUSPENDING).suspended().build(), seen(running=2), DEFAULT_TIMING, 10,
                 Expect(keys.PHASE_SUSPENDING, {DR: ("True", keys.REASON_DELETION_INITIATED)}, untouched=(QR,),
                        actions=(DeleteComponents((0,)),)),
                 id="suspending deletes the components and holds the quota meanwhile"),
    pytest.param(an_aw().deployed(keys.PHASE_SUSPENDING).with_condition(PR, "True").build(), GONE, DEFAULT_TIMING, 10,
                 Expect(S, {RD: ("False", keys.PHASE_SUSPENDED), QR: ("False", keys.PHASE_SUSPENDED),
                            PR: ("False", keys.PHASE_SUSPENDED), DR: ("False", keys.REASON_DELETION_COMPLETE)},
                        untouched=(UH,)),
                 id="once everything is gone suspending releases the quota, even if resumed meanwhile"),
    pytest.param(an_aw().undeployed(keys.PHASE_SUSPENDING).build(), seen(0), DEFAULT_TIMING, 10,
                 Expect(S, {QR: ("False", keys.PHASE_SUSPENDED)}, untouched=(RD, DR)),
                 id="suspending with nothing deployed is Suspended at once"),
    # --- Failed --------------------------------------------------------------------------------
    pytest.param(an_aw().deployed(F).build(), seen(running=1, failed=1), DEFAULT_TIMING, 10,
                 Expect(F, {DR: ("True", keys.REASON_DELETION_INITIATED)}, untouched=(QR, RD),
                        actions=(DeleteComponents((0,)),)),
                 id="a failed AppWrapper deletes its components, holding the quota meanwhile"),
    pytest.param(an_aw().deployed(F).build(), GONE, DEFAULT_TIMING, 10,
                 Expect(F, {RD: ("False", F), QR: ("False", F)}),
                 id="a failed AppWrapper with nothing left releases its quota"),
    pytest.param(an_aw().deployed(F).build(), seen(running=1, failed=1), timing(deletion_on_failure_grace=600), 10,
                 Expect(F, {DR: ("False", keys.REASON_DELETION_PAUSED)}, untouched=(QR, RD), requeue=600 * SECONDS),
                 id="deletionOnFailureGracePeriod keeps a failed AppWrapper's resources for debugging"),
    pytest.param(an_aw().deployed(F).with_condition(DR, "False", keys.REASON_DELETION_PAUSED, at=10).build(),
                 seen(running=1, failed=1), timing(deletion_on_failure_grace=600), 611,
                 Expect(F, {DR: ("True", keys.REASON_DELETION_INITIATED)}, actions=(DeleteComponents((0,)),)),
                 id="after the debugging delay a failed AppWrapper's resources are deleted"),
    pytest.param(an_aw().deployed(F).with_condition(DR, "True", keys.REASON_DELETION_INITIATED, at=611).build(),
                 seen(running=1, failed=1), timing(deletion_on_failure_grace=600), 615,
                 Expect(F, {DR: ("True", keys.REASON_DELETION_INITIATED)}, actions=(DeleteComponents((0,)),)),
                 id="a deletion begun after the debugging delay is not paused again"),
    pytest.param(an_aw().undeployed(F).with_condition(DR, "False", keys.REASON_DELETION_COMPLETE, at=5).build(), GONE,
                 timing(deletion_on_failure_grace=600), 10, Expect(F, {QR: ("False", F)}, untouched=(DR,)),
                 id="a failed AppWrapper already cleaned up is not held again"),
    pytest.param(an_aw().deployed(F).suspended().build(), GONE, timing(deletion_on_failure_grace=600), 10,
                 Expect(F, {RD: ("False", F), QR: ("False", F)}),
                 id="Kueue suspending a failed AppWrapper cuts the debugging delay short"),
    pytest.param(an_aw().in_phase(F).with_condition(QR, "True").build(), seen(0), DEFAULT_TIMING, 10,
                 Expect(F, {QR: ("False", F)}, untouched=(RD, DR)),
                 id="a failed AppWrapper that never deployed only releases its quota"),
    # --- Succeeded -----------------------------------------------------------------------------
    pytest.param(an_aw().deployed(keys.PHASE_SUCCEEDED).build(), seen(succeeded=2), timing(success_ttl=60), 10,
                 Expect(keys.PHASE_SUCCEEDED, requeue=50 * SECONDS),
                 id="a succeeded AppWrapper keeps its components for successTTL counted from deployment"),
    pytest.param(an_aw().deployed(keys.PHASE_SUCCEEDED).build(), seen(succeeded=2), timing(success_ttl=60), 61,
                 Expect(keys.PHASE_SUCCEEDED, {DR: ("True", keys.REASON_DELETION_INITIATED)},
                        actions=(DeleteComponents((0,)),)),
                 id="after successTTL a succeeded AppWrapper's components are deleted"),
    pytest.param(an_aw().deployed(keys.PHASE_SUCCEEDED).build(), GONE, timing(success_ttl=60), 61,
                 Expect(keys.PHASE_SUCCEEDED, {RD: ("False", keys.PHASE_SUCCEEDED)}),
                 id="a succeeded AppWrapper whose components are gone says the TTL expired"),
    pytest.param(an_aw().undeployed(keys.PHASE_SUCCEEDED).build(), seen(0), DEFAULT_TIMING, 10, None,
                 id="a succeeded AppWrapper with nothing deployed needs nothing"),
]


@pytest.mark.parametrize("aw, observed, timing_, now, expect", CASES)
def test_each_phase_takes_upstreams_step(aw: dict[str, Any], observed: Observed, timing_: Timing, now: float,
                                         expect: Expect | None) -> None:
    check(decide(state(aw), observed, timing_, at(now)), expect)


TEARDOWN_CASES = [
    pytest.param(seen(running=2), 0, 10, Expect(F, actions=(DeleteComponents((0,)),), requeue=5 * SECONDS),
                 id="components still there are deleted in the background"),
    pytest.param(seen({0: ComponentState(False)}, running=1), 0, 10, Expect(F, actions=(), requeue=5 * SECONDS),
                 id="components gone but pods still terminating are waited for"),
    pytest.param(seen(running=2), 0, 598, Expect(F, actions=(DeleteComponents((0,)),), requeue=2 * SECONDS),
                 id="the wait is cut short at the forceful deletion deadline"),
    pytest.param(seen(running=2), 0, 601, Expect(F, actions=(DeleteComponents((0,)), DeletePods())),
                 id="after forcefulDeletionGracePeriod the pods are force-deleted first"),
    pytest.param(seen(1), 0, 601, Expect(F, actions=(DeleteComponents((0,), forced=True),)),
                 id="after forcefulDeletionGracePeriod with no pods left components are force-deleted"),
]


@pytest.mark.parametrize("observed, started, now, expect", TEARDOWN_CASES)
def test_the_deletion_protocol_escalates_after_its_grace_period(observed: Observed, started: float, now: float,
                                                                expect: Expect) -> None:
    aw = an_aw().deployed(F).with_condition(DR, "True", keys.REASON_DELETION_INITIATED, at=started).build()
    check(decide(state(aw), observed, DEFAULT_TIMING, at(now)), expect)


def resuming_with(*deployed: str) -> dict[str, Any]:
    aw = an_aw(replicas=(1,) * len(deployed)).deployed(keys.PHASE_RESUMING, at=0).build()
    for component, status in zip(aw["status"]["componentStatus"], deployed):
        component["conditions"][0]["status"] = status
    return aw


def first(api_version: str, kind: str, name: str) -> dict[str, Any]:
    """Resuming, about to create its one component, of this kind."""
    aw = resuming_with("Unknown")
    aw["spec"]["components"][0]["template"] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    aw["status"]["componentStatus"][0].update(kind=kind, apiVersion=api_version, podSets=[])
    return aw


CREATE_CASES = [
    pytest.param(resuming_with("Unknown", "Unknown"), (CreateOutcome(0, "aw-0"), CreateOutcome(1, "aw-1-x7k2p")), 5,
                 DEFAULT_TIMING, Expect(R), id="every component created is Running"),
    pytest.param(resuming_with("Unknown"), (CreateOutcome(0, error="etcdserver: request timed out"),), 5,
                 DEFAULT_TIMING, Expect(keys.PHASE_RESUMING, requeue=SECONDS),
                 id="a transient create error within the admission grace period is retried in a second"),
    pytest.param(resuming_with("Unknown"), (CreateOutcome(0, error="etcdserver: request timed out"),), 61,
                 DEFAULT_TIMING, Expect(keys.PHASE_RESETTING, {UH: ("True", keys.REASON_CREATE_FAILED)}, count=1,
                                        events=("CreateFailed: error creating components: etcdserver",)),
                 id="a transient create error past the admission grace period resets"),
    pytest.param(resuming_with("Unknown"), (CreateOutcome(0, error="etcdserver: request timed out"),), 61,
                 timing(retry_limit=0), Expect(F, {UH: ("True", keys.REASON_CREATE_FAILED)}, events=("CreateFailed",)),
                 id="a transient create error past the grace period at the retry limit fails"),
    pytest.param(resuming_with("True", "Unknown"), (CreateOutcome(1, error="Pod is invalid: image required",
                                                                  fatal=True),), 5,
                 DEFAULT_TIMING, Expect(F, {UH: ("True", keys.REASON_CREATE_FAILED)}, events=("CreateFailed",)),
                 id="a fatal create error fails at once with retries left"),
    pytest.param(first("v1", "Secret", "creds"),
                 (CreateOutcome(0, error='secrets "creds" is forbidden', forbidden=True),), 5,
                 DEFAULT_TIMING, Expect(F, {UH: ("True", keys.REASON_CREATE_FAILED)}, events=(
                     'CreateFailed: error creating components: secrets "creds" is forbidden: bind ClusterRole '
                     "batchgate-controller-team in namespace team-a: see docs/install.md#teams",)),
                 id="a wrapped secret the controller may not create fails at once naming the team binding"),
    pytest.param(first("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws"),
                 (CreateOutcome(0, error='leaderworkersets.leaderworkerset.x-k8s.io "lws" is forbidden',
                                forbidden=True),),
                 5, DEFAULT_TIMING, Expect(F, {UH: ("True", keys.REASON_CREATE_FAILED)}, events=(
                     'CreateFailed: error creating components: leaderworkersets.leaderworkerset.x-k8s.io "lws" is '
                     "forbidden: install the controller's rights over LeaderWorkerSet: add the kustomize component "
                     "manifests/jobset-leaderworkerset to the install overlay, see "
                     "docs/install.md#jobset-and-leaderworkerset",)),
                 id="a wrapped LeaderWorkerSet the controller may not create fails at once naming the component"),
    pytest.param(resuming_with("Unknown"), (CreateOutcome(0, error='jobs.batch "aw-0" is forbidden', forbidden=True),),
                 5, DEFAULT_TIMING, Expect(F, {UH: ("True", keys.REASON_CREATE_FAILED)}, events=(
                     'CreateFailed: error creating components: jobs.batch "aw-0" is forbidden',)),
                 id="any other kind the controller may not create fails at once without a retry"),
]


@pytest.mark.parametrize("aw, outcomes, now, timing_, expect", CREATE_CASES)
def test_component_creation_outcomes_decide_what_resuming_becomes(aw: dict[str, Any], outcomes: tuple[CreateOutcome, ...],
                                                                  now: float, timing_: Timing, expect: Expect) -> None:
    check(after_create(state(aw), outcomes, timing_, at(now)), expect)


def test_created_components_are_recorded_under_their_real_names() -> None:
    step = after_create(state(resuming_with("Unknown", "Unknown")), (CreateOutcome(0, "aw-0"), CreateOutcome(1, "aw-1-x7k2p")),
                        DEFAULT_TIMING, at(5))
    assert step.component_status is not None
    assert [c.name for c in step.component_status] == ["aw-0", "aw-1-x7k2p"]
    assert [c.conditions[0].reason for c in step.component_status] == [keys.REASON_COMPONENT_CREATED] * 2


def test_a_failed_create_marks_only_that_component_errored() -> None:
    step = after_create(state(resuming_with("True", "Unknown")), (CreateOutcome(1, error="boom"),), DEFAULT_TIMING, at(5))
    assert step.component_status is not None
    assert [c.deployed for c in step.component_status] == ["True", "False"]


def test_resuming_marks_the_components_it_is_about_to_create() -> None:
    aw = an_aw().deployed(keys.PHASE_RESUMING).components_deployed("False").build()
    step = decide(state(aw), seen(0), DEFAULT_TIMING, at(3))
    assert step is not None and step.component_status is not None
    assert step.component_status[0].conditions[0].reason == keys.REASON_COMPONENT_CREATION_INITIATED


def test_un_suspending_marks_the_components_in_the_same_write_as_the_resuming_conditions() -> None:
    """One status write takes an admitted AppWrapper to Resuming with its creates announced:
    the patch carries the phase, the four conditions and every component's CreationInitiated."""
    aw = state(an_aw(replicas=(2, 1)).in_phase(S).build())
    step = decide(aw, seen(0), DEFAULT_TIMING, at(3))
    assert step is not None
    patch = status_patch(aw, step, at(3))
    assert patch is not None
    status = patch["status"]
    assert isinstance(status, dict) and status["phase"] == keys.PHASE_RESUMING
    assert [c["type"] for c in status["conditions"]] == [QR, RD, PR, UH]
    assert [c["conditions"][0]["reason"] for c in status["componentStatus"]] == [
        keys.REASON_COMPONENT_CREATION_INITIATED] * 2


def test_a_new_appwrapper_records_each_components_kind_and_pod_sets() -> None:
    step = decide(state(an_aw(replicas=(3, 1)).suspended().build()), seen(0), DEFAULT_TIMING, at(0))
    assert step is not None and step.component_status is not None
    assert [(c.name, c.kind, [p.replicas for p in c.pod_sets]) for c in step.component_status] == [
        ("aw-0", "Job", [3]), ("aw-1", "Job", [1])]


def test_status_patch_stamps_a_condition_only_when_its_status_flips() -> None:
    aw = running().build()
    step = decide(state(aw), seen(running=2), DEFAULT_TIMING, at(10))
    assert step is not None
    patch = status_patch(state(aw), step, at(10))
    assert patch is not None
    conds = {c["type"]: c for c in patch["status"]["conditions"]}
    assert conds[PR]["lastTransitionTime"] == "2026-01-01T00:00:10Z"
    assert conds[RD]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert "phase" not in patch["status"]


def test_status_patch_is_none_when_the_step_changes_nothing() -> None:
    aw = running().with_condition(PR, "True", keys.REASON_SUFFICIENT_PODS_READY, at=5,
                                     message="2 pods running; 0 pods succeeded").build()
    step = decide(state(aw), seen(running=2), DEFAULT_TIMING, at(10))
    assert step is not None and status_patch(state(aw), step, at(10)) is None


def test_a_reset_counts_from_the_written_resetting_count() -> None:
    aw = running().resets(2).build()
    step = decide(state(aw), seen(running=1), DEFAULT_TIMING, at(61))
    assert step is not None
    patch = status_patch(state(aw), step, at(61))
    assert patch is not None
    assert (patch["status"]["phase"], patch["status"]["resettingCount"]) == (keys.PHASE_RESETTING, 3)
