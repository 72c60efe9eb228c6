"""`batchgate demo` end to end: the cluster tests/clusters.py picks (Kubernetes' own control plane
when it is built, as in CI; else the stand-in), real gateway, real controller, real kubectl.

One run, `make demo DEMO_ARGS='--kube KIND'` in a clone of the repository alone under /tmp (no
shared/corpus beside it; its .venv under /tmp too, where the Deployments' emptyDir at /tmp lies
over it; the real control plane's binaries are the ones cached in ~/.cache/batchgate), as a user
runs it: its scripted part is checked line by line, then the cluster it leaves up is explored with
kubectl through the kubeconfig it prints, and it is stopped with Ctrl-C. In that clone the tests
of upstream's samples say in one line that they did not run. Where nothing is built and Go is
missing, the demo says so and runs on the stand-in; bad options are one line each.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from demo.kube import Kube
from realcluster import toolchain
from tests import clusters
from tests.controller.cluster import eventually
from tests.demo.helpers import clone_alone, popen_demo, run_demo
from tests.realcluster_fixtures import BINARIES, NOT_BUILT

DEMO_TIMEOUT_SECONDS = 240
pytestmark = [pytest.mark.realcluster] if clusters.on_real() else []


@pytest.fixture(scope="module")
def kube() -> Kube:
    return clusters.kube()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("clone-alone")
    assert str(home).startswith("/tmp/"), "the clone must lie under /tmp, where the pods' emptyDir is mounted"
    assert not any((folder / "shared").exists() for folder in home.parents), "nothing may lie beside the clone"
    return clone_alone(home / "batchgate")


OUTER = ("PYTHONPATH", "VIRTUAL_ENV", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")
"""This checkout's traces, and `make test`'s: under it a `make demo` is a sub-make, which prints
`make[1]: Entering directory ...` around the demo's output, as no user's `make demo` does."""


def in_clone(clone: Path, *command: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`command` in the clone, as a user runs it in a fresh shell."""
    env = {k: v for k, v in os.environ.items() if k not in OUTER}
    return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)


@dataclass
class LiveDemo:
    """`make demo` left running after its scenes: what it printed until its KUBECONFIG line."""

    make: subprocess.Popen[str]
    lines: Iterator[str]
    out: str
    stderr: Path

    def said(self) -> str:
        return f"\n--- demo stdout (last lines) ---\n{self.out[-3000:]}\n--- stderr ---\n{self.stderr.read_text()[-3000:]}"

    def interrupt(self) -> None:
        """Ctrl-C to the demo under make, as `batchgate demo` takes it in a terminal (make would
        add a line of its own for a signal it got too)."""
        os.kill(demo_process(self.make.pid), signal.SIGINT)


