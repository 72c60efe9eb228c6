"""Reading the framework layout the gateway writes into a PyTorch AppWrapper (scene 3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batchgate import keys
from demo.framework_scene import components, layout_hosts


def template(*slots: dict[str, Any]) -> dict[str, Any]:
    layout = json.dumps({"framework": "pytorch", "slots": list(slots)})
    return {"metadata": {"annotations": {keys.FRAMEWORK_LAYOUT_ANNOTATION: layout}}, "spec": {}}


MASTER = {"role": "master", "prefix": "aw-master-", "start": 0, "count": 1}
WORKERS = {"role": "worker", "prefix": "aw-worker-", "start": 0, "count": 2}


@pytest.mark.parametrize(
    ("obj", "hosts"),
    [
        pytest.param({"spec": {}}, [], id="an object without a layout promises no hosts"),
        pytest.param({"spec": {"a": template(MASTER, WORKERS)}}, ["aw-master-0", "aw-worker-0", "aw-worker-1"],
                     id="slots expand to prefix plus index in rank order"),
        pytest.param({"spec": {"a": template(MASTER, WORKERS), "b": template(MASTER, WORKERS)}},
                     ["aw-master-0", "aw-worker-0", "aw-worker-1"],
                     id="every role's template carries the same layout and each host is named once"),
        pytest.param({"spec": {"a": template({"prefix": "job-", "start": 1, "count": 2})}}, ["job-1", "job-2"],
                     id="an Indexed Job's workers start after the master's index"),
    ],
)
def test_the_layout_names_the_hosts_of_every_role(obj: dict[str, Any], hosts: list[str]) -> None:
    assert layout_hosts(obj) == hosts


def test_components_read_as_kind_and_name() -> None:
    aw = {"spec": {"components": [{"template": {"kind": "PyTorchJob", "metadata": {"name": "m"}}},
                                  {"template": {"kind": "Service", "metadata": {"name": "m"}}}]}}
    assert components(aw) == ["PyTorchJob m", "Service m"]
