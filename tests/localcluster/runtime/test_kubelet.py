"""We test the simulated kubelet: behaviour parsing (and its errors), every phase under each
restartPolicy, the crash-loop backoff, readiness, deletion and the log lines."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.sim.behavior import BEHAVIOR_ANNOTATION, Behavior, BehaviorError, parse_behavior
from localcluster.sim.kubelet import log_lines, observe, restart_delay, terminate
from tests.localcluster.runtime.builders import T0, a_container, a_pod, at

S = dt.timedelta(seconds=1)


def scripted(behavior: dict | str | None, restart_policy: str = "Always", **kw):
    annotations = {}
    if behavior is not None:
        annotations[BEHAVIOR_ANNOTATION] = behavior if isinstance(behavior, str) else json.dumps(behavior)
    return a_pod("p", annotations=annotations, restartPolicy=restart_policy, node="n1", **kw)


def view(pod, seconds):
    return observe(pod, start_time=T0, host_ip="10.0.0.1", pod_ip="10.1.0.5", now=at(seconds))


def summary(v):
    cs = v.status["containerStatuses"][0]
    state = next(iter(cs["state"]))
    detail = cs["state"][state].get("reason") or cs["state"][state].get("exitCode", "")
    return (v.status["phase"], state, detail, cs["restartCount"], cs["ready"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(None, Behavior(), id="no annotation runs forever"),
        pytest.param('{"startAfter": "2s", "runFor": "1m30s", "exitCode": 3}',
                     Behavior(start_after=2 * S, run_for=90 * S, exit_code=3), id="go durations and an exit code"),
        pytest.param('{"crashAfter": "500ms", "neverReady": true}',
                     Behavior(crash_after=dt.timedelta(milliseconds=500), never_ready=True), id="crash and never ready"),
    ],
)
def test_behavior_annotations_parse(text, expected):
    annotations = {} if text is None else {BEHAVIOR_ANNOTATION: text}
    assert parse_behavior(annotations) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{runFor: 3s}", "not JSON", id="broken json"),
        pytest.param('["30s"]', "must be a JSON object", id="not an object"),
        pytest.param('{"runfor": "30s"}', "unknown field(s) runfor", id="a misspelt key"),
        pytest.param('{"runFor": "30 seconds"}', "runFor: invalid duration '30 seconds'", id="a duration not in go form"),
        pytest.param('{"runFor": 30}', "runFor: duration must be a string", id="a bare number"),
        pytest.param('{"exitCode": 256}', "exitCode: must be an integer from 0 to 255", id="an exit code out of range"),
        pytest.param('{"neverReady": "yes"}', "neverReady: must be true or false", id="a non boolean flag"),
    ],
)
def test_bad_behavior_annotations_say_what_is_wrong(text, message):
    with pytest.raises(BehaviorError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_behavior({BEHAVIOR_ANNOTATION: text})


@pytest.mark.parametrize(
    ("behavior", "policy", "seconds", "expected"),
    [
        pytest.param({"startAfter": "2s"}, "Always", 1, ("Pending", "waiting", "ContainerCreating", 0, False),
                     id="before startAfter the container is being created"),
        pytest.param({"startAfter": "2s"}, "Always", 2, ("Running", "running", "", 0, True),
                     id="after startAfter it runs ready"),
        pytest.param(None, "Always", 86400, ("Running", "running", "", 0, True), id="without a script it runs forever"),
        pytest.param({"runFor": "5s"}, "Never", 5, ("Succeeded", "terminated", "Completed", 0, False),
                     id="a run that exits 0 succeeds under Never"),
        pytest.param({"runFor": "5s", "exitCode": 2}, "Never", 6, ("Failed", "terminated", "Error", 0, False),
                     id="a run that exits non-zero fails under Never"),
        pytest.param({"runFor": "5s"}, "OnFailure", 9, ("Succeeded", "terminated", "Completed", 0, False),
                     id="OnFailure does not restart a success"),
        pytest.param({"runFor": "5s", "exitCode": 1}, "OnFailure", 5, ("Running", "running", "", 1, True),
                     id="OnFailure restarts a failure at once the first time"),
        pytest.param({"runFor": "5s", "exitCode": 1}, "OnFailure", 12, ("Running", "waiting", "CrashLoopBackOff", 1, False),
                     id="the second failure backs off"),
        pytest.param({"runFor": "5s", "exitCode": 1}, "OnFailure", 20, ("Running", "running", "", 2, True),
                     id="after 10s of backoff it runs again"),
        pytest.param({"runFor": "5s"}, "Always", 6, ("Running", "running", "", 1, True),
                     id="Always restarts even a success"),
        pytest.param({"crashAfter": "1s"}, "Always", 3, ("Running", "waiting", "CrashLoopBackOff", 1, False),
                     id="a crashing container loops in CrashLoopBackOff"),
        pytest.param({"neverReady": True}, "Always", 30, ("Running", "running", "", 0, False),
                     id="neverReady runs but is never ready"),
    ],
)
def test_pods_move_through_their_phases_as_scripted(behavior, policy, seconds, expected):
    assert summary(view(scripted(behavior, policy), seconds)) == expected


def test_backoff_doubles_up_to_five_minutes():
    pod = scripted({"crashAfter": "1s"}, "Always")
    waits = []
    t = 0.0
    for _ in range(9):
        v = view(pod, t)
        while v.moment.stage != "backoff":
            t = (v.wake_at - T0).total_seconds()
            v = view(pod, t)
        waits.append(int(v.moment.backoff.total_seconds()))
        t = (v.wake_at - T0).total_seconds()
    assert waits == [10, 20, 40, 80, 160, 300, 300, 300, 300]


def test_a_pod_crash_looping_for_days_waits_five_minutes_and_does_not_overflow():
    """The restart number that a week of crash-looping reaches once overflowed the doubling."""
    assert restart_delay(10_000, dt.timedelta(seconds=1)) == dt.timedelta(minutes=5)
    v = view(scripted({"crashAfter": "1s"}, "Always"), 7 * 24 * 3600.0)
    assert v.status["containerStatuses"][0]["restartCount"] > 2000


def test_status_carries_ips_times_conditions_and_exit_details():
    v = view(scripted({"startAfter": "1s", "runFor": "4s", "exitCode": 7}, "Never"), 10)
    status = v.status
    assert (status["hostIP"], status["podIP"], status["startTime"]) == ("10.0.0.1", "10.1.0.5", "2026-01-01T00:00:00Z")
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated == {**terminated, "exitCode": 7, "startedAt": "2026-01-01T00:00:01Z", "finishedAt": "2026-01-01T00:00:05Z"}
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "False",
                          "ContainersReady": "False", "PodScheduled": "True"}
    assert v.wake_at is None


def test_the_ready_condition_turns_true_when_the_container_starts():
    v = view(scripted({"startAfter": "3s"}), 5)
    ready = next(c for c in v.status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["lastTransitionTime"]) == ("True", "2026-01-01T00:00:03Z")


def test_init_containers_complete_when_the_pod_starts():
    pod = scripted({"startAfter": "2s"}, init_containers=[a_container("setup")])
    before, after = view(pod, 1), view(pod, 2)
    assert before.status["initContainerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert after.status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_a_bad_annotation_fails_only_that_pod_with_a_clear_message():
    v = view(scripted('{"runFor": "soon"}'), 0)
    assert v.status["phase"] == "Failed"
    assert v.status["reason"] == "InvalidBehavior"
    assert v.status["message"] == "invalid p behavior annotation: runFor: invalid duration 'soon': expected forms like 30s, 1m30s, 1.5h"
    assert v.error and v.wake_at is None


def test_deleting_a_running_pod_stops_its_containers():
    running = scripted(None)
    running["status"] = view(running, 5).status
    status = terminate(running, at(9))
    state = status["containerStatuses"][0]["state"]["terminated"]
    assert (status["phase"], state["exitCode"], state["finishedAt"]) == ("Failed", 143, "2026-01-01T00:00:09Z")


def test_logs_say_what_the_container_did():
    pod = scripted({"runFor": "5s", "exitCode": 3}, "Never")
    pod["status"] = view(pod, 8).status
    assert log_lines(pod, "main", at(8)) == [
        "[localcluster] simulated container main of pod default/p",
        "exited with code 3 (Error) at 2026-01-01T00:00:05Z",
    ]


@settings(max_examples=80, deadline=None)
@given(
    run=st.integers(min_value=0, max_value=20),
    code=st.integers(min_value=0, max_value=3),
    policy=st.sampled_from(["Always", "OnFailure", "Never"]),
    times=st.lists(st.floats(min_value=0, max_value=2000), min_size=2, max_size=6),
)
def test_restart_counts_never_go_down_and_terminal_phases_stay(run, code, policy, times):
    pod = scripted({"runFor": f"{run}s", "exitCode": code}, policy)
    previous = None
    for t in sorted(times):
        phase, _, _, restarts, _ = summary(view(pod, t))
        if previous:
            assert restarts >= previous[1]
            if previous[0] in ("Succeeded", "Failed"):
                assert phase == previous[0]
        previous = (phase, restarts)
