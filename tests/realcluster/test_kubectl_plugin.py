"""`kubectl batchgate` through the real kubectl on the real control plane: kubectl finds the
installed `kubectl-batchgate` on PATH, and the plugin honours kubectl's connection flags.

The module's objects: a ClusterQueue with 8 GPUs, a Workload admitted to it that holds all 8, a
Workload waiting for 4 (queued first), and a suspended Job whose Workload waits for 4 behind it.
No batchgate controller runs, so pending reasons are computed by the `check` code."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from realcluster.cluster import RealCluster
from realcluster.setup import wait_established
from tests.controller.decisions.trace_builders import cluster_queue, flavor, group, local_queue, pod_set
from tests.realcluster_fixtures import real_kubectl

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds" / "batchgate"
GPU = "nvidia.com/gpu"
WORKLOAD_CRD = "workloads.kueue.x-k8s.io"
KUEUECTL_WORKLOAD_COLUMNS = ["NAME", "JOB TYPE", "JOB NAME", "LOCALQUEUE", "CLUSTERQUEUE", "STATUS",
                             "POSITION IN QUEUE", "EXEC TIME", "AGE"]

Run = Callable[..., subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class Scene:
    plugin: Run  # kubectl batchgate ARGS, as admin
    kubectl: Run
    kubectl_raw: Run  # kubectl ARGS as given (no flags appended), with the plugins on PATH
    kubeconfig: str
    ns: str
    cq: str
    job_workload: str
    before_crds: subprocess.CompletedProcess[str] | None  # a plugin verb before batchgate's CRDs were there


def _plugin_path(tmp: Path) -> str:
    """A PATH whose first directory holds the installed `kubectl-batchgate` and its completion
    program `kubectl_complete-batchgate` (the entry points, not wrappers)."""
    bin_dir = tmp / "plugins"
    bin_dir.mkdir()
    for program in ("kubectl-batchgate", "kubectl_complete-batchgate"):
        installed = Path(sys.executable).parent / program
        assert installed.exists(), f"{program} is not installed: run make .venv/.installed"
        (bin_dir / program).symlink_to(installed)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def _status(admitted_to: str, flavor_name: str, gpus: int) -> dict[str, Any]:
    when = "2026-01-01T00:00:00Z"
    return {"status": {
        "admission": {"clusterQueue": admitted_to, "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {GPU: flavor_name}, "resourceUsage": {GPU: str(gpus)}}]},
        "conditions": [{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": when}
                       for t in ("QuotaReserved", "Admitted")]}}


def _workload(name: str, ns: str, gpus: int, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": meta,
            "spec": {"queueName": "team", "podSets": [pod_set(**{GPU: gpus})]}}


@pytest.fixture(scope="module")
def scene(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    tmp = tmp_path_factory.mktemp("kubectl-plugin")
    binary, cache = real_kubectl(), tmp / "cache"
    env = {**os.environ, "PATH": _plugin_path(tmp)}

    def kubectl(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([binary, *args, "--kubeconfig", str(real_cluster.kubeconfig), "--cache-dir", str(cache),
                               "--context", "admin"], input=input, capture_output=True, text=True, timeout=60, env=env)
        assert not check or done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
        return done

    def plugin(*args: str, check: bool = True, connect: bool = True,
               input: str | None = None) -> subprocess.CompletedProcess[str]:
        flags = ["--kubeconfig", str(real_cluster.kubeconfig), "--context", "admin"] if connect else []
        done = subprocess.run([binary, "batchgate", *args, *flags], input=input, capture_output=True, text=True,
                              timeout=60, env=env)
        assert not check or done.returncode == 0, f"kubectl batchgate {' '.join(args)}: {done.stdout}{done.stderr}"
        return done

    def kubectl_raw(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, env=env)

    served = kubectl("get", "crd", WORKLOAD_CRD, check=False).returncode == 0
    before = None if served else plugin("list", "workloads", check=False)
    kubectl("apply", "--server-side", "-k", str(CRDS))
    wait_established(real_cluster.url, str(real_cluster.ca_file), real_cluster.token("admin"),
                     [{"kind": "CustomResourceDefinition", "metadata": {"name": name}}
                      for name in (WORKLOAD_CRD, "clusterqueues.kueue.x-k8s.io")])
    suffix = uuid.uuid4().hex[:6]
    ns, cq, rf = f"plugin-{suffix}", f"plugin-cq-{suffix}", f"plugin-rf-{suffix}"
    kubectl("create", "namespace", ns)
    objects = [flavor(rf, labels={"gpu-type": "a100"}), cluster_queue(cq, group({rf: {GPU: 8}})),
               {**local_queue("team", cq, ns=ns), "apiVersion": "kueue.x-k8s.io/v1beta1"},
               _workload("running", ns, 8), _workload("waiting", ns, 4)]
    objects[0]["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    kubectl("patch", "workload", "running", "-n", ns, "--subresource=status", "--type=merge",
            "-p", json.dumps(_status(cq, rf, 8)))
    # creationTimestamp has whole seconds and equal times are ordered by name ("job-tune..." before
    # "waiting"): the Job's Workload is created in a later second, so "waiting" is queued first
    # on a quiet machine too (a full run put it second)
    queued = kubectl("get", "workload", "waiting", "-n", ns, "-o", "jsonpath={.metadata.creationTimestamp}").stdout
    later = dt.datetime.fromisoformat(queued.replace("Z", "+00:00")) + dt.timedelta(seconds=1)
    time.sleep(max(0.0, (later - dt.datetime.now(dt.timezone.utc)).total_seconds()))
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"namespace": ns, "name": "tune", "labels": {"kueue.x-k8s.io/queue-name": "team"}},
           "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "busybox", "resources": {"requests": {GPU: "4"}, "limits": {GPU: "4"}}}]}}}}
    created = json.loads(kubectl("create", "-f", "-", "-o", "json", input=json.dumps(job)).stdout)
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "tune", "uid": created["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    kubectl("create", "-f", "-", input=json.dumps(_workload("job-tune-1a2b3", ns, 4, owner)))
    yield Scene(plugin, kubectl, kubectl_raw, str(real_cluster.kubeconfig), ns, cq, "job-tune-1a2b3", before)
    kubectl("delete", "namespace", ns, "--wait=false")
    kubectl("delete", "clusterqueue", cq, "--wait=false")
    kubectl("delete", "resourceflavor", rf, "--wait=false")


def _table(text: str) -> list[list[str]]:
    """kubectl's table as cells: columns start where the header's words do."""
    lines = text.rstrip("\n").splitlines()
    header = lines[0]
    starts = [i for i in range(len(header)) if header[i] != " " and (i == 0 or header[i - 2:i] == "  ")]
    return [[line[a:b].strip() for a, b in zip(starts, [*starts[1:], None])] for line in lines]


def test_a_plugin_verb_on_a_cluster_without_batchgate_says_so_in_one_line(scene: Scene) -> None:
    if scene.before_crds is None:
        pytest.skip("an earlier module installed batchgate's CRDs on the session cluster")
    assert scene.before_crds.returncode == 1 and scene.before_crds.stdout == ""
    assert scene.before_crds.stderr.splitlines() == [
        "error: the cluster does not serve workloads.kueue.x-k8s.io/v1beta1: batchgate is not installed there "
        "(docs/install.md; its CRDs alone: kubectl apply -k manifests/crds)"]


def test_list_workloads_shows_kueuectls_columns_with_status_and_position(scene: Scene) -> None:
    rows = _table(scene.plugin("list", "workloads", "-n", scene.ns).stdout)
    assert rows[0] == KUEUECTL_WORKLOAD_COLUMNS
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["running"][3:7] == ["team", scene.cq, "ADMITTED", ""] and by_name["running"][7]
    assert by_name["waiting"][3:7] == ["team", scene.cq, "PENDING", "1"]
    assert by_name[scene.job_workload][1:7] == ["job.batch", "tune", "team", scene.cq, "PENDING", "2"]


def test_list_filters_and_outputs_as_kubectl_does(scene: Scene) -> None:
    names = scene.plugin("list", "wl", "-A", "--status", "pending", "-o", "name").stdout.split()
    assert f"workload.kueue.x-k8s.io/waiting" in names and "workload.kueue.x-k8s.io/running" not in names
    admitted = json.loads(scene.plugin("list", "workloads", "-n", scene.ns, "-c", scene.cq, "-o", "json").stdout)
    assert [w["metadata"]["name"] for w in admitted["items"]] == ["running"]
    wide = _table(scene.plugin("list", "workloads", "-n", scene.ns, "-o", "wide").stdout)
    assert wide[0][-2:] == ["PRIORITY", "REASON"]
    assert "insufficient unused quota for nvidia.com/gpu" in {r[0]: r for r in wide}["waiting"][-1]
    everywhere = _table(scene.plugin("list", "workloads", "-A").stdout)
    assert everywhere[0][0] == "NAMESPACE" and [scene.ns, "waiting"] in [r[:2] for r in everywhere]
    empty = scene.plugin("list", "workloads", "-n", scene.ns, "-q", "no-such-queue")
    assert (empty.stdout, empty.stderr) == ("", f"No resources found in {scene.ns} namespace.\n")


def test_list_queues_and_flavors_with_kueuectls_columns(scene: Scene) -> None:
    lqs = _table(scene.plugin("list", "localqueues", "-n", scene.ns).stdout)
    assert lqs[0] == ["NAME", "CLUSTERQUEUE", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "AGE"]
    assert lqs[1][:2] == ["team", scene.cq]
    cqs = {row[0]: row for row in _table(scene.plugin("list", "cq").stdout)}
    assert cqs["NAME"] == ["NAME", "COHORT", "PENDING WORKLOADS", "ADMITTED WORKLOADS", "ACTIVE", "AGE"]
    assert cqs[scene.cq][4] == "false"  # no controller runs to mark it Active
    flavors = yaml.safe_load(scene.plugin("list", "resourceflavors", "-o", "yaml").stdout)
    assert any(f["spec"].get("nodeLabels") == {"gpu-type": "a100"} for f in flavors["items"])


def test_stop_and_resume_set_the_fields_kueuectl_sets(scene: Scene) -> None:
    def fields() -> tuple[str, str, bool]:
        """The ClusterQueue's and the LocalQueue's stopPolicy and the Workload's active, in one read."""
        items = json.loads(scene.kubectl("get", f"clusterqueue/{scene.cq}", "localqueue/team", "workload/waiting",
                                         "-n", scene.ns, "-o", "json").stdout)["items"]
        cq, lq, wl = (item["spec"] for item in items)
        return cq.get("stopPolicy", "None"), lq.get("stopPolicy", "None"), wl.get("active", True)

    done = scene.plugin("stop", "clusterqueue", scene.cq)
    assert done.stdout == f"clusterqueue.kueue.x-k8s.io/{scene.cq} stopped\n"
    scene.plugin("stop", "localqueue", "team", "-n", scene.ns, "--keep-already-running")
    assert scene.plugin("stop", "wl", "waiting", "-n", scene.ns).stdout == "workload.kueue.x-k8s.io/waiting stopped\n"
    assert fields() == ("HoldAndDrain", "Hold", False)
    scene.plugin("resume", "cq", scene.cq)
    scene.plugin("resume", "lq", "team", "-n", scene.ns)
    assert scene.plugin("resume", "workload", "waiting", "-n", scene.ns).stdout.endswith("/waiting resumed\n")
    assert fields() == ("None", "None", True)


