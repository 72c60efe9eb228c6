"""`batchgate simulate`: bad traces get one line naming the step and field (exit 2); good ones
print docs/simulate.md's JSON or a table. Runs the real command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.simulation import TraceError, run_trace
from tests.controller.decisions.trace_builders import basic, cluster_queue, group, quota, trace, workload

ROOT = Path(__file__).resolve().parents[2]


def simulate(tmp_path: Path, content: str | dict, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "trace.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return subprocess.run([sys.executable, "-m", "batchgate.cli", "simulate", str(path), *args],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


BAD_TRACES = [
    pytest.param(trace(basic(cpu="-1")), "objects[1] (ClusterQueue cq): spec.resourceGroups[0].flavors[0]."
                 "resources[0].nominalQuota: must not be negative, got '-1'", id="a negative quota names its field"),
    pytest.param(trace(basic() + [workload("a", cpu="lots")]), "objects[3] (Workload a): spec.podSets[0].template.spec."
                 "containers[0].resources.requests.cpu: invalid quantity 'lots'",
                 id="an unparsable request names its field"),
    pytest.param(trace([cluster_queue("cq", group({"default": {"cpu": quota(5, lend=6)}}), cohort="c")]),
                 "objects[0] (ClusterQueue cq): spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: "
                 "must be less than or equal to the nominalQuota", id="a lendingLimit above nominal is rejected"),
    pytest.param(trace([cluster_queue("cq", group({"default": {"cpu": quota(5, borrow=1)}}))]),
                 "objects[0] (ClusterQueue cq): spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: "
                 "must be nil when cohort is empty", id="a borrowingLimit without a cohort is rejected"),
    pytest.param(trace([cluster_queue("cq", cpu=1, reclaim="Never", borrow_within="LowerPriority")]),
                 "objects[0] (ClusterQueue cq): spec.preemption: reclaimWithinCohort=Never and "
                 "borrowWithinCohort.Policy!=Never", id="borrowWithinCohort without reclaim is rejected"),
    pytest.param(trace([{"kind": "Pod", "metadata": {"name": "p"}}]),
                 "objects[0] (Pod p): kind: must be one of", id="an unknown kind is named"),
    pytest.param(trace(basic(), {"cycles": "forever"}), "steps[0].cycles: must be a non-negative integer or until-idle",
                 id="a bad cycles value names the step"),
    pytest.param(trace(basic(), {}, {"advance": "soon"}), "steps[1].advance: invalid duration 'soon'",
                 id="a bad advance duration names the step"),
    pytest.param(trace(basic(), {"finish": ["ns/ghost"]}), "steps[0].finish[0]: no such Workload",
                 id="finishing an unknown workload names it"),
    pytest.param(trace(basic(), {"wait": 3}), "steps[0]: unknown keys ['wait']", id="an unknown step key is named"),
    pytest.param(trace(basic() + [workload("a", count=-1, cpu=1)]), "spec.podSets[0].count: must be at least 0",
                 id="a negative pod count names its field"),
    pytest.param({"objects": [], "steps": [], "extra": 1}, "trace: unknown keys ['extra']",
                 id="an unknown top-level key is named"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_TRACES)
def test_a_bad_trace_is_refused_with_the_step_and_field(bad: dict, message: str) -> None:
    with pytest.raises(TraceError) as err:
        run_trace(bad)
    assert message in str(err.value)


def test_the_command_prints_one_line_and_exits_2_for_a_bad_trace(tmp_path: Path) -> None:
    result = simulate(tmp_path, trace(basic(cpu="-1")))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nominalQuota: must not be negative" in lines[0]


@pytest.mark.parametrize("content", [pytest.param("objects: [\n", id="broken YAML"),
                                     pytest.param("- just a list\n", id="a list instead of a mapping")])
def test_unreadable_traces_exit_2_without_a_traceback(tmp_path: Path, content: str) -> None:
    result = simulate(tmp_path, content)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


PREEMPTION = trace(basic(cpu=10, within="LowerPriority") + [
    workload("low", cpu=8, priority=0, admitted_to="cq"), workload("high", cpu=5, priority=10, created=1)],
    {"cycles": 1}, {})
TOO_BIG = trace(basic(cpu=10) + [workload("a", cpu=5), workload("b", cpu=50, created=1)])
EXAMPLE = ROOT / "docs" / "simulate-example.yaml"


def _without_timestamp(obj: dict) -> dict:
    del obj["metadata"]["creationTimestamp"]
    return obj


LATE_ARRIVALS = trace(basic(cpu=10) + [workload("a", cpu=8, admitted_to="cq")],
                      {"advance": "1m", "apply": [_without_timestamp(workload("late", cpu=6))]},
                      {"apply": [workload("early", cpu=6, created=30)], "finish": ["ns/a"]})


def test_json_output_has_the_design_shape(tmp_path: Path) -> None:
    result = simulate(tmp_path, PREEMPTION, "-o", "json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == {"steps": [
        {"admitted": [], "preempted": [{"name": "ns/low", "reason": "InClusterQueue", "by": "ns/high"}],
         "pending": [{"name": "ns/high", "queue": "active",
                      "reason": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                                "default, 3 more needed. Pending the preemption of 1 workload(s)"}],
         "counts": {"pendingActive": 1, "pendingInadmissible": 0, "reserving": 1, "admitted": 0}},
        {"admitted": [{"name": "ns/high", "clusterQueue": "cq", "flavors": {"main": {"cpu": "default"}}}],
         "preempted": [],
         "pending": [{"name": "ns/low", "queue": "inadmissible",
                      "reason": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                                "default, 3 more needed"}],
         "counts": {"pendingActive": 0, "pendingInadmissible": 1, "reserving": 1, "admitted": 1}},
    ]}


def test_the_table_tells_the_same_story(tmp_path: Path) -> None:
    result = simulate(tmp_path, TOO_BIG)
    assert result.returncode == 0, result.stderr
    assert "ADMITTED   ns/a" in result.stdout
    assert "PENDING    ns/b" in result.stdout and "request > maximum capacity (50 > 10)" in result.stdout


def test_the_documented_example_runs(tmp_path: Path) -> None:
    result = simulate(tmp_path, EXAMPLE.read_text(), "-o", "json")
    assert result.returncode == 0, result.stderr
    steps = json.loads(result.stdout)["steps"]
    assert [p["reason"] for p in steps[0]["preempted"]] == ["InCohortReclamation"]
    assert [a["name"] for a in steps[1]["admitted"]] == ["team-a/finetune"]
    assert [a["name"] for a in steps[2]["admitted"]] == ["team-b/pretrain"]


def test_workloads_applied_later_are_created_at_the_simulated_time() -> None:
    reports = run_trace(LATE_ARRIVALS)
    assert [a["name"] for a in reports[1].admitted] == ["ns/early"]
    assert [p["name"] for p in reports[1].pending] == ["ns/late"]




def test_the_table_shown_in_the_docs_is_what_the_command_prints(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "simulate.md").read_text()
    shown = doc.split("$ batchgate simulate docs/simulate-example.yaml\n", 1)[1].split("```", 1)[0].strip()
    result = simulate(tmp_path, (ROOT / "docs" / "simulate-example.yaml").read_text())
    assert result.stdout.strip() == shown
