"""`kubectl batchgate stop` and `resume`: the patch each writes, as kueuectl's."""

from __future__ import annotations

from typing import Any

import pytest

from controller.plugin.activation import activation_patch


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