def test_why_a_job_waits_names_its_queue_position_reason_and_what_would_let_it_in(scene: Scene) -> None:
    text = scene.plugin("why", "job/tune", "-n", scene.ns).stdout
    assert f"Workload:      {scene.ns}/{scene.job_workload} (of job/tune)" in text
    assert f"Status:        PENDING, position 2 in ClusterQueue {scene.cq}" in text
    assert "Waits because: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu" in text
    assert f"4 more nvidia.com/gpu free in ClusterQueue {scene.cq}" in text
    assert f"1 workload ahead of it in ClusterQueue {scene.cq}" in text
    # No controller runs in this module (an earlier module's may have left an expired Lease).
    assert "  - a running batchgate controller: none " in text
    answer = json.loads(scene.plugin("why", "workload/running", "-n", scene.ns, "-o", "json").stdout)
    assert (answer["status"], answer["clusterQueue"], answer["letIn"]) == ("ADMITTED", scene.cq, ["nothing: it is admitted"])


def test_errors_read_as_kubectls_one_line_and_exit_1(scene: Scene) -> None:
    missing = scene.plugin("why", "job/nope", "-n", scene.ns, check=False)
    assert (missing.returncode, missing.stderr) == (1, 'error: jobs.batch "nope" not found\n')
    unqueued = scene.plugin("stop", "workload", "nope", "-n", scene.ns, check=False)
    assert (unqueued.returncode, unqueued.stderr) == (1, 'error: workloads.kueue.x-k8s.io "nope" not found\n')
    bad = scene.plugin("list", "clusterqueues", "--status", "pending", check=False)
    assert (bad.returncode, bad.stderr) == (1, "error: --status applies to workloads only\n")


