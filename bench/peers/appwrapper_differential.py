"""The AppWrapper differential: acceptance scenarios of tests/e2e played on Kueue v0.17 with the
upstream AppWrapper controller v1.2.2 and on batchgate, their phase and condition timelines compared.

Each side runs on its own fresh real control plane with the acceptance harness's nodes and users
(tests/e2e/appwrapper_harness.py: three tainted GPU nodes whose stand-in kubelets run the pods as
their behaviour annotation says, on wall time; alice, bob and admin):
- upstream: the AppWrapper controller and Kueue (batch/job and appwrapper integrated), installed
  and run by realcluster/peers.py, their own webhooks serving;
- batchgate: the harness's own stack (`start_stack`: the gateway registered from the shipped
  webhook manifests, the controller, the policy ConfigMap), as the acceptance tests run it.
Both get the harness's ResourceFlavor and priority classes, and each scenario its namespace with
a ClusterQueue (cpu 4, nvidia.com/gpu 4) and LocalQueue (`new_scenario`). alice applies the same
AppWrappers on both, with the queue named (upstream's webhook names none by default) and the same
fault-tolerance annotations (short wall-clock grace periods).

What is recorded: every version of every AppWrapper (the harness's `kubectl get aw -w` as alice)
and of every Workload (a watch), per AppWrapper. What is compared, after normalising away what
legitimately differs (times, UIDs, names of Workloads, messages): the sequence of phases (repeats
collapsed), of resettingCount values, each AppWrapper condition type's sequence of (status,
reason) changes, each Workload condition type's likewise, and the phase in which a deletion began.
Condition types are compared each on its own: the two controllers may write two conditions in one
update or in two, which orders them differently for no reason a user sees.

    python bench/peers/appwrapper_differential.py [--scenarios succeeds,retries] [--timeout 90] [--dump DIR]

One line per scenario (agree, or each difference), then a summary. A side that is not built or
does not start ends the run with one line; a scenario that does not finish on a side within its
timeout is reported as not finished, and not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from batchgate import keys  # noqa: E402
from bench.admission_scale import keep_watching  # noqa: E402
from bench.peers.kueue_scale import NOT_BUILT  # noqa: E402
from controller.adapters.kube import RESOURCES, KubeClient  # noqa: E402
from demo.kubectl import Kubectl, KubectlError  # noqa: E402
from localcluster.sim.nodes import parse_nodes_file  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster, RealClusterError  # noqa: E402
from realcluster.peers import PeerError, Peers  # noqa: E402
from realcluster.processes import StartError  # noqa: E402
from tests.e2e.appwrapper_harness import (NODES, PRIORITIES, QUEUE, USERS, AwStack, ControllerProcess,  # noqa: E402
                                          Scenario as Namespace, appwrapper, fault_tolerance, job, new_scenario, pod,
                                          start_stack)
from tests.clusters import CHOICE  # noqa: E402
from tests.e2e.test_appwrapper_lifecycle import FAILS, QUICK, RUNNING  # noqa: E402

SETTLE_SECONDS = 3.0  # after a scenario's last step: late writes (a TTL, a finalizer) reach the watches
QUEUE_LABEL = {"kueue.x-k8s.io/queue-name": QUEUE}
Change = tuple[str, str]  # a condition's (status, reason)


# what is compared: pure ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timeline:
    """One AppWrapper's story as both sides may legitimately tell it alike."""

    phases: tuple[str, ...]
    resetting: tuple[int, ...]
    conditions: Mapping[str, tuple[Change, ...]]  # per AppWrapper condition type
    workload: Mapping[str, tuple[Change, ...]]  # per condition type of its Workload(s)
    deleted_in: str = ""  # the phase in which its deletion began; "" if it was not deleted


