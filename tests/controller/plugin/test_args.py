"""`kubectl batchgate`'s arguments: bad ones are one line naming the fix; `why` targets by any kind name."""

from __future__ import annotations

import pytest

from batchgate.command_line import BadInput
from controller.plugin.args import parse, verb_first, why_target


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


@pytest.mark.parametrize("target, expected", [
    pytest.param("job/train", ("Job", "train"), id="a kind by its lower-case name"),
    pytest.param("appwrappers.workload.codeflare.dev/a", ("AppWrapper", "a"), id="a kind by plural and group"),
    pytest.param("PyTorchJob/p", ("PyTorchJob", "p"), id="a kind as written in manifests"),
    pytest.param("wl/job-train-1a2b3", ("Workload", "job-train-1a2b3"), id="a Workload by kueuectl's short name"),
])
def test_why_targets(target: str, expected: tuple[str, str]) -> None:
    assert why_target(target) == expected


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