def test_check_and_review_are_reachable_under_the_plugin_name(scene: Scene) -> None:
    checked = scene.plugin("check", "-o", "json", check=False)
    assert checked.returncode in (0, 1), checked.stderr
    assert f"{scene.ns}/waiting" in [p["name"] for p in json.loads(checked.stdout)["pending"]]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"namespace": scene.ns, "name": "offline"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}
    reviewed = scene.plugin("review", "-f", "-", "-o", "json", connect=False, input=json.dumps(job), check=False)
    assert reviewed.stdout and reviewed.returncode in (0, 1), reviewed.stderr


def test_kubectls_global_flags_go_before_the_verb_too(scene: Scene) -> None:
    listed = scene.plugin("--context", "admin", "-n", scene.ns, "--kubeconfig", scene.kubeconfig, "list", "wl",
                          "-o", "name", connect=False)
    assert "workload.kueue.x-k8s.io/waiting" in listed.stdout.split()


def test_stop_prints_the_changed_object_as_asked_and_a_dry_run_keeps_nothing(scene: Scene) -> None:
    stopped = scene.plugin("stop", "workload", "waiting", "-n", scene.ns, "-o", "name")
    resumed = scene.plugin("resume", "workload", "waiting", "-n", scene.ns, "-o", "json")
    assert stopped.stdout == "workload.kueue.x-k8s.io/waiting\n"
    assert json.loads(resumed.stdout)["spec"]["active"] is True
    tried = yaml.safe_load(scene.plugin("stop", "cq", scene.cq, "--dry-run", "server", "-o", "yaml").stdout)
    assert tried["spec"]["stopPolicy"] == "HoldAndDrain"
    kept = scene.kubectl("get", "clusterqueue", scene.cq, "-o", "jsonpath={.spec.stopPolicy}").stdout
    assert kept in ("", "None")


def test_check_and_review_errors_read_as_kubectls_under_the_plugin_name(scene: Scene) -> None:
    checked = scene.plugin("check", "--bogus", check=False)
    assert (checked.returncode, checked.stdout, checked.stderr) == (1, "", "error: unrecognized arguments: --bogus\n")
    reviewed = scene.plugin("review", "-f", "/no/such/file", connect=False, check=False)
    assert (reviewed.returncode, reviewed.stderr) == (1, "error: cannot read /no/such/file: No such file or directory\n")


def test_kubectl_completes_object_names_through_the_plugin(scene: Scene) -> None:
    """`kubectl batchgate stop workload <TAB>`: kubectl runs the installed `kubectl_complete-batchgate`."""
    flags = ("--kubeconfig", scene.kubeconfig, "--context", "admin", "-n", scene.ns)
    workloads = scene.kubectl_raw("__complete", "batchgate", *flags, "stop", "workload", "")
    assert workloads.stdout.splitlines() == [scene.job_workload, "running", "waiting", ":4"], workloads.stderr
    jobs = scene.kubectl_raw("__complete", "batchgate", "why", *flags, "job/")
    assert jobs.stdout.splitlines() == ["job/tune", ":4"], jobs.stderr
