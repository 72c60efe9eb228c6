"""`batchgate simulate --plot`: the picture is drawn from the simulation's own step reports — one
panel per ClusterQueue with a line per flavor and resource, and exactly the admissions and
preemptions the run reported — and bad input gets the same clear errors as without a plot.

The SVG is read back as a user's browser would get it: matplotlib writes each artist's gid as
the `id` of its SVG group, so the panels, lines and marks can be counted in the file itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.simulate_plot import queue_lines
from controller.simulation import run_trace
from tests.controller.decisions.quota.test_flavor_assignment import COHORT_SCENARIOS
from tests.controller.test_simulate_cli import EXAMPLE, LATE_ARRIVALS, PREEMPTION, ROOT, TOO_BIG, simulate
from tests.controller.decisions.trace_builders import basic, trace

KNOWN = [
    pytest.param(yaml.safe_load(EXAMPLE.read_text()), id="the documented example: reclaiming from a borrower"),
    pytest.param(PREEMPTION, id="a preemption inside one ClusterQueue"),
    pytest.param(LATE_ARRIVALS, id="late arrivals over advancing time"),
    pytest.param(TOO_BIG, id="a workload that never fits"),
    *[pytest.param(p.values[0], id=f"cohort: {p.id}") for p in COHORT_SCENARIOS[:4]],
]


def cluster_queues(t: dict) -> set[str]:
    objects = list(t.get("objects", [])) + [o for step in t.get("steps", []) for o in step.get("apply", [])]
    return {o["metadata"]["name"] for o in objects if o.get("kind") == "ClusterQueue"}


def svg_ids(path: Path) -> list[str]:
    return re.findall(r'<g id="((?:queue|usage|admission|preemption):[^"]*)"', path.read_text())


@pytest.mark.parametrize("known", KNOWN)
def test_the_plot_has_a_panel_per_cluster_queue_and_every_admission_and_preemption_marked(
        tmp_path: Path, known: dict) -> None:
    out = tmp_path / "usage.svg"
    result = simulate(tmp_path, known, "-o", "json", "--plot", str(out))
    assert result.returncode == 0, result.stderr
    steps = json.loads(result.stdout)["steps"]
    ids = svg_ids(out)
    queues = cluster_queues(known)
    assert {i.split(":", 1)[1] for i in ids if i.startswith("queue:")} == queues
    assert {i.split(":")[1] for i in ids if i.startswith("usage:")} == queues, "every queue has its usage lines"

    def marked(kind: str) -> dict[tuple[str, int], int]:
        return {(q, int(step)): int(n) for q, step, n in (i.split(":")[1:] for i in ids if i.startswith(kind + ":"))}

    admitted: dict[tuple[str, int], int] = {}
    for step, report in enumerate(steps):
        for a in report["admitted"]:
            admitted[(a["clusterQueue"], step)] = admitted.get((a["clusterQueue"], step), 0) + 1
    assert marked("admission") == admitted
    assert {step: n for (_, step), n in marked("preemption").items()} == {
        step: len(r["preempted"]) for step, r in enumerate(steps) if r["preempted"]}


def test_usage_is_a_percentage_of_nominal_quota_at_the_end_of_each_step() -> None:
    reports = run_trace(PREEMPTION)  # quota 10 cpu: low (8) holds it, is preempted, high (5) takes its place
    lines, unmeasured = queue_lines(reports, "cq")
    assert [(line.label, line.percent) for line in lines] == [("default/cpu", [80.0, 50.0])]
    assert unmeasured == []


def test_a_png_is_written_when_the_name_asks_for_one(tmp_path: Path) -> None:
    out = tmp_path / "usage.png"
    result = simulate(tmp_path, PREEMPTION, "--plot", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert result.stdout.startswith("step 0:"), "the table is printed as without --plot"


def test_a_trace_simulate_rejects_gets_the_same_error_with_plot_as_without(tmp_path: Path) -> None:
    bad = trace(basic(cpu="-1"))
    without = simulate(tmp_path, bad)
    with_plot = simulate(tmp_path, bad, "--plot", str(tmp_path / "usage.svg"))
    assert (with_plot.returncode, with_plot.stdout, with_plot.stderr) == (without.returncode, without.stdout,
                                                                          without.stderr)
    assert without.returncode == 2 and "nominalQuota: must not be negative" in without.stderr
    assert not (tmp_path / "usage.svg").exists()


@pytest.mark.parametrize(("name", "message"), [
    pytest.param("usage.pdf", "the file name must end in .svg or .png", id="an extension we do not write"),
    pytest.param("usage", "the file name must end in .svg or .png", id="no extension at all"),
    pytest.param("missing/usage.svg", "no such directory", id="a directory that does not exist"),
])
def test_a_bad_plot_path_gets_one_clear_line_and_exit_2(tmp_path: Path, name: str, message: str) -> None:
    result = simulate(tmp_path, PREEMPTION, "--plot", str(tmp_path / name))
    assert result.returncode == 2
    assert result.stdout == "", "refused before anything runs"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def test_an_unwritable_plot_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "usage.svg").mkdir()  # a directory where the file should go
    result = simulate(tmp_path, PREEMPTION, "--plot", str(tmp_path / "usage.svg"))
    assert result.returncode == 2
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr


def test_without_matplotlib_plot_says_how_to_get_it_and_simulate_still_works(tmp_path: Path) -> None:
    (tmp_path / "trace.yaml").write_text(yaml.safe_dump(PREEMPTION))
    hide = "import sys; sys.modules['matplotlib'] = None; from batchgate.cli import main; sys.exit(main(sys.argv[1:]))"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", hide, "simulate", str(tmp_path / "trace.yaml"), *args],
                              capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})

    plain = run()
    assert plain.returncode == 0 and plain.stdout.startswith("step 0:"), plain.stderr
    plotted = run("--plot", str(tmp_path / "usage.svg"))
    assert (plotted.returncode, plotted.stdout) == (2, ""), "refused before the simulation runs"
    (line,) = plotted.stderr.strip().splitlines()
    assert "pip install 'batchgate[plot]'" in line
    assert not (tmp_path / "usage.svg").exists()
