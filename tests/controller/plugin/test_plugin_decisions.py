"""`kubectl batchgate`'s pure parts: argument checks, kueuectl's columns and kubectl's table, the
stop/resume patches, ages as kubectl prints them, and `why` from the check report."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchgate.command_line import BadInput, error_line
from batchgate.durations import human_duration
from controller.plugin import tables
from controller.plugin.activation import activation_patch, done_line, patched
from controller.plugin.args import parse, verb_first, why_target
from controller.plugin.why import render_text, why
from dashboard.views.queues import pending_rows
from tests.controller.check.builders import run_check
from tests.controller.decisions.trace_builders import T0, basic, workload


@pytest.mark.parametrize("argv, message", [
    pytest.param(["list", "clusterqueues", "--status", "pending"], "--status applies to workloads only",
                 id="a workload filter on clusterqueues is refused"),
    pytest.param(["list", "rf", "-c", "cq"], "--clusterqueue applies to workloads and localqueues only",
                 id="a clusterqueue filter on flavors is refused"),
    pytest.param(["list", "wl", "--active", "true"], "--active applies to clusterqueues only",
                 id="the active filter applies to clusterqueues only"),
    pytest.param(["list", "wl", "-n", "a", "-A"], "-n/--namespace and -A/--all-namespaces do not go together: give one",
                 id="a namespace and all namespaces together are refused"),
    pytest.param(["stop", "workload", "w", "--keep-already-running"],
                 "--keep-already-running applies to localqueues and clusterqueues only",
                 id="keeping running workloads is a queue's option"),
    pytest.param(["why", "job"], "'job' is not KIND/NAME: give e.g. job/train, appwrapper/sweep or workload/NAME",
                 id="why without a name says the form"),
    pytest.param(["why", "deployment/web"], "batchgate queues no kind 'deployment': give one of AppWrapper, Job, "
                 "PyTorchJob, RayCluster, RayJob, Workload (e.g. job/train)", id="why of a kind batchgate does not queue"),
    pytest.param(["list", "pods"], "argument RESOURCE: invalid choice: 'pods' (choose from ",
                 id="an unknown resource lists the known ones"),
])
def test_bad_arguments_are_one_line_naming_the_fix(argv: list[str], message: str) -> None:
    """argparse's own messages (the last case) quote choices differently across Python versions."""
    with pytest.raises(BadInput) as caught:
        parse(argv)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.parametrize("words, expected", [
    pytest.param(["-n", "team-a", "list", "workloads"], ["list", "-n", "team-a", "workloads"],
                 id="a namespace before the verb goes after it"),
    pytest.param(["--context", "alice", "--kubeconfig=/k", "-A", "list", "wl", "-o", "name"],
                 ["list", "--context", "alice", "--kubeconfig=/k", "-A", "wl", "-o", "name"],
                 id="every global flag form before the verb, the verb's own flags left where they are"),
    pytest.param(["-nteam", "stop", "wl", "w"], ["stop", "-nteam", "wl", "w"], id="a short flag with its value attached"),
    pytest.param(["-n", "team", "--help"], ["--help", "-n", "team"], id="help stops the scan like a verb"),
    pytest.param(["list", "-n", "x", "wl"], ["list", "-n", "x", "wl"], id="flags after the verb are left alone"),
])
def test_global_flags_before_the_verb_go_after_it(words: list[str], expected: list[str]) -> None:
    assert verb_first(words) == expected


@pytest.mark.parametrize("words, message", [
    pytest.param(["-o", "name", "list", "wl"], "unknown flag before the command: -o (there: --kubeconfig, --context, "
                 "-n, --namespace, -A; the others after the command)", id="a verb's own flag before it is refused"),
    pytest.param(["--context"], "flag needs an argument: --context", id="a flag without its value"),
    pytest.param(["-n", "team"], "no command after the flags: give one, e.g. list workloads", id="flags and no verb"),
])
def test_what_cannot_go_before_the_verb(words: list[str], message: str) -> None:
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        verb_first(words)


def test_flags_before_the_verb_parse_as_after_it() -> None:
    args = parse(verb_first(["--context", "alice", "-n", "team-a", "list", "workloads"]))
    assert (args.verb, args.resource, args.context, args.namespace) == ("list", "workloads", "alice", "team-a")


@pytest.mark.parametrize("program, expected", [
    pytest.param("/venv/bin/kubectl-batchgate", ("error: bad", 1), id="under the plugin name errors read as kubectl's"),
    pytest.param("/venv/bin/batchgate", ("batchgate check: bad", 2), id="under batchgate's name as its commands' own"),
])
def test_bad_input_reads_as_the_program_run(program: str, expected: tuple[str, int]) -> None:
    assert error_line("batchgate check", "bad", program) == expected


@pytest.mark.parametrize("target, expected", [
    pytest.param("job/train", ("Job", "train"), id="a kind by its lower-case name"),
    pytest.param("appwrappers.workload.codeflare.dev/a", ("AppWrapper", "a"), id="a kind by plural and group"),
    pytest.param("PyTorchJob/p", ("PyTorchJob", "p"), id="a kind as written in manifests"),
    pytest.param("wl/job-train-1a2b3", ("Workload", "job-train-1a2b3"), id="a Workload by kueuectl's short name"),
])
def test_why_targets(target: str, expected: tuple[str, str]) -> None:
    assert why_target(target) == expected


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