def demo_process(pid: int) -> int:
    """The `batchgate demo` process under `pid` (make), by /proc's children lists."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for child in map(int, children):
        if b"demo" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
            return child
        with contextlib.suppress(LookupError):
            return demo_process(child)
    raise LookupError(f"no demo process under {pid}")


@pytest.fixture(scope="module")
def demo(clone: Path, kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDemo]:
    stderr_file = tmp_path_factory.mktemp("demo") / "demo.stderr"
    env = {k: v for k, v in os.environ.items() if k not in OUTER}
    with stderr_file.open("w") as stderr:
        make = subprocess.Popen(["make", "demo", f"DEMO_ARGS=--kube {kube.kind}"], cwd=clone, env=env,
                                stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
    live = LiveDemo(make, iter(()), "", stderr_file)
    try:
        live.lines = _lines(make)
        seen: list[str] = []
        for line in live.lines:
            seen.append(line)
            if line.startswith("export KUBECONFIG="):
                break
        live.out = "".join(seen)
        yield live
    finally:  # a test that failed before its Ctrl-C: the demo stops its cluster, or everything is killed
        if make.poll() is None:
            with contextlib.suppress(LookupError, OSError, subprocess.TimeoutExpired):
                live.interrupt()
                make.wait(timeout=60)
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()


@pytest.fixture(scope="module")
def out(demo: LiveDemo) -> str:
    assert "\nexport KUBECONFIG=" in demo.out, "the demo never left its cluster up" + demo.said()
    return demo.out


def test_the_demo_runs_its_four_scenes_then_leaves_the_cluster_up(demo: LiveDemo, out: str) -> None:
    assert "Traceback" not in demo.stderr.read_text() + out
    sections = re.findall(r"^== (.*) ==$", out, re.M)
    assert sections == ["1. the gateway: what it does to what users submit",
                        "2. the controller: queues, borrowing and preemption, live",
                        "3. a PyTorch AppWrapper: each pod's env from the gateway",
                        "4. Ray: a RayCluster in an AppWrapper, a queued RayJob, an unqueued RayCluster refused",
                        "the cluster is yours"]
    assert "scripted part done" in out


def test_the_narration_says_first_which_kubernetes_runs(kube: Kube, out: str) -> None:
    first = next(line for line in out.splitlines() if line.startswith("["))
    if kube.kind == "real":
        assert re.fullmatch(rf"\[\s*\d+\.\ds\] starting the cluster: Kubernetes "
                            rf"{re.escape(toolchain.load_versions().kubernetes)} \(kube-apiserver, etcd, "
                            r"kube-controller-manager, kube-scheduler built from their Go modules\)", first), first
    else:
        assert re.fullmatch(r"\[\s*\d+\.\ds\] starting the cluster: the stand-in API server "
                            r"\(localcluster/; chosen with --kube local\)", first), first


def test_the_product_is_installed_with_kubectl_apply_k_and_runs_as_pods_on_a_cluster_of_gpu_nodes(out: str) -> None:
    assert "4 nodes x 8 GPUs (node-0, node-1, node-2, node-3)" in out
    assert re.search(r"admin: kubectl apply --server-side -k manifests/local, .*; 4 product pods Ready after \d+s: "
                     r"2 batchgate-controller, 2 batchgate-webhook", out)


def test_every_sample_in_the_repository_is_submitted_by_its_user_and_shows_what_the_gateway_added(
        clone: Path, out: str) -> None:
    assert "alice (team-a) and bob (team-b) submit the samples in demo/samples/alice and demo/samples/bob" in out
    for user in ("alice", "bob"):
        paths = sorted((clone / "demo" / "samples" / user).glob("*.yaml"))
        assert len(paths) >= 3
        for path in paths:
            assert f"({user}/{path.name}): " in out, path
        accounts = [line for line in out.splitlines() if line.strip().startswith(user) and f"({user}/" in line]
        allowed = [line for line in accounts if "denied" not in line]
        assert allowed and all(f"workload.codeflare.dev/user={user}" in line for line in allowed)
    wrapped = next(line for line in out.splitlines() if "(alice/appwrapper-job.yaml)" in line)
    for added in ("kueue.x-k8s.io/queue-name=default-queue", "workload.codeflare.dev/userid=1001",
                  "scheduling.x-k8s.io/pod-group=fine-tune", "schedulerName=batchgate-scheduler", "suspend=true"):
        assert added in wrapped
    job = next(line for line in out.splitlines() if "(alice/job.yaml)" in line)
    assert job.endswith("(alice/job.yaml): kueue.x-k8s.io/priority-class=default-priority, "
                        "workload.codeflare.dev/user=alice, workload.codeflare.dev/userid=1001, suspend=true, "
                        "scheduling.x-k8s.io/pod-group=tokenize, schedulerName=batchgate-scheduler"), job
    ray = next(line for line in out.splitlines() if "(bob/raycluster-in-appwrapper.yaml)" in line)
    assert "workload.codeflare.dev/userid=1002" in ray and "scheduling.x-k8s.io/pod-group=notebook-ray (x2)" in ray
    assert re.search(r"5 samples admitted \(with labels, scheduler and suspend added\), 2 denied", out)


def test_a_denial_is_shown_exactly_as_kubectl_prints_it(clone: Path, out: str) -> None:
    samples = clone / "demo" / "samples"
    assert (f'Error from server (InvalidAppWrapper): error when creating "{samples / "bob/appwrapper-jobset.yaml"}": '
            'admission webhook "workloads.validate.batchgate.dev" denied the request: InvalidAppWrapper: '
            "spec.components[0].template.kind: JobSet.jobset.x-k8s.io is not in allowedKinds.wrapped") in out
    assert (f'Error from server (QueueRequired): error when creating "{samples / "alice/job-without-queue.yaml"}": '
            'admission webhook "workloads.validate.batchgate.dev" denied the request: QueueRequired: '
            "metadata.labels[kueue.x-k8s.io/queue-name]: Job needs a LocalQueue label") in out
    assert "ServiceUnavailable" not in out, "a sample reached the gateway before it had loaded its policy"


def test_in_a_clone_alone_the_tests_of_upstreams_samples_say_in_one_line_that_they_did_not_run(clone: Path) -> None:
    result = in_clone(clone, str(clone / ".venv" / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:randomly",
                      "--basetemp", str(clone / ".pytest-tmp"), "-m", "upstream_corpus", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    said = [line for line in result.stdout.splitlines() if "tests of upstream's samples did not run" in line]
    assert len(said) == 1, result.stdout[-3000:]
    count, files = re.fullmatch(
        r"(\d+) tests of upstream's samples did not run \(the upstream samples are absent: no shared/corpus beside "
        + re.escape(str(clone)) + r" or a parent of it\): (.*)", said[0]).groups()
    assert re.search(rf"^{count} skipped, \d+ deselected in ", result.stdout, re.M), result.stdout[-3000:]
    assert {"tests/webhook/rules/test_corpus.py", "tests/manifests/test_crds.py",
            "tests/demo/test_gateway_only.py"} <= set(files.split(", "))


def test_admission_borrowing_and_both_kinds_of_preemption_happen_live(out: str) -> None:
    events = [line.split("] ", 1)[1].strip() for line in out.splitlines() if re.match(r"\[\s*[\d.]+s\]   ", line)]
    admitted = {line.split()[1] for line in events if line.startswith("admitted")}
    assert {"team-a/alice-1", "team-a/alice-2", "team-a/alice-3", "team-a/alice-4", "team-b/bob-1",
            "team-a/alice-urgent"} <= admitted
    assert any(re.match(r"borrowing  team-a-cq now holds \d+ GPUs beyond its nominal quota", line) for line in events)
    assert any(line.startswith("pending    team-a/alice-5: couldn't assign flavors") for line in events)
    assert any(re.match(r"preempted  team-a/alice-\d: InCohortReclamation \(to make room for team-b/bob-1\)", line)
               for line in events)
    assert any(re.match(r"preempted  team-a/alice-\d: InClusterQueue \(to make room for team-a/alice-urgent\)", line)
               for line in events)
    assert re.search(r"^\s+team-b-cq\s+8/8\s+0\s+1\s+0$", out, re.M)
    assert re.search(r"^\s+team-a-cq\s+24/8\s+16\s+3\s+\d+$", out, re.M)


def test_the_admitted_jobs_pods_run_on_the_gpu_nodes(out: str) -> None:
    rows = re.findall(r"^\s+(team-[ab])\s+((?:alice|bob)-\S+)-\w{5}\s+(node-\d)\s+4\s+Running$", out, re.M)
    pods_per_job = {job: sum(1 for _, j, _ in rows if j == job) for _, job, _ in rows}
    assert {"alice-urgent", "bob-1"} <= set(pods_per_job) and len(pods_per_job) == 4, out
    assert set(pods_per_job.values()) == {2}


def test_the_pytorch_appwrapper_gets_its_service_and_host_layout_from_the_gateway(out: str) -> None:
    assert "components after the gateway: Job mnist-master, Job mnist-worker, Service mnist" in out
    assert "pod hostnames laid out: mnist-master-0, mnist-worker-0, mnist-worker-1" in out


def test_the_pytorch_appwrapper_is_admitted_and_its_components_created_by_the_controller(out: str) -> None:
    assert re.search(r"queues it \(Workload appwrapper-mnist-\w+, admitted by team-b-cq\) and runs it; "
                     r"phases seen: (\w+ -> )*Running$", out, re.M), out[-3000:]
    assert re.search(r"^\s+mnist\s+Running\s+True\s+True\s+False\s+\S+$", out, re.M), out[-3000:]
    created = re.findall(r"^\s+((?:job\.batch|service)/mnist\S*)\s", out, re.M)
    assert sorted(created) == ["job.batch/mnist-master", "job.batch/mnist-worker", "service/mnist"]


def test_each_pytorch_pod_shows_the_env_the_gateway_injected(out: str) -> None:
    envs = dict(re.findall(r"^\s+(mnist-(?:master|worker)-\d): (.*)$", out, re.M))
    assert list(envs) == ["mnist-master-0", "mnist-worker-0", "mnist-worker-1"]
    for rank, pod in enumerate(envs):
        env = dict(item.split("=", 1) for item in envs[pod].split())
        assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"], env["PET_NPROC_PER_NODE"]) == (
            "mnist-master-0.mnist", "23456", "3", str(rank), "2")


def test_the_ray_scene_runs_a_wrapped_raycluster_and_a_queued_rayjob_and_refuses_an_unqueued_cluster(out: str) -> None:
    assert "the controller queues it, admits it and creates the RayCluster (AppWrapper Running, RayCluster ready)" in out
    ray_pods = re.findall(r"^\s+(raytest-(?:head|small-group-worker)-\w+)\s+1/1\s+Running", out, re.M)
    assert len(ray_pods) == 3, out[-3000:]
    # The scene samples the status every 0.3 s. Before admission KubeRay (v1.6, rayjob_controller.go)
    # takes a suspended RayJob from Initializing through Suspending to Suspended, and after it
    # Initializing again: any of them may pass between samples. New is the empty status, not printed.
    assert re.search(r"its deployment went ((Initializing|Suspending|Suspended) -> )*Running -> Complete:", out), \
        out[-3000:]
    assert re.search(r"^\s+ray-sample\s+SUCCEEDED\s+Complete\s", out, re.M), out[-3000:]
    assert ('denied the request: QueueRequired: metadata.labels[kueue.x-k8s.io/queue-name]: '
            'RayCluster needs a LocalQueue label') in out


def _lines(process: subprocess.Popen[str]) -> Iterator[str]:
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    while (line := lines.get(timeout=DEMO_TIMEOUT_SECONDS)) is not None:
        yield line


def test_the_demo_leaves_the_cluster_up_for_kubectl_until_ctrl_c(demo: LiveDemo, out: str, kube: Kube) -> None:
    kubectl, said = kube.kubectl, demo.said
    kubeconfig = out.rsplit("export KUBECONFIG=", 1)[1].strip()
    assert (f"alias kubectl={kubectl}" in out) == (kube.kind == "real"), \
        "the hints name the kubectl of the real control plane's release, and only there" + said()
    dashboard = re.search(r"the dashboard .*(http://127\.0\.0\.1:\d+/)", out)
    assert dashboard, "the demo never printed the dashboard's address" + said()
    eventually(lambda: "ClusterQueue team-a-cq" in requests.get(dashboard.group(1) + "queues", timeout=30).text,
               timeout=30, what=lambda: "the dashboard to show the demo's queues" + said())
    queues = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "clusterqueues", "-o", "name"],
                            capture_output=True, text=True, timeout=30)
    assert queues.stdout.split() == ["clusterqueue.kueue.x-k8s.io/slack-cluster-queue",
                                     "clusterqueue.kueue.x-k8s.io/team-a-cq",
                                     "clusterqueue.kueue.x-k8s.io/team-b-cq"], queues.stderr + said()
    # The shipped webhook configuration routes ClusterQueues to the gateway, which checks them
    # as Kueue's webhook would, even for the (otherwise exempt) admin: here what the CRD's own
    # validation rules let through (a flavor's resource not named as the covered one).
    bad_queue = ('{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "bad"},'
                 ' "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default-flavor",'
                 ' "resources": [{"name": "memory", "nominalQuota": "4"}]}]}]}}')
    denied = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-"], input=bad_queue,
                            capture_output=True, text=True, timeout=30)
    assert denied.returncode == 1, denied.stdout + said()
    assert ('admission webhook "clusterqueues.validate.batchgate.dev" denied the request: InvalidClusterQueue: '
            'spec.resourceGroups[0].flavors[0].resources: must list exactly the coveredResources, in the same '
            'order' in denied.stderr), denied.stderr + said()
    # The audit lines are the gateway's own log, as on any cluster.
    logs = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "logs", "-n", "batchgate-system",
                           "deploy/batchgate-webhook", "-c", "webhook"], capture_output=True, text=True, timeout=30)
    audit = [json.loads(line) for line in logs.stdout.splitlines() if line.startswith('{"ts"')]
    assert audit and all({"endpoint", "operation", "kind", "user", "allowed"} <= set(a) for a in audit), \
        logs.stderr + said()
    demo.interrupt()
    rest = "".join(demo.lines)
    assert demo.make.wait(timeout=60) == 0, rest + said()
    assert "Traceback" not in demo.stderr.read_text() + rest, said()
    assert "interrupted" in rest and rest.rstrip().endswith("demo cluster, gateway and controller stopped"), said()


def test_without_a_build_and_without_go_the_demo_says_so_and_runs_on_the_stand_in(tmp_path: Path) -> None:
    tools = tmp_path / "bin"  # the user's kubectl, and no directory that holds a go
    tools.mkdir()
    (tools / "kubectl").symlink_to(shutil.which("kubectl") or "kubectl")
    no_go = os.pathsep.join([str(tools), *(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "go").exists())])
    with (tmp_path / "demo.stderr").open("w") as stderr:
        process = popen_demo(stderr=stderr, env={"BATCHGATE_CACHE": str(tmp_path / "empty-cache"), "PATH": no_go})
    try:
        lines = _lines(process)
        first = next(lines)
        up = next(line for line in lines if "cluster up at" in line)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130, (tmp_path / "demo.stderr").read_text()  # interrupted while installing
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert re.fullmatch(r"\[\s*\d+\.\ds\] starting the cluster: the stand-in API server \(localcluster/; Go not "
                        r"found: install Go 1\.25 or newer, then `make kube` builds Kubernetes\)\n", first), first
    assert "4 nodes x 8 GPUs" in up


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--speed", "0"], "--speed must be positive, got 0.0", id="a speed of zero is refused"),
    pytest.param(["--speed", "fast"], "invalid float value: 'fast'", id="a speed that is not a number is refused"),
    pytest.param(["--kube", "kind"], "argument --kube: invalid choice: 'kind' (choose from 'auto', 'local', 'real')",
                 id="a kind of kubernetes that does not exist is refused"),
])
def test_bad_options_exit_2_with_one_clear_line(args: list[str], message: str) -> None:
    result = run_demo(*args, timeout=60)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_asking_for_the_real_control_plane_where_it_is_not_built_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    result = run_demo("--kube", "real", timeout=60, env={"BATCHGATE_CACHE": str(tmp_path)})
    assert result.returncode == 2 and result.stdout == "", result.stdout + result.stderr
    assert re.fullmatch(r"batchgate demo: --kube real: the real control plane is not built(: | and Go is not "
                        r"installed: install Go 1\.25 or newer, then )`make kube` builds it.*; or use --kube local\n",
                        result.stderr), result.stderr


@pytest.mark.parametrize("kube", ["real", "auto"])
def test_a_speed_on_the_real_control_plane_is_refused_with_the_way_out(kube: str) -> None:
    if BINARIES is None:
        pytest.skip(NOT_BUILT)
    result = run_demo("--kube", kube, "--speed", "5", timeout=60)
    chosen = "--kube auto chose it, as it is built" if kube == "auto" else "--kube real"
    assert result.returncode == 2 and result.stderr == (
        "batchgate demo: --speed 5: only the stand-in's simulated time runs faster, and the real control plane "
        f"({chosen}) runs on real time: drop --speed, or add --kube local\n"), result.stderr
