"""`batchgate demo --gateway-only`: the corpus straight to the real gateway, no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.gateway_only import corpus_objects, describe_patch
from tests.demo.helpers import corpus_dir, run_demo


def test_the_gateway_only_demo_sends_every_corpus_object_from_two_users_through_the_real_gateway() -> None:
    result = run_demo("--gateway-only", "--corpus", str(corpus_dir()), timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    decisions = [line for line in lines if line.startswith(("alice ", "bob "))]
    objects = list(corpus_objects(corpus_dir()))
    assert len(objects) >= 15, "the corpus should hold the AppWrapper and MLBatch samples"
    assert len(decisions) == 2 * len(objects)
    assert sum(line.startswith("alice ") for line in decisions) == len(objects)
    assert any("allowed user=alice, userid=uid-alice-1001" in line for line in decisions)
    assert any("allowed user=bob, userid=uid-bob-1002" in line for line in decisions)
    assert any("DENIED" in line and "allowedKinds.wrapped" in line for line in decisions)
    assert lines[0].startswith("gateway: gunicorn over TLS at https://127.0.0.1:")
    allowed = sum(" allowed " in line for line in decisions)
    assert lines[-1] == (f"{len(decisions)} decisions: {allowed} allowed, {len(decisions) - allowed} denied; "
                         f"{len(decisions) * 2} audit lines (one per /mutate and /validate call)")


@pytest.mark.parametrize("mode", [pytest.param(["--gateway-only"], id="without a cluster"),
                                  pytest.param([], id="on the local cluster")])
def test_the_demo_fails_loudly_without_a_corpus(tmp_path: Path, mode: list[str]) -> None:
    result = run_demo(*mode, "--corpus", str(tmp_path / "nowhere"), timeout=60)
    assert result.returncode == 2 and "not found" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("ops", "summary"),
    [
        pytest.param([], "no change", id="an empty patch is no change"),
        pytest.param([{"op": "add", "path": "/metadata/labels", "value": {"a/user": "x", "b": "y"}}], "user=x, b=y",
                     id="a whole labels map reads as its labels"),
        pytest.param([{"op": "add", "path": "/spec/a/schedulerName", "value": "s"},
                      {"op": "add", "path": "/spec/b/schedulerName", "value": "s"}], "schedulerName=s (x2)",
                     id="repeats are counted"),
        pytest.param([{"op": "remove", "path": "/spec/x"}], "removed /spec/x", id="a removal names its path"),
    ],
)
def test_the_gateway_only_demo_describes_a_patch_by_what_it_sets(ops: list, summary: str) -> None:
    assert describe_patch(ops) == summary
