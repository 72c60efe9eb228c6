"""The AppWrapper phase machine (docs/appwrapper.md, "Lifecycle"), one function per phase.

Each function reads the AppWrapper's typed state (parsed once by the adapter), what the adapter observed (its components and
labelled pods), the effective Timing and `now`, and returns a `Transition`: the phase after the
step, the conditions and counters to write, the actions to take and when to look again. Checks
run in upstream's order, so the same cluster gives the same story. Creating components is the
one step whose outcome the decision needs, so it is split: `decide` asks for the creates, the
adapter performs them, and `after_create` decides from their outcomes.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Callable

from batchgate import keys
from batchgate.durations import format_duration
from batchgate.controller_rights import rights_fix
from controller.decisions.appwrapper.components import ComponentError, component_status
from controller.decisions.appwrapper.teardown import teardown
from controller.decisions.appwrapper.timing import Timing
from batchgate.api.appwrapper_status import AppWrapperState, ComponentStatus
from batchgate.api.conditions import Condition
from controller.decisions.appwrapper.transition import (
    Action,
    AddFinalizer,
    CreateComponents,
    CreateOutcome,
    Event,
    Observed,
    RemoveFinalizer,
    Teardown,
    Transition,
    clear,
)
from controller.decisions.appwrapper.failure_policy import Failure, judge

RETRY_CREATE_AFTER = _dt.timedelta(seconds=1)
"""How soon a component whose creation failed transiently is tried again (as upstream)."""
POLL_WHILE_WARMING = _dt.timedelta(seconds=5)
"""How often a Running AppWrapper whose pods are not all ready is looked at (as upstream)."""
POLL_WHILE_READY = _dt.timedelta(minutes=1)
"""How often a healthy Running AppWrapper's components are polled for failure (as upstream)."""

RESUMING_MESSAGE = "Suspend is false"
SUSPENDED_MESSAGE = "Suspend is true"


def managed_here(aw: AppWrapperState) -> bool:
    """Upstream's rule: an AppWrapper whose spec.managedBy names another controller is not ours."""
    return aw.managed_by in (None, keys.APPWRAPPER_CONTROLLER_NAME)