@pytest.mark.parametrize("seconds, text", [
    pytest.param(59, "59s", id="under two minutes in seconds"),
    pytest.param(150, "2m30s", id="under ten minutes with seconds"),
    pytest.param(3 * 3600 + 120, "3h2m", id="under eight hours with minutes"),
    pytest.param(30 * 3600, "30h", id="under two days in hours"),
    pytest.param(3 * 86400 + 3600, "3d1h", id="under eight days with hours"),
    pytest.param(400 * 86400, "400d", id="under two years in days"),
    pytest.param(3 * 365 * 86400 + 86400, "3y1d", id="years with days"),
    pytest.param(-5, "<invalid>", id="a time in the future"),
])
def test_ages_read_as_kubectls(seconds: int, text: str) -> None:
    assert human_duration(_dt.timedelta(seconds=seconds)) == text


def test_a_table_pads_as_kubectls_tabwriter_and_adds_namespaces_under_all() -> None:
    table = tables.Table(("Name", "Long Column Name", "Reason"), (("a", "x", "r1"), ("bbbbbbbbbbbb", "y", "r2")), wide=1)
    assert tables.render(table, wide=False) == ("NAME           LONG COLUMN NAME\n"
                                                "a              x\n"
                                                "bbbbbbbbbbbb   y\n")
    assert tables.render(table, wide=True, namespaces=["n1", "n2"]).splitlines()[0] == (
        "NAMESPACE   NAME           LONG COLUMN NAME   REASON")


WORKLOADS = [*basic(cpu=10), workload("done", admitted_to="cq", cpu=4, created=0),
             workload("first", cpu=8, created=10), workload("second", cpu=2, created=20)]


def test_workload_rows_carry_status_position_and_exec_time() -> None:
    report = run_check(WORKLOADS)
    pending = {row.name: row for row in pending_rows(report.pending)}
    now = T0 + _dt.timedelta(minutes=5)
    table = tables.workload_table([o for o in WORKLOADS if o["kind"] == "Workload"], {("ns", "lq"): "cq"}, pending, now)
    rows = {row[0]: row for row in table.rows}
    assert rows["done"][3:9] == ("lq", "cq", "ADMITTED", "", "5m", "5m")
    assert rows["first"][5:7] == ("PENDING", "1") and "insufficient unused quota for cpu" in rows["first"][-1]
    assert rows["second"][5:7] == ("PENDING", "2")


@given(st.sets(st.sampled_from(("pending", "quotareserved", "admitted", "finished")), min_size=1))
def test_a_status_filter_keeps_exactly_the_workloads_in_those_statuses(statuses: set[str]) -> None:
    kept = tables.filter_workloads([o for o in WORKLOADS if o["kind"] == "Workload"], "", "", frozenset(statuses))
    assert all(tables.workload_status(w).lower() in statuses for w in kept)
    assert len(kept) == sum(s in statuses for s in ("admitted", "pending", "pending"))


def test_why_a_workload_waits_names_the_shortfall_and_who_goes_first() -> None:
    report = run_check(WORKLOADS)
    second = next(o for o in WORKLOADS if o["metadata"]["name"] == "second")
    answer = why(report, "ns/second", second["spec"], "PENDING", "cq", owner="job/second")
    assert (answer.position, answer.reason_source) == (2, "computed")
    assert answer.let_in == ("1 workload ahead of it in ClusterQueue cq go first (higher priority, or queued earlier)",)
    first = next(o for o in WORKLOADS if o["metadata"]["name"] == "first")
    text = render_text(why(report, "ns/first", first["spec"], "PENDING", "cq"))
    assert "Status:        PENDING, position 1 in ClusterQueue cq" in text
    assert ("  - 2 more cpu free in ClusterQueue cq (it asks 8, flavor default has 6): as admitted workloads finish, "
            "or with more quota") in text


def test_why_a_stopped_queue_says_how_to_resume_it() -> None:
    objects = [*basic(cpu=10, stop="Hold"), workload("w", cpu=1)]
    w = objects[-1]
    answer = why(run_check(objects), "ns/w", {**w["spec"], "active": False}, "PENDING", "cq")
    assert "resume its ClusterQueue: kubectl batchgate resume clusterqueue cq" in answer.let_in
    assert "it is stopped (spec.active: false): kubectl batchgate resume workload w -n ns" in answer.let_in
    assert "ClusterQueue cq: stopPolicy is Hold: it admits nothing new" in answer.let_in


def test_why_names_a_missing_controller_first() -> None:
    report = run_check(WORKLOADS)
    second = next(o for o in WORKLOADS if o["metadata"]["name"] == "second")
    answer = why(report, "ns/second", second["spec"], "PENDING", "cq", no_controller="none has run here (no Lease x/y)")
    assert answer.let_in[0] == "a running batchgate controller: none has run here (no Lease x/y)"
    done = next(o for o in WORKLOADS if o["metadata"]["name"] == "done")
    assert why(report, "ns/done", done["spec"], "ADMITTED", "cq", no_controller="down").let_in == ("nothing: it is admitted",)
