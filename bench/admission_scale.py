"""Kueue's scheduler performance scenario with the real controller on the local cluster.

As in Kueue's harness (`test/performance/scheduler`: a runner creates Workloads on a schedule and
marks each one finished `runtime` after its admission; the controller under test only admits),
this script starts `batchgate cluster` and `batchgate controller --qps 50 --burst 100` as
separate processes, creates the ClusterQueues, LocalQueues and Workloads over the API, watches
admissions and finishes each workload after its runtime. It prints wall time, mean ClusterQueue
usage, mean time to admission per class, and the controller's CPU and peak RSS, with the machine.

    python bench/admission_scale.py [--cohorts 5 --queues 6] [--scale 1.0]

`--scale` shrinks every class's workload count (0.1 runs a tenth of the 15,000) for a quick look.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource  # noqa: E402
from demo.kubectl import KUBECTL  # noqa: E402

KUEUE = "kueue.x-k8s.io/v1beta1"
NAMESPACE = "bench"
WL, CQ, LQ = RESOURCES["Workload"], RESOURCES["ClusterQueue"], RESOURCES["LocalQueue"]


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    count: int
    interval_ms: int
    runtime_ms: int
    priority: int
    cpu: int


BASELINE = (WorkloadClass("small", 350, 100, 200, 50, 1), WorkloadClass("medium", 100, 500, 500, 100, 5),
            WorkloadClass("large", 50, 1200, 1000, 200, 20))
KUEUE_FIGURES = "Kueue v0.10 (same scenario): wall 351 s, usage 56-59 %, admission large 6.7-16.5 s, medium 77 s, small 215 s, 396 mCPU, 445 MB"


@dataclass
class Tracked:
    cls: WorkloadClass
    cq: str
    created: float
    admitted: float | None = None  # first admission
    finished: float | None = None
    running: bool = False  # holds quota now
    generation: int = 0  # bumped on eviction, so a stale finish timer does nothing


@dataclass
class Run:
    tracked: dict[str, Tracked] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    busy: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # cq -> (time, +/-cpu)
    finished: int = 0
    evictions: int = 0


def start(cmd: list[str], pattern: str, env: dict[str, str], on_stdout: bool) -> tuple[subprocess.Popen[str], re.Match[str]]:
    """Start a process and wait for the line (on stdout or stderr) that says it is up."""
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    watched, other = (proc.stdout, proc.stderr) if on_stdout else (proc.stderr, proc.stdout)
    assert watched is not None and other is not None
    threading.Thread(target=lambda: [None for _ in other], daemon=True).start()
    lines: list[str] = []
    for line in watched:
        lines.append(line)
        match = re.search(pattern, line)
        if match:
            threading.Thread(target=lambda: [None for _ in watched], daemon=True).start()
            return proc, match
    proc.kill()
    raise RuntimeError(f"{cmd[3]} did not start: {''.join(lines)[-2000:]}")


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mb(pid: int) -> float:
    match = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else float("nan")


def setup(client: KubeClient, cohorts: int, queues: int) -> list[str]:
    client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    client.create(RESOURCES["ResourceFlavor"], {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    names = []
    for c in range(cohorts):
        for q in range(queues):
            name = f"cq-{c}-{q}"
            names.append(name)
            client.create(CQ, {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
                "cohort": f"cohort-{c}", "namespaceSelector": {},
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}]}]}})
            client.create(LQ, {"apiVersion": KUEUE, "kind": "LocalQueue",
                               "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"clusterQueue": name}})
    return names


def workload(name: str, lq: str, cls: WorkloadClass, api: Resource = WL) -> dict[str, Any]:
    return {"apiVersion": api.api_version, "kind": "Workload", "metadata": {"name": name, "namespace": NAMESPACE,
                                                                 "labels": {"bench/class": cls.name}},
            "spec": {"queueName": lq, "priority": cls.priority, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "pause", "resources": {"requests": {"cpu": str(cls.cpu)}}}]}}}]}}


def generate(client: KubeClient, run: Run, queues: list[str], scale: float, t0: float, api: Resource = WL) -> None:
    """Create the Workloads on the scenario's schedule (in `api`'s version)."""
    schedule = sorted(((i * cls.interval_ms / 1000, q, cls, i) for q in queues for cls in BASELINE
                       for i in range(max(1, round(cls.count * scale)))), key=lambda item: (item[0], item[1], item[3]))
    with ThreadPoolExecutor(4) as pool:
        for at, q, cls, i in schedule:
            delay = t0 + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            name = f"{q}-{cls.name}-{i}"
            with run.lock:
                run.tracked[name] = Tracked(cls, q, time.monotonic())
            pool.submit(client.create, api, workload(name, q, cls, api))


def follow(client: KubeClient, run: Run, total: int, done: threading.Event, api: Resource = WL) -> None:
    """Watch Workloads; finish each one its runtime after admission (reads and writes in `api`'s version)."""
    finisher = ThreadPoolExecutor(4)

    def finish(name: str, generation: int) -> None:
        with run.lock:
            tracked = run.tracked[name]
            if tracked.generation != generation or not tracked.running:
                return  # evicted since: it runs again after its next admission
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for _ in range(5):
            try:
                current = client.get(api, name, NAMESPACE)
                if not (current.get("status") or {}).get("admission"):
                    return
                conditions = [c for c in current["status"].get("conditions", []) if c["type"] != "Finished"]
                conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                   "message": "bench", "lastTransitionTime": stamp})
                client.patch(api, name, NAMESPACE, {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                                                   "status": {"conditions": conditions}}, subresource="status")
                break
            except ApiError as exc:
                if not exc.conflict:  # said, not raised: the finisher pool would swallow it
                    print(f"finish {name}: {exc}", file=sys.stderr)
                    return
        with run.lock:
            tracked.finished = time.monotonic()
            tracked.running = False
            run.busy.setdefault(tracked.cq, []).append((tracked.finished, -tracked.cls.cpu))
            run.finished += 1
            if run.finished >= total:
                done.set()

    def handle(obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        admission = (obj.get("status") or {}).get("admission")
        finished = any(c.get("type") == "Finished" for c in (obj.get("status") or {}).get("conditions") or [])
        now = time.monotonic()
        with run.lock:
            tracked = run.tracked.get(name)
            if tracked is None or finished or bool(admission) == tracked.running:
                return
            tracked.running = bool(admission)
            run.busy.setdefault(tracked.cq, []).append((now, tracked.cls.cpu if admission else -tracked.cls.cpu))
            if not admission:  # evicted: quota released, it will run again later
                tracked.generation += 1
                run.evictions += 1
                return
            if tracked.admitted is None:
                tracked.admitted = now
            generation = tracked.generation
        timer = threading.Timer(tracked.cls.runtime_ms / 1000, lambda: finisher.submit(finish, name, generation))
        timer.daemon = True
        timer.start()

    def relist() -> str:
        listed = client.list(api, NAMESPACE)
        for obj in listed["items"]:
            handle(obj)
        return listed["metadata"]["resourceVersion"]

    version = relist()
    while not done.is_set():
        try:
            for event in client.watch(api, NAMESPACE, version, 30):
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    raise ApiError(int(obj.get("code") or 500), str(obj.get("reason")), str(obj.get("message")))
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") in ("ADDED", "MODIFIED"):
                    handle(obj)
                if done.is_set():
                    break
        except Exception as exc:  # a broken or expired watch: catch up from a fresh list
            print(f"watch: {exc}; relisting", file=sys.stderr)
            version = relist()


def mean_usage(run: Run, queues: list[str], t0: float, t1: float, nominal: int = 20) -> float:
    fractions = []
    for q in queues:
        used = area = 0.0
        last = t0
        for at, delta in sorted(run.busy.get(q, [])):
            area += used * (at - last)
            used += delta
            last = at
        area += used * (t1 - last)
        fractions.append(area / (nominal * (t1 - t0)))
    return 100 * sum(fractions) / len(fractions)


@dataclass
class Measured:
    """One run of the scenario: what main prints, and what other benchmarks compare."""

    total: int
    wall: float  # seconds from the first create to the last finish
    cpu: float  # controller CPU seconds over the wall
    rss: float  # controller peak RSS, MB
    usage: float  # mean ClusterQueue usage, %
    evictions: int
    by_class: dict[str, list[float]]
    metrics: str  # the controller's /metrics at the end
    scrapes: int


def measure(cohorts: int, queues_per_cohort: int, scale: float, qps: float, burst: int,
            controller_args: tuple[str, ...] = (), scrape_every: float | None = None) -> Measured:
    """Start a fresh cluster and controller (with `controller_args`), run the scenario, stop both.
    With `scrape_every`, /metrics is read that often meanwhile, as Prometheus would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    work = Path(tempfile.mkdtemp(prefix="bench-admission-"))
    cluster, _ = start([sys.executable, "-m", "batchgate.cli", "cluster", "--workdir", str(work)], r"KUBECONFIG=", env,
                    on_stdout=True)
    kubeconfig = work / "kubeconfig"
    controller = None
    scrapes = 0
    try:
        subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={work / 'cache'}", "apply", "-k",
                        str(ROOT / "manifests" / "crds")], check=True, capture_output=True)
        client = KubeClient.from_kubeconfig(str(kubeconfig))
        queues = setup(client, cohorts, queues_per_cohort)
        controller, announced = start([sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", str(kubeconfig),
                               "--no-leader-elect", "--metrics-address", "127.0.0.1", "--metrics-port", "0",
                               "--qps", str(qps), "--burst", str(burst), "--log-level", "warning", *controller_args],
                           r"probes on http://127.0.0.1:(\d+)", env, on_stdout=False)
        metrics_url = f"http://127.0.0.1:{announced.group(1)}/metrics"
        time.sleep(2)  # caches synced
        cpu0 = proc_cpu_seconds(controller.pid)
        total = sum(len(queues) * max(1, round(c.count * scale)) for c in BASELINE)
        run, done = Run(), threading.Event()
        t0 = time.monotonic()
        watcher = threading.Thread(target=follow, args=(client, run, total, done), daemon=True)
        watcher.start()
        if scrape_every:
            def scrape() -> None:
                nonlocal scrapes
                while not done.wait(scrape_every):
                    urllib.request.urlopen(metrics_url, timeout=10).read()
                    scrapes += 1
            threading.Thread(target=scrape, daemon=True).start()
        generate(client, run, queues, scale, t0)
        done.wait(3600)
        t1 = time.monotonic()
        cpu = proc_cpu_seconds(controller.pid) - cpu0
        rss = proc_peak_rss_mb(controller.pid)
        metrics = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    finally:
        for proc in (controller, cluster):
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
    by_class: dict[str, list[float]] = {}
    for t in run.tracked.values():
        if t.admitted is not None:
            by_class.setdefault(t.cls.name, []).append(t.admitted - t.created)
    return Measured(total, t1 - t0, cpu, rss, mean_usage(run, queues, t0, t1), run.evictions, by_class, metrics,
                    scrapes)


def scenario_arguments(doc: str | None) -> argparse.ArgumentParser:
    """The scenario's shape on the command line, for every runner of it."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cohorts", type=int, default=5)
    parser.add_argument("--queues", type=int, default=6, help="ClusterQueues per cohort")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of each class's workload count")
    return parser


def main() -> int:
    parser = scenario_arguments(__doc__)
    parser.add_argument("--qps", type=float, default=50)
    parser.add_argument("--burst", type=int, default=100)
    args = parser.parse_args()
    m = measure(args.cohorts, args.queues, args.scale, args.qps, args.burst)
    print(f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}")
    print(f"scenario: {args.cohorts} cohorts x {args.queues} ClusterQueues, {m.total} workloads "
          f"(scale {args.scale}), controller --qps {args.qps} --burst {args.burst}")
    print(f"wall: {m.wall:.1f} s   mean ClusterQueue usage: {m.usage:.1f} %   preemptions seen: {m.evictions}")
    for name in ("large", "medium", "small"):
        values = m.by_class.get(name, [])
        mean = sum(values) / len(values) if values else float("nan")
        print(f"time to admission {name:<6}: mean {mean:7.2f} s over {len(values)} workloads")
    print(f"controller: {1000 * m.cpu / m.wall:.0f} mCPU average, peak RSS {m.rss:.0f} MB")
    for name in ("batchgate_status_conflicts_total", "batchgate_admission_cycle_duration_seconds_count",
                 "batchgate_admission_cycle_duration_seconds_sum"):
        value = sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", m.metrics, re.M))
        print(f"  {name}: {value:g}")
    print(KUEUE_FIGURES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