def decide(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition | None:
    """The next step for this AppWrapper; None when it is not ours or nothing is to be done."""
    if not managed_here(aw):
        return None
    if aw.deleting:
        return terminating(aw, observed, timing, now) if aw.finalized else None
    step = PHASES.get(aw.phase)
    return step(aw, observed, timing, now) if step is not None else None


def empty(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition:
    """A new AppWrapper: record its components and their podSets, then wait Suspended."""
    try:
        components = component_status(aw.wire)
    except ComponentError as exc:
        unhealthy = Condition(keys.COND_UNHEALTHY, "True", keys.REASON_CREATE_FAILED, str(exc))
        return Transition(keys.PHASE_FAILED, f"components unusable: {exc}", (unhealthy,),
                          events=(Event(keys.EVENT_UNHEALTHY, f"{keys.REASON_CREATE_FAILED}: {exc}"),))
    return Transition(keys.PHASE_SUSPENDED, "component status initialised", component_status=tuple(components))


def suspended_phase(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition | None:
    """Nothing deployed; un-suspending (Kueue admission) starts the deployment.

    Resuming's first step (marking the components about to be created) is taken with it, so going
    Resuming costs one status write instead of two; the finalizer still comes before any create."""
    if aw.suspend:
        return None
    conditions = tuple(Condition(type_, status, keys.PHASE_RESUMING, RESUMING_MESSAGE) for type_, status in (
        (keys.COND_QUOTA_RESERVED, "True"), (keys.COND_RESOURCES_DEPLOYED, "True"),
        (keys.COND_PODS_READY, "False"), (keys.COND_UNHEALTHY, "False")))
    actions: tuple[Action, ...] = () if aw.finalized else (AddFinalizer(),)
    first = resuming(aw, observed, timing, now)
    if first.phase != keys.PHASE_RESUMING:  # nothing to create: Running is judged on the next look, as before
        return Transition(keys.PHASE_RESUMING, "suspend is false", conditions, actions=actions)
    return dataclasses.replace(first, why=f"suspend is false; {first.why}", conditions=conditions + first.conditions,
                               actions=actions + first.actions)


def resuming(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition:
    """Create every component not yet deployed; `after_create` judges how that went."""
    if aw.suspend:
        return _externally_suspended(aw)
    components = list(aw.components)
    todo = tuple(i for i, c in enumerate(components) if c.deployed != "True")
    if not todo:
        return Transition(keys.PHASE_RUNNING, "all components deployed")
    for index in todo:
        components[index] = components[index].with_deployed("Unknown", keys.REASON_COMPONENT_CREATION_INITIATED, now)
    return Transition(keys.PHASE_RESUMING, f"creating components {list(todo)}", component_status=tuple(components),
                      actions=(CreateComponents(todo),))


def after_create(aw: AppWrapperState, outcomes: tuple[CreateOutcome, ...], timing: Timing, now: _dt.datetime) -> Transition:
    """Resuming, once the creates were tried: Running, a retry within the grace period, or unhealthy."""
    components = list(aw.components)
    error: CreateOutcome | None = None
    for outcome in outcomes:
        if outcome.error is None:
            components[outcome.index] = components[outcome.index].with_deployed(
                "True", keys.REASON_COMPONENT_CREATED, now, name=outcome.name)
        else:
            components[outcome.index] = components[outcome.index].with_deployed(
                "False", keys.REASON_COMPONENT_CREATION_ERRORED, now)
            error = error or outcome
    if error is None:
        return Transition(keys.PHASE_RUNNING, "all components deployed", component_status=tuple(components))
    if error.forbidden:  # the controller itself refused: no retry mends its rights
        component = aw.components[error.index]
        fix = rights_fix(component.api_version, component.kind, aw.namespace)
        error = dataclasses.replace(error, fatal=True, error=f"{error.error}: {fix}" if fix else error.error)
    deadline = aw.since(keys.COND_RESOURCES_DEPLOYED, "True", now) + timing.admission_grace
    if not error.fatal and now < deadline:
        return Transition(keys.PHASE_RESUMING, f"component {error.index} not created yet: {error.error}",
                          component_status=tuple(components), requeue_after=RETRY_CREATE_AFTER)
    message = f"error creating components: {error.error}"
    unhealthy = Condition(keys.COND_UNHEALTHY, "True", keys.REASON_CREATE_FAILED, message)
    event = Event(keys.EVENT_UNHEALTHY, f"{keys.REASON_CREATE_FAILED}: {message}")
    if error.fatal:
        return Transition(keys.PHASE_FAILED, message, (unhealthy,), component_status=tuple(components), events=(event,))
    failure = Failure(keys.REASON_CREATE_FAILED, message, components=((error.index, aw.component_name(error.index)),))
    return _reset_or_fail(aw, failure, timing, (unhealthy,), event, component_status=tuple(components))


def running(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition:
    """Watch the deployed components and their pods, in upstream's order of checks."""
    if aw.suspend:
        return _externally_suspended(aw)
    components = aw.components
    states = [observed.components.get(i) for i in range(len(components))]
    deployed = sum(1 for s in states if s is not None and s.exists and not s.deleting)
    if deployed != len(components):
        message = f"Only found {deployed} deployed components, but was expecting {len(components)}"
        return Transition(keys.PHASE_FAILED, message,
                          (Condition(keys.COND_UNHEALTHY, "True", keys.REASON_MISSING_COMPONENT, message),),
                          events=(Event(keys.EVENT_UNHEALTHY, f"{keys.REASON_MISSING_COMPONENT}: {message}"),))
    pods = observed.pods
    failed = [(i, s.failure) for i, s in enumerate(states) if s is not None and s.failure is not None]
    if failed:
        message = f"Found {len(failed)} failed components: " + "; ".join(
            f"{aw.component_name(i)} ({reason}: {detail})" if detail else f"{aw.component_name(i)} ({reason})"
            for i, (reason, detail) in failed)
        reason = failed[0][1][0]
        failure = Failure(reason, message, pods.failed_exit_codes, tuple((i, aw.component_name(i)) for i, _ in failed))
        return _reset_or_fail(aw, failure, timing,
                              (Condition(keys.COND_UNHEALTHY, "True", keys.REASON_FAILED_COMPONENT, message),),
                              Event(keys.EVENT_UNHEALTHY, f"{keys.REASON_FAILED_COMPONENT}: {message}"))
    expected = aw.expected_pods
    if pods.succeeded >= expected and pods.pending + pods.running + pods.failed == 0:
        message = f"{pods.succeeded} pods succeeded and no running, pending, or failed pods"
        return Transition(keys.PHASE_SUCCEEDED, message, (
            Condition(keys.COND_QUOTA_RESERVED, "False", keys.PHASE_SUCCEEDED, message),
            Condition(keys.COND_RESOURCES_DEPLOYED, "True", keys.PHASE_SUCCEEDED, message)))
    if pods.failed > 0:
        unhealthy = Condition(keys.COND_UNHEALTHY, "True", keys.REASON_FOUND_FAILED_PODS)
        deadline = aw.since(keys.COND_UNHEALTHY, "True", now) + timing.failure_grace
        if now < deadline:
            return Transition(keys.PHASE_RUNNING, f"{pods.failed} failed pods; grace period until {deadline}",
                              (unhealthy,), requeue_after=deadline - now)
        message = f"{pods.failed} failed pods"
        failure = Failure(keys.REASON_FOUND_FAILED_PODS, message, pods.failed_exit_codes,
                          tuple((i, aw.component_name(i)) for i in observed.failed_components))
        return _reset_or_fail(aw, failure, timing, (unhealthy,),
                              Event(keys.EVENT_UNHEALTHY, f"{keys.REASON_FOUND_FAILED_PODS}: {message}"))
    if pods.evicting:
        message = f"Workload contains pods using NoExecute resources on Nodes: {', '.join(pods.evicting_nodes)}"
        failure = Failure(keys.REASON_AUTOPILOT_NO_EXECUTE, message)
        return _reset_or_fail(aw, failure, timing,
                              (Condition(keys.COND_UNHEALTHY, "True", keys.REASON_AUTOPILOT_NO_EXECUTE, message),),
                              Event(keys.EVENT_UNHEALTHY, message))
    healthy = clear(aw, keys.COND_UNHEALTHY, keys.REASON_FOUND_NO_FAILED_PODS)
    if pods.running + pods.succeeded >= expected:
        message = f"{pods.running} pods running; {pods.succeeded} pods succeeded"
        return Transition(keys.PHASE_RUNNING, "sufficient pods ready", healthy + (
            Condition(keys.COND_PODS_READY, "True", keys.REASON_SUFFICIENT_PODS_READY, message),),
            requeue_after=POLL_WHILE_READY)
    detail = f"{pods.pending} pods pending; {pods.running} pods running; {pods.succeeded} pods succeeded"
    waiting = healthy + clear(aw, keys.COND_PODS_READY, keys.REASON_INSUFFICIENT_PODS_READY, detail)
    all_exist = pods.pending + pods.running + pods.succeeded >= expected
    grace = timing.warmup_grace if all_exist else timing.admission_grace
    deadline = aw.since(keys.COND_RESOURCES_DEPLOYED, "True", now) + grace
    if now < deadline:
        return Transition(keys.PHASE_RUNNING, f"waiting for pods until {deadline}: {detail}", waiting,
                          requeue_after=min(POLL_WHILE_WARMING, deadline - now))
    unhealthy = Condition(keys.COND_UNHEALTHY, "True", keys.REASON_INSUFFICIENT_PODS_READY, detail)
    return _reset_or_fail(aw, Failure(keys.REASON_INSUFFICIENT_PODS_READY, detail), timing, waiting + (unhealthy,),
                          Event(keys.EVENT_UNHEALTHY, f"{keys.REASON_INSUFFICIENT_PODS_READY}: {detail}"))


def suspending(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition:
    """Take everything down whatever suspend says now, then give the quota back."""
    conditions: tuple[Condition, ...] = ()
    components = None
    if aw.holds(keys.COND_RESOURCES_DEPLOYED, "True"):
        down = teardown(aw, observed, timing, now)
        if not down.done:
            return _deleting(keys.PHASE_SUSPENDING, down)
        components = down.component_status
        conditions = down.conditions + (
            Condition(keys.COND_RESOURCES_DEPLOYED, "False", keys.PHASE_SUSPENDED, SUSPENDED_MESSAGE),)
    conditions += (Condition(keys.COND_QUOTA_RESERVED, "False", keys.PHASE_SUSPENDED, SUSPENDED_MESSAGE),)
    conditions += clear(aw, keys.COND_PODS_READY, keys.PHASE_SUSPENDED) + clear(aw, keys.COND_UNHEALTHY, keys.PHASE_SUSPENDED)
    return Transition(keys.PHASE_SUSPENDED, "suspended: components deleted", conditions, component_status=components)


def resetting(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition:
    """Delete the components, keep the quota, pause, then deploy again."""
    if aw.suspend:
        return _externally_suspended(aw)
    conditions = clear(aw, keys.COND_PODS_READY, keys.PHASE_RESETTING)
    if aw.holds(keys.COND_RESOURCES_DEPLOYED, "True"):
        down = teardown(aw, observed, timing, now)
        if not down.done:
            return _deleting(keys.PHASE_RESETTING, down, conditions)
        # Written before the pause is judged, so ResourcesDeployed's next True is stamped anew.
        pause = _retry_deadline(aw, timing, now) - now
        return Transition(keys.PHASE_RESETTING, "components deleted for the reset", conditions + down.conditions + (
            Condition(keys.COND_RESOURCES_DEPLOYED, "False", keys.PHASE_RESETTING,
                      "Resources deleted for resetting AppWrapper"),),
            component_status=down.component_status, requeue_after=max(pause, _dt.timedelta(0)))
    deadline = _retry_deadline(aw, timing, now)
    if now < deadline:
        return Transition(keys.PHASE_RESETTING, f"pausing until {deadline}", conditions, requeue_after=deadline - now)
    return Transition(keys.PHASE_RESUMING, "reset complete", conditions + (
        Condition(keys.COND_RESOURCES_DEPLOYED, "True", keys.PHASE_RESUMING, "Reset complete; resuming"),))


def failed(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition | None:
    """Terminal. Hold the resources for deletionOnFailureGracePeriod (unless suspended), then delete them."""
    conditions: tuple[Condition, ...] = ()
    delay = timing.deletion_on_failure_grace
    # Held only while something is deployed and its deletion has not begun: upstream re-pauses a
    # deletion in progress (or a finished one) on its next look, which would restart every timer.
    holding = (delay > _dt.timedelta(0) and not aw.suspend and aw.holds(keys.COND_RESOURCES_DEPLOYED, "True")
               and not aw.holds(keys.COND_DELETING_RESOURCES, "True"))
    if holding:
        deadline = aw.since(keys.COND_DELETING_RESOURCES, "False", now) + delay
        if now < deadline:
            paused = Condition(keys.COND_DELETING_RESOURCES, "False", keys.REASON_DELETION_PAUSED,
                               f"{keys.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION} has value {format_duration(delay)}")
            return Transition(keys.PHASE_FAILED, f"resources kept for debugging until {deadline}", (paused,),
                              requeue_after=deadline - now)
    components = None
    if aw.holds(keys.COND_RESOURCES_DEPLOYED, "True"):
        down = teardown(aw, observed, timing, now)
        if not down.done:
            return _deleting(keys.PHASE_FAILED, down, conditions)
        message = ("Kueue forced resource deletion by suspending AppWrapper" if delay > _dt.timedelta(0) and aw.suspend
                   else "Resources deleted for failed AppWrapper")
        components = down.component_status
        conditions += down.conditions + (Condition(keys.COND_RESOURCES_DEPLOYED, "False", keys.PHASE_FAILED, message),)
    conditions += (Condition(keys.COND_QUOTA_RESERVED, "False", keys.PHASE_FAILED, "No resources deployed"),)
    return Transition(keys.PHASE_FAILED, "failed: nothing left deployed", conditions, component_status=components)


def succeeded(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition | None:
    """Terminal. Keep the finished components for successTTL after deployment, then delete them."""
    if not aw.holds(keys.COND_RESOURCES_DEPLOYED, "True"):
        return None
    deadline = aw.since(keys.COND_RESOURCES_DEPLOYED, "True", now) + timing.success_ttl
    if now < deadline:
        return Transition(keys.PHASE_SUCCEEDED, f"kept until {deadline}", requeue_after=deadline - now)
    down = teardown(aw, observed, timing, now)
    if not down.done:
        return _deleting(keys.PHASE_SUCCEEDED, down)
    message = f"Time to live after success of {format_duration(timing.success_ttl)} expired"
    return Transition(keys.PHASE_SUCCEEDED, "success TTL expired", down.conditions + (
        Condition(keys.COND_RESOURCES_DEPLOYED, "False", keys.PHASE_SUCCEEDED, message),),
        component_status=down.component_status)


def terminating(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Transition:
    """The AppWrapper is being deleted: take its components down, give the quota back, let it go."""
    conditions: tuple[Condition, ...] = ()
    components = None
    phase = aw.phase
    if aw.holds(keys.COND_RESOURCES_DEPLOYED, "True"):
        down = teardown(aw, observed, timing, now)
        if not down.done:
            return _deleting(keys.PHASE_TERMINATING, down)
        components = down.component_status
        conditions = down.conditions + (Condition(keys.COND_RESOURCES_DEPLOYED, "False", keys.PHASE_TERMINATING,
                                                  "Resources successfully deleted"),)
    if aw.holds(keys.COND_QUOTA_RESERVED, "True"):
        conditions += (Condition(keys.COND_QUOTA_RESERVED, "False", keys.PHASE_TERMINATING, "No resources deployed"),)
    return Transition(phase, "teardown complete: finalizer removed", conditions, component_status=components,
                      actions=(RemoveFinalizer(),))


def _externally_suspended(aw: AppWrapperState) -> Transition:
    phase = aw.phase
    return Transition(keys.PHASE_SUSPENDING, f"suspended while {phase}",
                      events=(Event(keys.EVENT_SUSPENDING, f"Externally suspended while in the {phase} phase"),))


def _deleting(phase: str, down: Teardown, conditions: tuple[Condition, ...] = ()) -> Transition:
    """Stay in `phase` while the teardown is under way: its conditions, deletes and next look."""
    return Transition(phase, "deleting components", conditions + down.conditions, component_status=down.component_status,
                      actions=down.actions, requeue_after=down.requeue_after)


def _retry_deadline(aw: AppWrapperState, timing: Timing, now: _dt.datetime) -> _dt.datetime:
    return aw.since(keys.COND_UNHEALTHY, "True", now) + timing.retry_pause


def _reset_or_fail(aw: AppWrapperState, failure: Failure, timing: Timing, conditions: tuple[Condition, ...], event: Event,
                   component_status: tuple[ComponentStatus, ...] | None = None) -> Transition:
    """Resetting while the retry limit allows and the failure policy does not say Fail; else Failed."""
    verdict = judge(failure, timing)
    count = aw.resetting_count
    if verdict.rule is not None or verdict.action != "Reset":
        event = Event(event.reason, f"{event.message} ({verdict.why})", event.type)
    if verdict.action != "Fail" and count < timing.retry_limit:
        increment = 0 if verdict.action == "ResetWithoutCounting" else 1
        return Transition(keys.PHASE_RESETTING, f"{failure.reason}: {verdict.why}", conditions,
                          resetting_count=count + increment, component_status=component_status, events=(event,))
    why = verdict.why if verdict.action == "Fail" else f"retry limit {timing.retry_limit} reached"
    return Transition(keys.PHASE_FAILED, f"{failure.reason}: {why}", conditions, component_status=component_status,
                      events=(event,))


PhaseStep = Callable[[AppWrapperState, Observed, Timing, _dt.datetime], "Transition | None"]
PHASES: dict[str, PhaseStep] = {
    keys.PHASE_EMPTY: empty,
    keys.PHASE_SUSPENDED: suspended_phase,
    keys.PHASE_RESUMING: resuming,
    keys.PHASE_RUNNING: running,
    keys.PHASE_RESETTING: resetting,
    keys.PHASE_SUSPENDING: suspending,
    keys.PHASE_FAILED: failed,
    keys.PHASE_SUCCEEDED: succeeded,
}
