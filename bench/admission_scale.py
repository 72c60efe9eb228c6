"""Kueue's scheduler performance scenario with the real controller, on the real control plane or the stand-in.

As in Kueue's harness (`test/performance/scheduler`: a runner creates Workloads on a schedule and
marks each one finished `runtime` after its admission; the controller under test only admits),
this script starts a fresh cluster (`--kube real`: the real control plane Kueue runs on in
bench/peers/, with its audit log on; `--kube local`: `batchgate cluster`) and `batchgate controller
--qps 50 --burst 100` as a separate process (on the real one as the shipped service account,
`batchgate-system/batchgate-controller`), creates the ClusterQueues, LocalQueues and Workloads over the API, watches
admissions and finishes each workload after its runtime. It prints wall time, mean ClusterQueue
usage, mean time to admission per class, and the controller's CPU and peak RSS, with the machine.

    python bench/admission_scale.py [--cohorts 5 --queues 6] [--scale 1.0] [--kube real|local]

On the real control plane it also prints the API server's requests by verb and the controller's
own by verb and resource (audit log). Workloads are written in v1beta1, the version batchgate
serves (Kueue v0.17's bench writes v1beta2: see bench/peers/kueue_scale.py).

`--scale` shrinks every class's workload count (0.1 runs a tenth of the 15,000) for a quick look.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from batchgate.policy import DEFAULT_POLICY_CONFIGMAP, POLICY_KEY, PolicyError, parse_policy  # noqa: E402
from batchgate.quantity import parse_quantity  # noqa: E402
from bench.admission_decisions import CONFIGS, WorkloadClass  # noqa: E402
from bench.controller_stack import CONTROLLER_USER, recorded_requests  # noqa: E402
from bench.machine_info import machine  # noqa: E402
from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource  # noqa: E402
from demo.kubectl import KUBECTL  # noqa: E402
from localcluster.rbac.bootstrap import WRITE  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster  # noqa: E402
from realcluster.setup import request_token  # noqa: E402

KUEUE = "kueue.x-k8s.io/v1beta1"
NAMESPACE = "bench"
CONTROLLER_ACCOUNT = ("batchgate-system", "batchgate-controller")  # manifests/rbac/controller.yaml
WL, CQ, LQ = RESOURCES["Workload"], RESOURCES["ClusterQueue"], RESOURCES["LocalQueue"]
PROGRESS_EVERY = 300.0  # seconds between progress lines on stderr


BASELINE = CONFIGS["baseline"].classes
KUEUE_FIGURES = "Kueue v0.10 (same scenario): wall 351 s, usage 56-59 %, admission large 6.7-16.5 s, medium 77 s, small 215 s, 396 mCPU, 445 MB"


@dataclass
class Tracked:
    cls: WorkloadClass
    cq: str
    created: float
    admitted: float | None = None  # first admission
    finished: float | None = None
    running: bool = False  # holds quota now
    evicted: bool = False  # its Evicted condition is True now
    generation: int = 0  # bumped on eviction, so a stale finish timer does nothing


@dataclass
class Run:
    tracked: dict[str, Tracked] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    busy: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # cq -> (time, +/-cpu)
    created: int = 0  # creates the API server accepted
    finished: int = 0
    evictions: int = 0
    evicted: Counter[str] = field(default_factory=Counter)  # by the victim's class and the Preempted reason


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


def setup(client: KubeClient, cohorts: int, queues: int, policy: str | None = None) -> list[str]:
    """The scenario's queues; with `policy`, the controller's policy ConfigMap (read as it starts)."""
    client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    if policy is not None:
        namespace, name = DEFAULT_POLICY_CONFIGMAP
        try:
            client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except ApiError as exc:
            if not exc.already_exists:  # the real control plane's RBAC manifests made it
                raise
        client.create(RESOURCES["ConfigMap"], {"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": name, "namespace": namespace},
                                               "data": {POLICY_KEY: policy}})
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


def generate(client: KubeClient, run: Run, queues: list[str], scale: float, t0: float, stop: threading.Event,
             api: Resource = WL) -> None:
    """Create the Workloads on the scenario's schedule (in `api`'s version), until `stop` is set."""
    schedule = sorted(((i * cls.interval_ms / 1000, q, cls, i) for q in queues for cls in BASELINE
                       for i in range(max(1, round(cls.count * scale)))), key=lambda item: (item[0], item[1], item[3]))

    def create(name: str, q: str, cls: WorkloadClass) -> None:
        client.create(api, workload(name, q, cls, api))
        with run.lock:
            run.created += 1

    pool = ThreadPoolExecutor(4)
    for at, q, cls, i in schedule:
        if stop.wait(max(0.0, t0 + at - time.monotonic())):
            break
        name = f"{q}-{cls.name}-{i}"
        with run.lock:
            run.tracked[name] = Tracked(cls, q, time.monotonic())
        pool.submit(create, name, q, cls)
    pool.shutdown(cancel_futures=stop.is_set())


def follow(client: KubeClient, run: Run, total: int, done: threading.Event, api: Resource = WL) -> None:
    """Watch Workloads; finish each one its runtime after admission (reads and writes in `api`'s version)."""
    finisher = ThreadPoolExecutor(4)

    def finish(name: str, generation: int) -> None:
        with run.lock:
            tracked = run.tracked[name]
            if tracked.generation != generation or not tracked.running:
                return  # evicted since: it runs again after its next admission
        if not mark_finished(client, api, name, NAMESPACE):
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
        evicted = _is_true(obj, "Evicted")
        now = time.monotonic()
        with run.lock:
            tracked = run.tracked.get(name)
            if tracked is None or finished:
                return
            if evicted and not tracked.evicted:  # each eviction once, whoever releases its quota
                run.evictions += 1
                run.evicted[f"{tracked.cls.name} {_reason(obj, 'Preempted') or _reason(obj, 'Evicted')}"] += 1
            tracked.evicted = evicted
            if evicted and admission:
                finisher.submit(release_evicted, client, api, name, NAMESPACE)
            if bool(admission) == tracked.running:
                return
            tracked.running = bool(admission)
            run.busy.setdefault(tracked.cq, []).append((now, tracked.cls.cpu if admission else -tracked.cls.cpu))
            if not admission:  # evicted: quota released, it will run again later
                tracked.generation += 1
                return
            if tracked.admitted is None:
                tracked.admitted = now
            generation = tracked.generation
        timer = threading.Timer(tracked.cls.runtime_ms / 1000, lambda: finisher.submit(finish, name, generation))
        timer.daemon = True
        timer.start()

    keep_watching(client, api, NAMESPACE, handle, done)


def _is_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def _reason(obj: dict[str, Any], kind: str) -> str:
    """The reason of a True condition of `kind`, or ''."""
    return next((str(c.get("reason")) for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == kind and c.get("status") == "True"), "")


def _patch_status(client: KubeClient, api: Resource, name: str, namespace: str,
                  change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> bool:
    """Read the Workload, patch its status with `change(current)` (None: nothing to do) under its
    resourceVersion, retrying a conflict; True when written. Other errors are said, not raised
    (a worker pool would swallow them)."""
    for _ in range(5):
        try:
            current = client.get(api, name, namespace)
            status = change(current)
            if status is None:
                return False
            client.patch(api, name, namespace, {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                                                "status": status}, subresource="status")
            return True
        except ApiError as exc:
            if not exc.conflict:
                print(f"status of {name}: {exc}", file=sys.stderr)
                return False
    return False


def _conditions(current: dict[str, Any], replaced: dict[str, tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The Workload's conditions with `replaced` (type -> status, reason, message) set now."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kept = [c for c in (current.get("status") or {}).get("conditions") or [] if c["type"] not in replaced]
    return kept + [{"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp}
                   for kind, (status, reason, message) in replaced.items()]


def mark_finished(client: KubeClient, api: Resource, name: str, namespace: str) -> bool:
    """The runner's finish, as Kueue's harness does it: Finished=True on an admitted Workload that is
    not being evicted (an evicted one is released and runs again after its next admission)."""
    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        if not (current.get("status") or {}).get("admission") or _is_true(current, "Evicted"):
            return None
        return {"conditions": _conditions(current, {"Finished": ("True", "Succeeded", "bench")})}
    return _patch_status(client, api, name, namespace, change)


def release_evicted(client: KubeClient, api: Resource, name: str, namespace: str) -> bool:
    """Finish an eviction as Kueue's harness runner does (its runner/controller/controller.go,
    "finish the workloads eviction"): the quota reservation unset, so the victim queues again, with
    the Evicted condition's message as Kueue's job integration writes it (jobframework/reconciler.go).
    For a Workload without a job nobody else does: Kueue's victims keep their quota until then,
    batchgate releases an ownerless victim with its eviction write."""
    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        if not _is_true(current, "Evicted") or not (current.get("status") or {}).get("admission"):
            return None
        evicted = next(c for c in current["status"]["conditions"] if c.get("type") == "Evicted")
        return {"admission": None, "conditions": _conditions(current, {
            "QuotaReserved": ("False", "Pending", str(evicted.get("message", ""))),
            "Admitted": ("False", "NoReservation", "The workload has no reservation")})}
    return _patch_status(client, api, name, namespace, change)


def keep_watching(client: KubeClient, api: Resource, namespace: str | None, handle: Callable[[dict[str, Any]], None],
                  done: threading.Event) -> None:
    """List, then watch until `done`, relisting after a broken or expired watch; `handle` gets
    every object listed, added or modified."""
    def relist() -> str:
        listed = client.list(api, namespace)
        for obj in listed["items"]:
            handle(obj)
        return str(listed["metadata"]["resourceVersion"])

    version = relist()
    while not done.is_set():
        try:
            for event in client.watch(api, namespace, version, 30):
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    raise ApiError(int(obj.get("code") or 500), str(obj.get("reason")), str(obj.get("message")))
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") in ("ADDED", "MODIFIED"):
                    handle(obj)
                if done.is_set():
                    break
        except Exception as exc:  # a broken or expired watch: catch up from a fresh list
            if done.is_set():
                return  # the run is over and its cluster may be gone
            print(f"watch: {exc}; relisting", file=sys.stderr)
            version = relist()


def follow_queues(client: KubeClient, samples: dict[str, list[tuple[float, float]]], done: threading.Event) -> None:
    """Record every ClusterQueue event as Kueue's harness recorder does: its time and the CPU
    the ClusterQueue's own status says is in use (first flavor's first resource)."""
    def handle(obj: dict[str, Any]) -> None:
        usage = (((obj.get("status") or {}).get("flavorsUsage") or [{}])[0].get("resources") or [{}])[0]
        samples.setdefault(obj["metadata"]["name"], []).append(
            (time.monotonic(), float(parse_quantity(usage.get("total", "0")))))

    keep_watching(client, CQ, None, handle, done)


def harness_usage(samples: dict[str, list[tuple[float, float]]], nominal: float = 20) -> float:
    """Mean ClusterQueue usage in % as Kueue's harness checker computes it: each ClusterQueue's
    status usage integrated between its events, summed over the ClusterQueues, divided by their
    summed nominal quota times the span from the first ClusterQueue event to the last."""
    events = [at for series in samples.values() for at, _ in series]
    span = max(events) - min(events) if events else 0.0
    if not span:
        return float("nan")
    used = sum(prev * (at - last) for series in samples.values() for (last, prev), (at, _) in zip(series, series[1:]))
    return 100 * used / (nominal * len(samples) * span)


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


def default_kube() -> str:
    """The real control plane when it is built (the one Kueue runs on in bench/peers/), else the stand-in."""
    return "real" if toolchain.locate() is not None else "local"


def scrape(url: str, token: str, ca_file: str) -> str:
    """The API server's /metrics, read with a bearer token."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30, context=ssl.create_default_context(cafile=ca_file)) as reply:
        return str(reply.read().decode())


def by_label(metrics: str, name: str, label: str) -> Counter[str]:
    """A counter's samples summed by one of its labels."""
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == name:
                out[sample.labels.get(label, "")] += int(sample.value)  # a counter of requests: whole numbers
    return out


@dataclass(frozen=True)
class ApiRequests:
    """What the real API server counts: every client's requests by verb (its /metrics) and one
    account's requests by verb and resource (its audit log). The controller's own metrics are not
    used, so that both sides of a comparison are counted by the same party."""

    cluster: RealCluster
    user: str

    def served(self) -> Counter[str]:
        metrics = scrape(f"{self.cluster.url}/metrics", self.cluster.token("admin"), str(self.cluster.ca_file))
        return by_label(metrics, "apiserver_request_total", "verb")

    def own(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for request, count in self.cluster.read_audit().completed.items():
            if request.user == self.user:
                out[f"{request.verb} {request.resource}" + (f"/{request.subresource}" if request.subresource else "")] += count
        return out


@dataclass
class Measured:
    """One run of the scenario: what main prints, and what other benchmarks compare."""

    total: int
    finished: bool  # every Workload finished within the timeout
    wall: float  # seconds from the first create to the last finish (or the timeout)
    cpu: float  # controller CPU seconds over the wall
    rss: float  # controller peak RSS, MB
    usage: float  # mean ClusterQueue usage, %: the runner's, from the admissions it saw over the wall
    evictions: int
    by_class: dict[str, list[float]]
    metrics: str = ""  # the controller's /metrics at the end (batchgate's only)
    scrapes: int = 0
    served: Counter[str] = field(default_factory=Counter)  # API server's requests by verb (real control plane)
    own: Counter[str] = field(default_factory=Counter)  # the controller's, by `verb resource` (audit log)
    harness_usage: float = float("nan")  # mean ClusterQueue usage, %, as Kueue's harness checker computes it
    api_cpu: float = float("nan")  # the API server's CPU seconds over the wall (kube-apiserver, or the stand-in)
    api_rss: float = float("nan")  # the API server's peak RSS, MB
    done: int = 0  # Workloads finished by the end (all of them, unless the run timed out)
    created: int = 0  # Workloads created by the end (all of them, unless the run timed out)
    evicted: Counter[str] = field(default_factory=Counter)  # evictions by the victim's class and the reason

    @property
    def admitted(self) -> int:
        return sum(len(values) for values in self.by_class.values())

    @property
    def writes_per_admitted(self) -> float:
        writes = sum(count for what, count in self.own.items() if what.split(" ", 1)[0] in WRITE)
        return writes / self.admitted if self.admitted else float("nan")


def run_scenario(client: KubeClient, queues: list[str], pid: int, scale: float, timeout: float,
                 requests: ApiRequests | None, api: Resource = WL, done: threading.Event | None = None,
                 api_pid: int | None = None) -> Measured:
    """Create and finish the Workloads while the controller (process `pid`) admits them; measure,
    with the API server's own CPU and memory when its process (`api_pid`) is given."""
    before = (requests.served(), requests.own()) if requests else (Counter[str](), Counter[str]())
    cpu0 = proc_cpu_seconds(pid)
    api_cpu0 = proc_cpu_seconds(api_pid) if api_pid else float("nan")
    total = sum(len(queues) * max(1, round(c.count * scale)) for c in BASELINE)
    run, done, queue_samples = Run(), done or threading.Event(), dict[str, list[tuple[float, float]]]()
    stop = threading.Event()  # the timeout passed or the run was interrupted: stop creating
    threading.Thread(target=follow_queues, args=(client, queue_samples, done), daemon=True).start()
    t0 = time.monotonic()
    threading.Thread(target=follow, args=(client, run, total, done, api), daemon=True).start()
    creator = threading.Thread(target=generate, args=(client, run, queues, scale, t0, stop, api), daemon=True)
    with interrupts_stop(stop):
        creator.start()
        shown = t0
        while not done.wait(1.0):  # a short wait: a signal's handler runs, then stop is seen within a second
            now = time.monotonic()
            if stop.is_set() or now >= t0 + timeout:
                break
            if now >= shown + PROGRESS_EVERY:
                shown = now
                progress(run, total, t0, pid, cpu0)
    finished = done.is_set()
    t1 = time.monotonic()
    if not finished:  # where it stopped, before the slower reads of the end (the audit log's counts)
        progress(run, total, t0, pid, cpu0)
    stop.set()
    time.sleep(2)  # the last ClusterQueue status writes, for the harness's usage
    done.set()  # the watches and finishes stop too, so the creates still on the wire get their answers
    creator.join(timeout=60)  # an API server that far behind takes minutes over them: not waited for
    cpu, rss = proc_cpu_seconds(pid) - cpu0, proc_peak_rss_mb(pid)
    api_cpu, api_rss = ((proc_cpu_seconds(api_pid) - api_cpu0, proc_peak_rss_mb(api_pid)) if api_pid
                        else (float("nan"), float("nan")))
    served, own = (requests.served() - before[0], requests.own() - before[1]) if requests else before
    by_class: dict[str, list[float]] = {}
    for t in run.tracked.values():
        if t.admitted is not None:
            by_class.setdefault(t.cls.name, []).append(t.admitted - t.created)
    return Measured(total, finished, t1 - t0, cpu, rss, mean_usage(run, queues, t0, t1), run.evictions, by_class,
                    served=served, own=own, harness_usage=harness_usage(dict(queue_samples)), evicted=run.evicted,
                    api_cpu=api_cpu, api_rss=api_rss, done=run.finished, created=run.created)


@contextmanager
def interrupts_stop(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM end the run early, as a timeout does, so an unfinished run still reports
    what it reached (a shell's background job ignores SIGINT: SIGTERM is the one that reaches it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in before:
        signal.signal(sig, lambda *_: stop.set())
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def exit_on_terminate() -> None:
    """SIGTERM outside a run's window ends the runner as an exception would, so the clusters and
    controllers it started are stopped on the way out (by default the signal kills it alone, and
    they run on)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def progress(run: Run, total: int, t0: float, pid: int, cpu0: float) -> None:
    """One line on stderr every PROGRESS_EVERY seconds: a long run shows where it is while it runs."""
    elapsed = time.monotonic() - t0
    with run.lock:
        admitted = sum(1 for t in run.tracked.values() if t.admitted is not None)
        created, finished = run.created, run.finished
    print(f"{elapsed / 60:5.1f} min: {created} of {total} created, {admitted} admitted, {finished} finished; "
          f"controller {1000 * (proc_cpu_seconds(pid) - cpu0) / elapsed:.0f} mCPU, RSS {proc_peak_rss_mb(pid):.0f} MB",
          file=sys.stderr, flush=True)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def real_cluster(stack: ExitStack, work: Path) -> tuple[Path, Path, ApiRequests]:
    """A fresh real control plane (audit on) with batchgate's CRDs and RBAC applied: the admin's
    kubeconfig, one for the controller's shipped service account, and the request counter."""
    cluster = stack.enter_context(RealCluster(work, operators=False, audit=True))
    for kustomization in ("crds", "rbac"):
        subprocess.run([KUBECTL, f"--kubeconfig={cluster.kubeconfig}", "--context", "admin",
                        f"--cache-dir={work / 'cache'}", "apply", "--server-side", "-k",
                        str(ROOT / "manifests" / kustomization)], check=True, capture_output=True)
    token = request_token(cluster.url, str(cluster.ca_file), cluster.token("admin"), CONTROLLER_ACCOUNT[0],
                          CONTROLLER_ACCOUNT[1], 24 * 3600)
    user = f"system:serviceaccount:{CONTROLLER_ACCOUNT[0]}:{CONTROLLER_ACCOUNT[1]}"
    return cluster.kubeconfig, cluster.write_kubeconfig("batchgate-controller", token), ApiRequests(cluster, user)


def start_controller(stack: ExitStack, kubeconfig: Path, qps: float = 50, burst: int = 100,
                     controller_args: tuple[str, ...] = ()) -> tuple[subprocess.Popen[str], str]:
    """`batchgate controller` as a process of its own, stopped with `stack`, its caches synced:
    the process and its /metrics address."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    controller, announced = start([sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig",
                                   str(kubeconfig), "--no-leader-elect", "--metrics-address", "127.0.0.1",
                                   "--metrics-port", "0", "--qps", str(qps), "--burst", str(burst),
                                   "--log-level", "warning", *controller_args],
                                  r"probes on http://127.0.0.1:(\d+)", env, on_stdout=False)
    stack.callback(stop, controller)
    time.sleep(2)  # caches synced
    return controller, f"http://127.0.0.1:{announced.group(1)}/metrics"


def measure(cohorts: int, queues_per_cohort: int, scale: float, qps: float, burst: int,
            controller_args: tuple[str, ...] = (), scrape_every: float | None = None, kube: str = "local",
            timeout: float = 3600, policy: str | None = None) -> Measured:
    """Start a fresh cluster (`kube`: real or local) and controller (with `controller_args` and,
    if given, the `policy` text as its policy ConfigMap), run the scenario, stop both. With
    `scrape_every`, /metrics is read that often meanwhile, as Prometheus would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    work = Path(tempfile.mkdtemp(prefix="bench-admission-"))
    requests: ApiRequests | None = None
    with ExitStack() as stack:
        if kube == "real":
            kubeconfig, controller_kubeconfig, requests = real_cluster(stack, work)
            apiserver = requests.cluster.programs["kube-apiserver"].process
            api_pid = apiserver.pid if apiserver is not None else None
        else:
            # the controller calls as a user of its own, so the stand-in's request counts tell its requests apart
            users = work / "users.yaml"
            users.write_text(yaml.safe_dump({"users": [{"name": CONTROLLER_USER, "groups": ["system:masters"]}]}))
            cluster, _ = start([sys.executable, "-m", "batchgate.cli", "cluster", "--workdir", str(work),
                                "--users-file", str(users), "--record-requests", str(work / "requests.json")],
                               r"KUBECONFIG=", env, on_stdout=True)
            stack.callback(stop, cluster)
            api_pid = cluster.pid
            kubeconfig, controller_kubeconfig = work / "kubeconfig", work / "controller.kubeconfig"
            document = yaml.safe_load(kubeconfig.read_text())
            controller_kubeconfig.write_text(yaml.safe_dump({**document, "current-context": CONTROLLER_USER}))
            subprocess.run([KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={work / 'cache'}", "apply", "-k",
                            str(ROOT / "manifests" / "crds")], check=True, capture_output=True)
        client = KubeClient.from_kubeconfig(str(kubeconfig))
        queues = setup(client, cohorts, queues_per_cohort, policy)
        controller, metrics_url = start_controller(stack, controller_kubeconfig, qps, burst, controller_args)
        done, scrapes = threading.Event(), 0
        if scrape_every:
            def scrape_controller() -> None:
                nonlocal scrapes
                while not done.wait(scrape_every):
                    urllib.request.urlopen(metrics_url, timeout=10).read()
                    scrapes += 1
            threading.Thread(target=scrape_controller, daemon=True).start()
        m = run_scenario(client, queues, controller.pid, scale, timeout, requests, done=done, api_pid=api_pid)
        m.metrics = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
        m.scrapes = scrapes
    if kube == "local":  # the stand-in writes its counts as it stops
        m.own = recorded_requests(work / "requests.json", CONTROLLER_USER)
    if m.finished:  # an unfinished run keeps its cluster's logs
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"the cluster's files are kept in {work}", file=sys.stderr)
    return m


def scenario_arguments(doc: str | None) -> argparse.ArgumentParser:
    """The scenario's shape on the command line, for every runner of it."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cohorts", type=int, default=5)
    parser.add_argument("--queues", type=int, default=6, help="ClusterQueues per cohort")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of each class's workload count")
    return parser


def policy_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", type=Path, metavar="FILE",
                        help="a policy.yaml for batchgate's controller (e.g. admission.requeueBatchPeriod: 1s); "
                             "default: none")


def read_policy(parser: argparse.ArgumentParser, path: Path | None) -> str | None:
    """The text of `--policy FILE`, checked first with the policy's own parser (an error names its line)."""
    if path is None:
        return None
    text = path.read_text()
    try:
        parse_policy(text, str(path))
    except PolicyError as exc:
        parser.error(str(exc))
    return text


def unfinished(m: Measured, timeout: float) -> str:
    """How far a run that did not finish got: it is reported as such, never as a time."""
    when = f"within {timeout:.0f} s" if m.wall >= timeout else f"(stopped by a signal at {m.wall:.0f} s)"
    return f"NOT FINISHED {when}: {m.created} of {m.total} Workloads created, {m.admitted} ever admitted, {m.done} finished"


def print_admissions(m: Measured, evicted: str) -> None:
    """Wall, ClusterQueue usage both ways, the evictions seen (as `evicted`) and the mean time to
    admission per class: the lines every runner of the scenario prints alike."""
    print(f"wall: {m.wall:.1f} s   mean ClusterQueue usage: {m.usage:.1f} % (runner's), {m.harness_usage:.1f} % "
          f"(Kueue's harness)   {evicted} seen: {m.evictions}"
          + (f" ({', '.join(f'{kind} {n}' for kind, n in sorted(m.evicted.items()))})" if m.evicted else ""))
    for name in ("large", "medium", "small"):
        values = m.by_class.get(name, [])
        mean = sum(values) / len(values) if values else float("nan")
        print(f"time to admission {name:<6}: mean {mean:7.2f} s over {len(values)} workloads")


def main() -> int:
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` prints every thread's stack: where a long run is
    parser = scenario_arguments(__doc__)
    parser.add_argument("--qps", type=float, default=50)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--kube", choices=("real", "local"), default=default_kube(),
                        help="the real control plane (default when built) or the stand-in")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before the run counts as unfinished")
    policy_argument(parser)
    args = parser.parse_args()
    policy = read_policy(parser, args.policy)
    m = measure(args.cohorts, args.queues, args.scale, args.qps, args.burst, kube=args.kube, timeout=args.timeout,
                policy=policy)
    print(f"machine: {machine()}, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"scenario: {args.cohorts} cohorts x {args.queues} ClusterQueues, {m.total} workloads "
          f"(scale {args.scale}), controller --qps {args.qps} --burst {args.burst}, {args.kube} control plane"
          + (f", policy {args.policy}: {' '.join(policy.split())}" if policy is not None else ""))
    print(f"controller: {1000 * m.cpu / m.wall:.0f} mCPU average, peak RSS {m.rss:.0f} MB; "
          f"API server ({args.kube}): {1000 * m.api_cpu / m.wall:.0f} mCPU average, peak RSS {m.api_rss:.0f} MB")
    if not m.finished:
        print(unfinished(m, args.timeout))
        return 1
    print_admissions(m, "preemptions")
    if m.served:
        print("API server, requests served by verb (all clients): "
              + ", ".join(f"{verb} {count:.0f}" for verb, count in sorted(m.served.items()) if count))
    if m.own:
        print(f"controller's own requests ({'audit log' if m.served else 'counted by the stand-in'}), "
              f"{m.writes_per_admitted:.2f} writes per admitted Workload: "
              + ", ".join(f"{what} {n}" for what, n in sorted(m.own.items())))
    for name in ("batchgate_status_conflicts_total", "batchgate_admission_cycle_duration_seconds_count",
                 "batchgate_admission_cycle_duration_seconds_sum"):
        value = sum(float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", m.metrics, re.M))
        print(f"  {name}: {value:g}")
    print(KUEUE_FIGURES)
    return 0


if __name__ == "__main__":
    exit_on_terminate()
    sys.exit(main())