def collapsed(values: Iterable[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for value in values:
        if not out or out[-1] != value:
            out.append(value)
    return tuple(out)


def changes(versions: Sequence[Mapping[str, Any]]) -> dict[str, tuple[Change, ...]]:
    """Each condition type's (status, reason) as it changed over the versions, in order."""
    seen: dict[str, list[Change]] = {}
    for version in versions:
        for c in (version.get("status") or {}).get("conditions") or []:
            seen.setdefault(str(c.get("type")), []).append((str(c.get("status")), str(c.get("reason") or "")))
    return {kind: collapsed(values) for kind, values in sorted(seen.items())}


def timeline(versions: Sequence[Mapping[str, Any]], workloads: Sequence[Mapping[str, Any]]) -> Timeline:
    """An AppWrapper's versions and its Workloads' (in the order watched), normalised: the empty
    phase of the object before a controller first wrote it and repeats dropped, a resettingCount
    left out counted as 0, times, UIDs and messages not kept."""
    status = [v.get("status") or {} for v in versions]
    deleting = [s.get("phase", "") for v, s in zip(versions, status)
                if (v.get("metadata") or {}).get("deletionTimestamp")]
    return Timeline(collapsed(s["phase"] for s in status if s.get("phase")),
                    collapsed(int(s.get("resettingCount") or 0) for s in status if s.get("phase")),
                    changes(versions), changes(workloads), deleting[0] if deleting else "")


def owned_by(workloads: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    """The Workload versions whose owner is the AppWrapper `name` (each side names its Workloads its own way)."""
    return [w for w in workloads if any(o.get("kind") == "AppWrapper" and o.get("name") == name
                                        for o in (w.get("metadata") or {}).get("ownerReferences") or [])]


def _arrows(values: Iterable[Any]) -> str:
    return " > ".join(f"{v[0]}/{v[1]}" if isinstance(v, tuple) else str(v) for v in values) or "none"


def differences(name: str, upstream: Timeline, batchgate: Timeline) -> list[str]:
    """Where batchgate's timeline of AppWrapper `name` differs from upstream's, one line each."""
    out: list[str] = []

    def differ(what: str, a: Iterable[Any], b: Iterable[Any]) -> None:
        if tuple(a) != tuple(b):
            out.append(f"{name} {what}: upstream {_arrows(a)}; batchgate {_arrows(b)}")

    differ("phases", upstream.phases, batchgate.phases)
    differ("resettingCount", upstream.resetting, batchgate.resetting)
    for kind in sorted(set(upstream.conditions) | set(batchgate.conditions)):
        differ(f"condition {kind}", upstream.conditions.get(kind, ()), batchgate.conditions.get(kind, ()))
    for kind in sorted(set(upstream.workload) | set(batchgate.workload)):
        differ(f"Workload condition {kind}", upstream.workload.get(kind, ()), batchgate.workload.get(kind, ()))
    if upstream.deleted_in != batchgate.deleted_in:
        out.append(f"{name} deletion began in: upstream {upstream.deleted_in or 'none'}; "
                   f"batchgate {batchgate.deleted_in or 'none'}")
    return out


# the scenarios: what alice does, on either side -------------------------------------------------------

def wrapper(name: str, *components: dict[str, Any], annotations: Mapping[str, str] | None = None,
            priority: str = "") -> dict[str, Any]:
    """An AppWrapper naming the queue (upstream's webhook defaults none) and, if given, its priority class."""
    labels = {**QUEUE_LABEL, **({keys.PRIORITY_CLASS_LABEL: priority} if priority else {})}
    return appwrapper(name, components, annotations=annotations, labels=labels)


def ended(ns: Namespace, name: str, phase: str, timeout: float) -> list[str]:
    """Until `name` is in its terminal `phase` with its resources deleted: its story is told."""
    ns.wait_phase(name, phase, timeout)
    ns.wait_condition(name, "ResourcesDeployed", "False", timeout=timeout)
    return [name]


def succeeds(ns: Namespace, timeout: float) -> list[str]:
    """Its two pods succeed: Succeeded, then the successTTL deletes its components. They run 6 s
    (the acceptance test's 1 s would end between two of upstream's looks, 5 s apart, so that
    whether it shows PodsReady True is chance)."""
    done = {"startAfter": "5s", "runFor": "60s"}
    ns.apply(wrapper("done", job("done-job", parallelism=2, completions=2, behavior=done),
                     annotations=fault_tolerance(successTTLDuration="3s")))
    return ended(ns, "done", "Succeeded", timeout)


def retries(ns: Namespace, timeout: float) -> list[str]:
    """Its pod fails each time: reset up to retryLimit 2, then Failed and its resources deleted."""
    ns.apply(wrapper("flaky", job("flaky-job", behavior=FAILS),
                     annotations={**QUICK, **fault_tolerance(retryLimit="2")}))
    return ended(ns, "flaky", "Failed", timeout)


def waits_for_quota(ns: Namespace, timeout: float) -> list[str]:
    """Two fill the quota; a third waits Suspended and runs once one of the two is deleted."""
    for name in ("first", "second"):  # each until its pods are ready (upstream looks every 5 s)
        ns.apply(wrapper(name, job(f"{name}-job", cpu="2", behavior=RUNNING)))
        ns.wait_condition(name, "PodsReady", "True", timeout=timeout)
    ns.apply(wrapper("third", job("third-job", cpu="2", behavior=RUNNING)))
    ns.wait_phase("third", "Suspended", timeout)
    time.sleep(3)
    ns.kubectl("delete", "aw", "first", f"--timeout={timeout:.0f}s")
    ns.wait_phase("third", "Running", timeout)
    ns.wait_condition("third", "PodsReady", "True", timeout=timeout)
    return ["first", "second", "third"]


def deleted_while_running(ns: Namespace, timeout: float) -> list[str]:
    """`kubectl delete aw` while its pods run: it goes with its components."""
    ns.apply(wrapper("bye", job("bye-job", parallelism=2, behavior=RUNNING)))
    ns.wait_condition("bye", "PodsReady", "True", timeout=timeout)
    ns.kubectl("delete", "aw", "bye", f"--timeout={timeout:.0f}s")
    return ["bye"]


def preempted(ns: Namespace, timeout: float) -> list[str]:
    """A higher-priority AppWrapper takes the whole quota from a running one, which suspends and
    runs again once the other has succeeded."""
    ns.apply(wrapper("low", job("low-job", cpu="4", behavior=RUNNING), priority="aw-e2e-low"))
    ns.wait_condition("low", "PodsReady", "True", timeout=timeout)
    ns.apply(wrapper("high", job("high-job", cpu="4", behavior={"startAfter": "5s", "runFor": "100s"}),
                     priority="aw-e2e-high"))
    ns.wait_phase("high", "Succeeded", timeout)
    ns.wait_condition("low", "PodsReady", "True", timeout=timeout)
    return ["low", "high"]


def missing_component(ns: Namespace, timeout: float) -> list[str]:
    """alice deletes the running wrapped Job: Failed at once with MissingComponent, no retry."""
    ns.apply(wrapper("lost", job("lost-job", behavior=RUNNING),
                     annotations={**QUICK, **fault_tolerance(retryLimit="3")}))
    ns.wait_condition("lost", "PodsReady", "True", timeout=timeout)
    ns.kubectl("delete", "job", "lost-job", "--wait=false")
    return ended(ns, "lost", "Failed", timeout)


def warmup_exhausted(ns: Namespace, timeout: float) -> list[str]:
    """Its pod never starts: the warmup grace runs out, one reset (retryLimit 1), then Failed."""
    ns.apply(wrapper("stuck", job("stuck-job", behavior={"startAfter": "1h"}),
                     annotations={**QUICK, **fault_tolerance(retryLimit="1", warmupGracePeriodDuration="2s")}))
    return ended(ns, "stuck", "Failed", timeout)


def held_on_failure(ns: Namespace, timeout: float) -> list[str]:
    """One of two pods fails, retryLimit 0, deletionOnFailureGracePeriod 4 s: Failed, its resources
    (and quota) held for 4 s, then deleted."""
    ns.apply(wrapper("debug", pod("debug-fails", behavior=FAILS), pod("debug-runs", cpu="3", behavior=RUNNING),
                     annotations={**QUICK, **fault_tolerance(retryLimit="0",
                                                             deletionOnFailureGracePeriodDuration="4s")}))
    return ended(ns, "debug", "Failed", timeout)


def fails_at_once(ns: Namespace, timeout: float) -> list[str]:
    """One failed pod with retryLimit 0 and no failure grace: Failed at once, resources deleted."""
    ns.apply(wrapper("once", job("once-job", behavior=FAILS), annotations={**QUICK, **fault_tolerance(retryLimit="0")}))
    return ended(ns, "once", "Failed", timeout)


Play = Callable[[Namespace, float], list[str]]
# each AppWrapper of a scenario: its versions, and its Workloads' versions
Recorded = dict[str, tuple[list[dict[str, Any]], list[Mapping[str, Any]]]]
SCENARIOS: dict[str, Play] = {"succeeds": succeeds, "retries": retries, "waits-for-quota": waits_for_quota,
                              "deleted-while-running": deleted_while_running, "preempted": preempted,
                              "missing-component": missing_component, "warmup-exhausted": warmup_exhausted,
                              "held-on-failure": held_on_failure, "fails-at-once": fails_at_once}


# running them ----------------------------------------------------------------------------------------

@dataclass
class Side:
    """One installation on its own real control plane, and an admin client that watches Workloads."""

    name: str
    stack: AwStack
    client: KubeClient

    def play(self, play: Play, timeout: float) -> Recorded | str:
        """The scenario in a namespace of its own: each AppWrapper's versions and its Workloads', or
        why it did not finish."""
        scenarios = new_scenario(self.stack)
        ns = next(scenarios)
        workloads: list[dict[str, Any]] = []
        lock, done = threading.Lock(), threading.Event()

        def record(obj: dict[str, Any]) -> None:
            with lock:
                workloads.append(obj)

        threading.Thread(target=keep_watching, args=(self.client, RESOURCES["Workload"], ns.namespace, record, done),
                         daemon=True).start()
        try:
            names = play(ns, timeout)
            time.sleep(SETTLE_SECONDS)
            with lock:
                return {name: (ns.watch.versions(name), owned_by(workloads, name)) for name in names}
        except (AssertionError, KubectlError) as err:
            return str(err).splitlines()[0]
        finally:
            done.set()
            next(scenarios, None)  # its namespace and queues torn down


def upstream_side(stack: ExitStack, workdir: Path) -> Side:
    """Kueue v0.17 and the AppWrapper controller v1.2.2 on a fresh real control plane with the harness's nodes."""
    control_plane, built = toolchain.locate(), toolchain.locate(which=toolchain.peer_programs)
    if control_plane is None or built is None:
        raise PeerError(NOT_BUILT)
    cluster = stack.enter_context(RealCluster(workdir / "cluster", users_file=USERS, nodes=parse_nodes_file(NODES),
                                              binaries=control_plane, operators=False))
    peers = stack.enter_context(Peers(cluster, built))
    peers.start_appwrapper()  # its CRD first: Kueue integrates AppWrappers only when they are served
    peers.start_kueue()
    kubectl = Kubectl(cluster.kubeconfig, str(control_plane["kubectl"]))
    kubectl.run("apply", "-f", "-", stdin=PRIORITIES)
    log = ControllerProcess(cluster.kubeconfig, cluster.workdir / "logs" / "appwrapper.log")
    return Side("upstream", AwStack(workdir, cluster, kubectl, None, log),
                KubeClient.from_kubeconfig(str(cluster.kubeconfig)))


def batchgate_side(stack: ExitStack, workdir: Path) -> Side:
    """The acceptance harness's batchgate installation on a fresh real control plane."""
    if toolchain.locate() is None:
        raise PeerError(NOT_BUILT)
    installed = start_stack(workdir)
    stack.callback(installed.stop)
    return Side("batchgate", installed, KubeClient.from_kubeconfig(str(installed.cluster.kubeconfig)))


def both_sides(stack: ExitStack, workdir: Path) -> tuple[Side, Side]:
    """Both started at once, stopped with `stack`; if one does not start, the other is stopped too."""
    owns = [stack.enter_context(ExitStack()), stack.enter_context(ExitStack())]
    with ThreadPoolExecutor(2) as pool:
        upstream = pool.submit(upstream_side, owns[0], workdir / "upstream")
        batchgate = pool.submit(batchgate_side, owns[1], workdir / "batchgate")
    return upstream.result(), batchgate.result()


@dataclass
class Result:
    scenario: str
    differences: list[str] = field(default_factory=list)
    not_finished: list[str] = field(default_factory=list)  # "<side>: why", where a side did not finish


def compare(upstream: Side, batchgate: Side, name: str, timeout: float, dump: Path | None) -> Result:
    """One scenario on both sides at once, compared when both finished; with `dump`, what each
    side recorded is written there (<scenario>.<side>.json: the versions' metadata and status)."""
    with ThreadPoolExecutor(2) as pool:
        runs = [(side.name, pool.submit(side.play, SCENARIOS[name], timeout)) for side in (upstream, batchgate)]
        got = [(side, run.result()) for side, run in runs]
    if dump is not None:
        for side, recorded in got:
            if not isinstance(recorded, str):
                kept = {aw: [[_kept(v) for v in versions] for versions in pair] for aw, pair in recorded.items()}
                (dump / f"{name}.{side}.json").write_text(json.dumps(kept, indent=1))
    unfinished = [f"{side}: {why}" for side, why in got if isinstance(why, str)]
    if unfinished:
        return Result(name, not_finished=unfinished)
    (_, u), (_, b) = got
    assert not isinstance(u, str) and not isinstance(b, str)
    return Result(name, [line for aw in u for line in differences(aw, timeline(*u[aw]), timeline(*b[aw]))])


def _kept(version: Mapping[str, Any]) -> dict[str, Any]:
    meta = version.get("metadata") or {}
    return {"name": meta.get("name"), "resourceVersion": meta.get("resourceVersion"),
            "deletionTimestamp": meta.get("deletionTimestamp"), "status": version.get("status")}


def report(r: Result) -> None:
    if r.not_finished:
        print(f"{r.scenario}: NOT FINISHED ({'; '.join(r.not_finished)})", flush=True)
    elif not r.differences:
        print(f"{r.scenario}: agree", flush=True)
    else:
        print(f"{r.scenario}: {len(r.differences)} differences")
        print("\n".join(f"    {line}" for line in r.differences), flush=True)


def scenario_names(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise argparse.ArgumentTypeError(f"no scenario {', '.join(unknown)}: choose from {', '.join(SCENARIOS)}")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=scenario_names, default=list(SCENARIOS), help="comma-separated")
    parser.add_argument("--timeout", type=float, default=90, help="wall seconds each step of a scenario may take")
    parser.add_argument("--dump", type=Path, help="a directory to write what each side recorded to")
    args = parser.parse_args()
    os.environ[CHOICE] = "real"  # the harness's cluster (and its pods' wall-clock durations): the real control plane
    results: list[Result] = []
    workdir = Path(tempfile.mkdtemp(prefix="aw-differential-"))
    with ExitStack() as stack:
        try:
            upstream, batchgate = both_sides(stack, workdir)
        except (PeerError, RealClusterError, StartError, RuntimeError, subprocess.CalledProcessError) as err:
            print(f"bench/peers/appwrapper_differential: a side did not start: {str(err).splitlines()[0]}",
                  file=sys.stderr)
            return 2
        for name in args.scenarios:
            results.append(compare(upstream, batchgate, name, args.timeout, args.dump))
            report(results[-1])
    finished = [r for r in results if not r.not_finished]
    agree = sum(not r.differences for r in finished)
    print(f"\n{len(results)} scenarios: {agree} agree, {len(finished) - agree} differ, "
          f"{len(results) - len(finished)} not finished (logs in {workdir})")
    return 0 if agree == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
