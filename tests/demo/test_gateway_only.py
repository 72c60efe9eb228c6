"""`batchgate demo --gateway-only`: the samples straight to the real gateway, no cluster: the
demo's own (demo/samples), and upstream's where shared/corpus is beside the clone."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.gateway_only import describe_patch, sample_objects
from demo.samples_scene import SAMPLES
from tests.demo.helpers import run_demo
from tests.upstream_corpus import corpus_dir, upstream


def gateway_only(*args: str) -> tuple[list[str], list[str]]:
    """All the lines the demo printed, and its decisions (one per object and user)."""
    result = run_demo("--gateway-only", *args, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    return lines, [line for line in lines if line.startswith(("alice ", "bob "))]


def test_the_gateway_only_demo_sends_every_sample_from_two_users_through_the_real_gateway() -> None:
    lines, decisions = gateway_only()
    objects = list(sample_objects(SAMPLES))
    assert len(decisions) == 2 * len(objects) and len(objects) == 7
    assert sum(line.startswith("alice ") for line in decisions) == len(objects)
    assert any("allowed queue-name=default-queue, user=alice, userid=uid-alice-1001" in line for line in decisions)
    assert any("allowed user=bob, userid=uid-bob-1002" in line for line in decisions)
    assert any("DENIED" in line and "allowedKinds.wrapped" in line for line in decisions)
    assert any("DENIED" in line and "QueueRequired" in line for line in decisions)
    assert {line.rsplit("(", 1)[1] for line in decisions} == {f"{name})" for name, _ in objects}
    assert lines[0].startswith("gateway: gunicorn over TLS at https://127.0.0.1:")
    allowed = sum(" allowed " in line for line in decisions)
    assert lines[-1] == (f"{len(decisions)} decisions: {allowed} allowed, {len(decisions) - allowed} denied; "
                         f"{len(decisions) * 2} audit lines (one per /mutate and /validate call)")


@upstream
def test_the_gateway_only_demo_judges_every_upstream_sample() -> None:
    _, decisions = gateway_only("--samples", str(corpus_dir()))
    objects = list(sample_objects(corpus_dir()))
    assert len(objects) >= 15, "the corpus should hold the AppWrapper and MLBatch samples"
    assert len(decisions) == 2 * len(objects)
    assert any("DENIED" in line and "allowedKinds.wrapped" in line for line in decisions)


@pytest.mark.parametrize("mode", [pytest.param(["--gateway-only"], id="without a cluster"),
                                  pytest.param([], id="on the local cluster")])
def test_the_demo_fails_loudly_without_its_samples(tmp_path: Path, mode: list[str]) -> None:
    result = run_demo(*mode, "--samples", str(tmp_path / "nowhere"), timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == f"batchgate demo: --samples: no directory {tmp_path / 'nowhere'}\n"


def test_the_gateway_only_demo_says_when_a_directory_holds_no_manifests(tmp_path: Path) -> None:
    result = run_demo("--gateway-only", "--samples", str(tmp_path), timeout=60)
    assert (result.returncode, result.stderr) == (2, f"batchgate demo: no Kubernetes objects under {tmp_path}\n")


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
