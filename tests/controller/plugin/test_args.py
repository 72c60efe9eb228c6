"""`kubectl batchgate`'s arguments: bad ones are one line naming the fix; `why` targets by any kind name."""

from __future__ import annotations

import pytest

from batchgate.command_line import BadInput
from controller.plugin.args import parse, why_target


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
