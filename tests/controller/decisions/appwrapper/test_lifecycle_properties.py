"""Properties of the pure AppWrapper lifecycle over random histories (docs/appwrapper-acceptance.md).

A small simulated world (the AppWrapper, its components, their pods, the nodes Autopilot flags,
the clock) is driven by random events: Kueue admitting or suspending, pods appearing, running,
failing with exit codes, succeeding, components vanishing or failing, nodes flagged EVICT, time
passing, the user deleting the AppWrapper. After each event the lifecycle reconciles as the
adapter would: `decide`, apply the Transition's status patch and actions to the world (creates
get random outcomes and go through `after_create`), and again until nothing changes. Every
step must keep upstream's invariants; the expected behaviour comes from upstream's phase machine, not from
the implementation.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st


from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.api.appwrapper_status import read_appwrapper_state as state
from batchgate.clock import format_time
from batchgate.policy import DEFAULT_POLICY
from controller.decisions.appwrapper.lifecycle import after_create, decide
from controller.decisions.appwrapper.pods import count_pods
from controller.decisions.appwrapper.timing import timing_for
from controller.decisions.appwrapper.transition import (AddFinalizer, ComponentState, CreateComponents,
                                                       CreateOutcome, DeleteComponents, DeletePods, Observed,
                                                       RemoveFinalizer, Transition, status_patch)

FT = "workload.codeflare.dev.appwrapper/"  # the fault-tolerance annotations
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
NODES = ("node-a", "node-b")
STEPS_PER_EVENT = 8

# Upstream's phase machine: where each phase may go in one step (staying put is always allowed). Deletion
# (deletionTimestamp with our finalizer) may move any phase to Terminating.
EDGES: dict[str, set[str]] = {
    "": {"Suspended"},
    "Suspended": {"Resuming"},
    "Resuming": {"Running", "Suspending", "Resetting", "Failed"},
    "Running": {"Suspending", "Resetting", "Failed", "Succeeded"},
    "Resetting": {"Resuming", "Suspending"},
    "Suspending": {"Suspended"},
    "Failed": set(),
    "Succeeded": set(),
    "Terminating": set(),
}
TERMINAL = ("Failed", "Succeeded")


def pod_component(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "resources": {"requests": {"cpu": "1", keys.GPU_RESOURCE: "1"}}}]}}


def job_component(name: str, parallelism: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": parallelism, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "i",
                                                          "resources": {"requests": {"cpu": "1"}}}]}}}}


@dataclass
class Pod:
    component: int
    name: str
    node: str
    phase: str = "Pending"
    exit_code: int = 0
    deleting: bool = False

    def wire(self, gpu: bool) -> dict[str, Any]:
        resources = {"requests": {"cpu": "1", **({keys.GPU_RESOURCE: "1"} if gpu else {})}}
        status: dict[str, Any] = {"phase": self.phase}
        if self.phase in ("Succeeded", "Failed"):
            status["containerStatuses"] = [{"name": "c", "state": {"terminated": {"exitCode": self.exit_code}}}]
        metadata: dict[str, Any] = {"name": self.name}
        if self.deleting:
            metadata["deletionTimestamp"] = format_time(START)
        return {"metadata": metadata, "spec": {"nodeName": self.node, "containers": [{"name": "c", "resources": resources}]},
                "status": status}


@dataclass
class Component:
    exists: bool = False
    deleting: bool = False
    failure: tuple[str, str] | None = None


@dataclass
class World:
    aw: dict[str, Any]
    gpu: list[bool]
    replicas: list[int]
    retry_limit: int
    now: dt.datetime = START
    components: dict[int, Component] = field(default_factory=dict)
    pods: list[Pod] = field(default_factory=list)
    evict: set[str] = field(default_factory=set)
    silent: set[str] = field(default_factory=set)  # nodes whose kubelet stopped answering
    outcomes: list[str] = field(default_factory=list)  # how the next creates go; "created" once used up
    gone: bool = False
    serial: int = 0

    def next_outcome(self) -> str:
        return self.outcomes.pop(0) if self.outcomes else "created"

    def observed(self) -> Observed:
        states = {i: ComponentState(c.exists, c.deleting, c.failure) for i, c in self.components.items()}
        for i in range(len(self.gpu)):
            states.setdefault(i, ComponentState(False))
        pods = [p.wire(self.gpu[p.component]) for p in self.pods]
        return Observed(states, count_pods(pods, frozenset(self.evict)))


def phase(aw: dict[str, Any]) -> str:
    return (aw.get("status") or {}).get("phase") or ""


def cond(aw: dict[str, Any], kind: str) -> str | None:
    for c in (aw.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c.get("status")
    return None


def reason(aw: dict[str, Any], kind: str) -> str | None:
    return next((c.get("reason") for c in (aw.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def stamps(aw: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c.get("status"), c.get("lastTransitionTime"))
            for c in (aw.get("status") or {}).get("conditions") or []}


def apply_patch(aw: dict[str, Any], patch: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(aw)
    if patch:
        out.setdefault("status", {}).update(copy.deepcopy(patch["status"]))
    return out


def check_step(world: World, before: dict[str, Any], after: dict[str, Any], step: Transition) -> None:
    """The invariants of one step from `before` to `after`."""
    old, new = phase(before), phase(after)
    deleting = bool(before["metadata"].get("deletionTimestamp"))
    if old in TERMINAL and not deleting:
        assert new == old, f"{old} is terminal but the lifecycle moved it to {new}: {step.why}"
    if new != old and not (deleting and new == "Terminating"):
        assert new in EDGES[old], f"{old} -> {new} is not an edge of the phase machine: {step.why}"
    count = (after.get("status") or {}).get("resettingCount", 0)
    assert count <= world.retry_limit, f"resettingCount {count} exceeds retryLimit {world.retry_limit}: {step.why}"
    assert count >= (before.get("status") or {}).get("resettingCount", 0), f"resettingCount went down: {step.why}"
    if new == "Resetting" and not deleting:  # a deleted AppWrapper gives everything back, whatever its phase
        assert cond(after, "QuotaReserved") == "True", f"quota given back while Resetting: {step.why}"
    if any(isinstance(a, CreateComponents) for a in step.actions):
        assert not before["spec"].get("suspend"), f"components created while suspended: {step.why}"
        assert old not in TERMINAL, f"components created for a {old} AppWrapper: {step.why}"
        assert not deleting, f"components created for an AppWrapper being deleted: {step.why}"
    leftovers = [i for i, c in world.components.items() if c.exists], len(world.pods)
    if any(isinstance(a, RemoveFinalizer) for a in step.actions):  # deletion: only once nothing is left
        assert leftovers == ([], 0), f"finalizer removed with components/pods {leftovers} left: {step.why}"
    # Quota goes back only once nothing runs any more (a success's finished pods may stay).
    if cond(before, "QuotaReserved") == "True" and cond(after, "QuotaReserved") != "True" and new != "Succeeded":
        assert leftovers == ([], 0), f"quota released with components/pods {leftovers} left: {step.why}"
    # The grace periods run from these stamps (lifecycle and deletion), so one may move only with its status.
    # (Unhealthy is left out: upstream clears and sets it again within one step, giving a new failure a new stamp.)
    for kind, (status, stamp) in stamps(before).items():
        after_status, after_stamp = stamps(after).get(kind, (None, None))
        if kind in ("ResourcesDeployed", "DeletingResources") and after_status == status:
            assert after_stamp == stamp, f"{kind} stayed {status} but its lastTransitionTime moved: {step.why}"
    # A deletion once begun (DeletingResources True) ends only as DeletionComplete.
    if cond(before, "DeletingResources") == "True" and cond(after, "DeletingResources") == "False":
        assert reason(after, "DeletingResources") == "DeletionComplete", (
            f"a deletion in progress went back to {reason(after, 'DeletingResources')}: {step.why}")
    if new == "Succeeded" and old != "Succeeded":
        pods = world.observed().pods
        assert pods.failed == 0, f"Succeeded with {pods.failed} failed pods: {step.why}"


def perform(world: World, step: Transition) -> None:
    """Apply one Transition as the adapter does: status first, then the actions."""
    before = world.aw
    world.aw = apply_patch(before, status_patch(state(before), step, world.now))
    check_step(world, before, world.aw, step)
    meta = world.aw["metadata"]
    for action in step.actions:
        if isinstance(action, AddFinalizer):
            meta["finalizers"] = [*meta.get("finalizers", []), keys.APPWRAPPER_FINALIZER]
        elif isinstance(action, RemoveFinalizer):
            meta["finalizers"] = [f for f in meta.get("finalizers", []) if f != keys.APPWRAPPER_FINALIZER]
            world.gone = True
        elif isinstance(action, DeleteComponents):
            for index in action.indices:
                world.components.pop(index, None)
                # A finished pod goes at once (grace 0); a live one terminates first.
                world.pods = [p for p in world.pods if p.component != index or p.phase not in ("Succeeded", "Failed")]
                for p in world.pods:
                    if p.component == index:
                        p.deleting = True
        elif isinstance(action, DeletePods):
            world.pods.clear()
        elif isinstance(action, CreateComponents):
            results: list[CreateOutcome] = []
            for index in action.indices:
                kind = world.next_outcome()
                if kind == "created":
                    world.components[index] = Component(exists=True)
                    results.append(CreateOutcome(index, name=f"c{index}"))
                    continue
                results.append(CreateOutcome(index, error=f"{kind} error", fatal=kind == "fatal"))
                break
            created = after_create(state(world.aw), tuple(results), timing(world), world.now)
            perform(world, created)


def timing(world: World):  # -> Timing
    return timing_for(world.aw["metadata"].get("annotations") or {}, DEFAULT_POLICY.fault_tolerance)


def reconcile(world: World) -> None:
    for _ in range(STEPS_PER_EVENT):
        if world.gone:
            return
        before = copy.deepcopy(world.aw)
        step = decide(state(world.aw), world.observed(), timing(world), world.now)
        if step is None:
            return
        perform(world, step)
        if world.aw == before and not step.actions:
            return


TICK = st.tuples(st.just("tick"), st.integers(1, 20))
LONG_TICK = st.tuples(st.just("tick"), st.integers(60, 600))
POD_APPEARS = st.tuples(st.just("pod appears"), st.integers(0, 1), st.sampled_from(NODES))
POD_RUNS = st.tuples(st.just("pod runs"), st.integers(0, 3))
POD_SUCCEEDS = st.tuples(st.just("pod succeeds"), st.integers(0, 3))
# Weighted by repetition: the things that move a workload forward happen more often than faults.
EVENTS = st.one_of(
    TICK, TICK, LONG_TICK, POD_APPEARS, POD_APPEARS, POD_APPEARS, POD_RUNS, POD_RUNS, POD_SUCCEEDS, POD_SUCCEEDS,
    st.tuples(st.just("all pods appear")), st.tuples(st.just("all pods run")), st.tuples(st.just("all pods succeed")),
    st.tuples(st.just("suspend"), st.booleans()), st.tuples(st.just("suspend"), st.booleans()),
    st.tuples(st.just("pod fails"), st.integers(0, 3), st.sampled_from([1, 3, 42, 137])),
    st.tuples(st.just("component vanishes"), st.integers(0, 1)),
    st.tuples(st.just("component fails"), st.integers(0, 1), st.sampled_from(["BackoffLimitExceeded",
                                                                              "DeadlineExceeded"])),
    st.tuples(st.just("node evict"), st.sampled_from(NODES), st.booleans()),
    st.tuples(st.just("node silent"), st.sampled_from(NODES), st.booleans()),
    st.tuples(st.just("delete"), st.just(0)),
)


def happen(world: World, event: tuple[Any, ...]) -> None:
    """One thing the cluster, Kueue or the user does to the world."""
    kind = event[0]
    live = [p for p in world.pods if not p.deleting and p.phase in ("Pending", "Running")]
    if kind == "tick":
        world.now += dt.timedelta(seconds=event[1])
        # The kubelets finished terminating the deleted pods, except on silent nodes (only a force delete helps).
        world.pods = [p for p in world.pods if not p.deleting or p.node in world.silent]
    elif kind == "suspend":
        world.aw["spec"]["suspend"] = event[1]
    elif kind == "pod appears":
        component = world.components.get(event[1] % len(world.gpu))
        if component is not None and component.exists and not component.deleting:
            world.serial += 1
            world.pods.append(Pod(event[1] % len(world.gpu), f"p{world.serial}", event[2]))
    elif kind == "all pods appear":
        for index, component in list(world.components.items()):
            for _ in range(world.replicas[index] if component.exists and not component.deleting else 0):
                happen(world, ("pod appears", index, NODES[world.serial % len(NODES)]))
    elif kind in ("all pods run", "all pods succeed"):
        for pod in live:
            pod.phase = "Running" if kind == "all pods run" else "Succeeded"
    elif kind in ("pod runs", "pod fails", "pod succeeds") and live:
        pod = live[event[1] % len(live)]
        pod.phase = {"pod runs": "Running", "pod fails": "Failed", "pod succeeds": "Succeeded"}[kind]
        pod.exit_code = event[2] if kind == "pod fails" else 0
        if kind == "pod fails" and not world.gpu[pod.component]:  # the Job controller replaces a failed pod
            happen(world, ("pod appears", pod.component, pod.node))
    elif kind == "component vanishes":
        world.components.pop(event[1] % len(world.gpu), None)
    elif kind == "component fails":
        component = world.components.get(event[1] % len(world.gpu))
        if component is not None:
            component.failure = (event[2], "the Job failed")
    elif kind == "node evict":
        (world.evict.add if event[2] else world.evict.discard)(event[1])
    elif kind == "node silent":
        (world.silent.add if event[2] else world.silent.discard)(event[1])
    elif kind == "delete" and not world.aw["metadata"].get("deletionTimestamp"):
        if keys.APPWRAPPER_FINALIZER in world.aw["metadata"].get("finalizers", []):
            world.aw["metadata"]["deletionTimestamp"] = format_time(world.now)
        else:
            world.gone = True


def new_world(shapes: list[str], retry_limit: int, suspend: bool, grace: dict[str, str],
              extra: dict[str, str] | None = None, outcomes: list[str] | None = None) -> World:
    """An AppWrapper of "gpu pod" / "job of 2" components with these fault-tolerance annotations."""
    annotations = {FT + "retryLimit": str(retry_limit), **{FT + k: v for k, v in grace.items()}, **(extra or {})}
    templates = [pod_component(f"c{i}") if s == "gpu pod" else job_component(f"c{i}", 2) for i, s in enumerate(shapes)]
    aw = {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
          "metadata": {"name": "aw", "namespace": "ns", "uid": "uid-1", "annotations": annotations},
          "spec": {"suspend": suspend, "components": [{"template": t} for t in templates]}}
    return World(aw, [s == "gpu pod" for s in shapes], [1 if s == "gpu pod" else 2 for s in shapes], retry_limit,
                 outcomes=list(outcomes or []))


GRACE_CHOICES = {
    "admissionGracePeriodDuration": ["0s", "30s", "60s"],
    "warmupGracePeriodDuration": ["0s", "60s", "120s"],
    "failureGracePeriodDuration": ["0s", "20s"],
    "retryPausePeriodDuration": ["0s", "15s"],
    "forcefulDeletionGracePeriodDuration": ["0s", "40s"],
    "deletionOnFailureGracePeriodDuration": ["0s", "30s"],
    "successTTLDuration": ["1s", "90s"],
}


@st.composite
def worlds(draw: st.DrawFn) -> World:
    extra = {}
    rules = draw(st.sampled_from([None, '[{"action": "Fail", "onExitCodes": [42]}]',
                                  '[{"action": "ResetWithoutCounting", "onReasons": ["FoundFailedPods"]}]']))
    if rules:
        extra[keys.FAILURE_POLICY_ANNOTATION] = rules
    if draw(st.booleans()):
        extra[FT + "terminalExitCodes"] = "3"
    return new_world(
        shapes=draw(st.lists(st.sampled_from(["gpu pod", "job of 2"]), min_size=1, max_size=2)),
        retry_limit=draw(st.integers(0, 3)),
        suspend=draw(st.sampled_from([True, False, False])),
        grace={key: draw(st.sampled_from(choices)) for key, choices in GRACE_CHOICES.items()},
        extra=extra,
        outcomes=draw(st.lists(st.sampled_from(["created"] * 8 + ["transient"] * 3 + ["fatal"]), max_size=8)),
    )


SLOW = {"admissionGracePeriodDuration": "60s", "warmupGracePeriodDuration": "120s",
        "failureGracePeriodDuration": "20s", "retryPausePeriodDuration": "15s"}


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.lists(EVENTS, min_size=5, max_size=60))
# Upstream's gotcha: success needs zero failed pods, even when a replacement pod made up the count.
@example(new_world(["job of 2"], 3, False, SLOW), [("all pods appear",), ("pod fails", 0, 1), ("all pods succeed",)])
# a create that failed transiently leaves it Resuming; suspending it then must not create anything.
@example(new_world(["gpu pod"], 3, False, SLOW, outcomes=["transient"] * 10), [("suspend", True), ("tick", 2)])
# Autopilot resets do not count, but still stop at the limit; a counted reset after them still counts.
@example(new_world(["gpu pod"], 1, False, {**SLOW, "retryPausePeriodDuration": "0s"}),
         [("all pods appear",), ("all pods run",), ("node evict", "node-a", True), ("tick", 1), ("node evict", "node-a", False),
          ("all pods appear",), ("pod fails", 0, 1), ("tick", 30), ("tick", 30), ("all pods appear",), ("pod fails", 0, 1),
          ("tick", 30)])
def test_random_histories_keep_the_lifecycle_invariants(world: World, events: list[tuple[Any, ...]]) -> None:
    live_through(world, events)


def live_through(world: World, events: list[tuple[Any, ...]]) -> None:
    world = copy.deepcopy(world)
    reconcile(world)
    for event in events:
        if world.gone:
            break
        happen(world, event)
        reconcile(world)


def test_a_failed_appwrapper_kept_for_debugging_then_stuck_on_a_silent_node_is_deleted_not_paused_again() -> None:
    """Upstream's deletion protocol: the deletion of a Failed AppWrapper kept for
    deletionOnFailureGracePeriod, whose pod then hangs on a silent node, runs on to the forced deletion
    instead of pausing again."""
    world = new_world(["gpu pod", "gpu pod"], 0, False, {**SLOW, "failureGracePeriodDuration": "0s",
                                                         "deletionOnFailureGracePeriodDuration": "30s",
                                                         "forcefulDeletionGracePeriodDuration": "40s"})
    reconcile(world)
    for event in [("all pods appear",), ("all pods run",), ("pod fails", 0, 1), ("node silent", "node-b", True),
                  ("tick", 31), ("tick", 20), ("tick", 30)]:
        happen(world, event)
        reconcile(world)
    assert world.pods == [] and cond(world.aw, "ResourcesDeployed") == "False"
