"""`kubectl batchgate stop` and `resume`: the patch each writes, as kueuectl's."""

from __future__ import annotations

from typing import Any

import pytest

from controller.plugin.activation import activation_patch, done_line, patched


@pytest.mark.parametrize("kind, verb, keep, patch", [
    pytest.param("Workload", "stop", False, {"spec": {"active": False}}, id="stopping a workload deactivates it"),
    pytest.param("Workload", "resume", False, {"spec": {"active": True}}, id="resuming a workload activates it"),
    pytest.param("ClusterQueue", "stop", False, {"spec": {"stopPolicy": "HoldAndDrain"}},
                 id="stopping a queue drains what runs"),
    pytest.param("LocalQueue", "stop", True, {"spec": {"stopPolicy": "Hold"}},
                 id="stopping a queue keeping what runs only holds"),
    pytest.param("LocalQueue", "resume", False, {"spec": {"stopPolicy": "None"}}, id="resuming a queue clears its policy"),
])
def test_stop_and_resume_patches(kind: str, verb: Any, keep: bool, patch: dict[str, Any]) -> None:
    assert activation_patch(kind, verb, keep) == patch


@pytest.mark.parametrize("dry_run, line", [
    pytest.param("none", "workload.kueue.x-k8s.io/w stopped", id="a change says what it did"),
    pytest.param("server", "workload.kueue.x-k8s.io/w stopped (server dry run)", id="a server dry run says so"),
    pytest.param("client", "workload.kueue.x-k8s.io/w stopped (client dry run)", id="a client dry run says so"),
])
def test_done_lines(dry_run: str, line: str) -> None:
    assert done_line("Workload", "kueue.x-k8s.io", "w", "stop", dry_run) == line


def test_a_client_dry_run_changes_the_spec_field_and_keeps_the_rest() -> None:
    queue = {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"cohort": "c", "stopPolicy": "None"}}
    assert patched(queue, activation_patch("ClusterQueue", "stop")) == {
        "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"cohort": "c", "stopPolicy": "HoldAndDrain"}}
