"""The differential: the same quota scenarios fed to Kueue and to batchgate's controller, decisions compared.

Each side runs on its own fresh real control plane (Kueue's CRDs and batchgate's cannot share
one): Kueue v0.17 as bench/peers/kueue_scale.py starts it, batchgate's controller as
bench/admission_scale.py `--kube real` does. A scenario (bench/peers/differential_scenarios.py)
is created as real objects through each API server; its events are played one at a time, each
one settled before the next (no Workload of the scenario changed for two quiet seconds, each one
decided: admitted, or pending with a reason). As in Kueue's own performance harness, the runner
finishes an eviction (quota unset) and marks a Workload finished; neither side's job integration
is involved. After every event the two sides' outcomes are compared: what is admitted, in which
flavor, whom each preempted (victim, preemptor, reason) and each pending Workload's reason. A
scenario played, its Workloads are deleted (standalone ones carry no finalizer on either side):
left pending, Kueue would keep trying them in every scheduling cycle of every later scenario.

    python bench/peers/differential.py [--seeds 0:50] [--parallel 4] [--timeout 60] [--requeue-batch 1s]
        [--equivalence-hashing]

batchgate runs with its policy's default, parked Workloads asked back at once on a quota-freeing
event (`admission.requeueBatchPeriod: 0s`, as Kueue v0.10), while the peer, Kueue v0.17, asks a
root cohort's back one second after the first such event: a parked Workload's "N more needed" can
then differ, each side having tried it at another point (docs/quota.md, seeds 145 and 3).
`--requeue-batch 1s` runs batchgate as the peer does. `--equivalence-hashing` turns on Kueue's beta
gate SchedulingEquivalenceHashing and batchgate's `admission.schedulingEquivalenceHashing` alike.

Fair sharing is a scenario's setting but a controller's config (Kueue reads its config once), so
the seeds are played in two groups, fair sharing off then on, each side's controller restarted
with the setting between them: Kueue with its `fairSharing` block, batchgate with its policy
ConfigMap's `fairSharing.enable`.

It prints one line per scenario (agree, or its differences and the scenario), then the agreement.
A side that is not built or does not start ends the run with one line: nothing is compared
against nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from batchgate.policy import parse_policy  # noqa: E402
from bench.admission_scale import (WL, keep_watching, mark_finished, real_cluster,  # noqa: E402
                                   release_evicted, start_controller)
from bench.peers.differential_scenarios import Arrive, Scenario, describe, generate, setup_objects, workload  # noqa: E402
from bench.peers.kueue_scale import NOT_BUILT, WORKLOADS as KUEUE_WORKLOADS  # noqa: E402
from controller.adapters.kube import CONFIGMAPS, RESOURCES, ApiError, KubeClient, Resource  # noqa: E402
from realcluster import toolchain  # noqa: E402
from realcluster.cluster import RealCluster, RealClusterError  # noqa: E402
from realcluster.peers import PeerError, Peers  # noqa: E402

# No change for this long (and every Workload decided): the event is settled. Over a second:
# Kueue v0.17 moves parked Workloads back a second after quota is freed (its requeue batch period).
# batchgate writes pending reasons from its once-a-second status flush, so with a requeue batch of
# its own its side waits that period longer (`Side.quiet`): the heads tried when the period ends
# have their reasons written up to a flush later.
QUIET_SECONDS = 2.0
UNDECIDED_SECONDS = 5.0  # a Workload that long without a word from the controller counts as pending without a reason
RESTART_SECONDS = 600.0  # a controller restarted, at most this long to catch up
CAUGHT_UP_SECONDS = 5.0
UID = re.compile(r"\(UID: ([^,)]+)")


# what is compared: pure -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Held:
    """One Workload after an event: admitted (with its flavor), pending (with its reason) or finished."""

    state: str
    flavor: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Preempted:
    victim: str
    preemptor: str
    reason: str


@dataclass(frozen=True)
class Outcome:
    """Every Workload of the scenario after one event, and the preemptions the event caused."""

    workloads: dict[str, Held]
    preempted: frozenset[Preempted]
    settled: bool = True


@dataclass(frozen=True)
class Difference:
    step: int
    what: str  # "decision" (admission, flavor, preemption, settling) or "reason" (a pending message)
    text: str


def is_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def held(obj: dict[str, Any], prefix: str, names: dict[str, str] | None = None) -> Held:
    """What a Workload object says of itself; names of the scenario lose their prefix, and the UIDs
    of its Workloads (`names`: uid -> name) become their names, the same on both sides."""
    if is_true(obj, "Finished"):
        return Held("finished")
    admission = (obj.get("status") or {}).get("admission")
    if admission and not is_true(obj, "Evicted"):
        flavors = sorted({f for a in admission.get("podSetAssignments") or [] for f in (a.get("flavors") or {}).values()})
        return Held("admitted", ",".join(flavors).replace(f"{prefix}-", ""))
    reason = str(_condition(obj, "QuotaReserved").get("message", "")).replace(f"{prefix}-", "")
    for uid, name in (names or {}).items():
        reason = reason.replace(uid, name)
    return Held("pending", reason=reason)


def decided(obj: dict[str, Any]) -> bool:
    """The controller has said something of it: admitted, or pending with a reason, and no eviction left to finish."""
    if is_true(obj, "Finished"):
        return True
    if is_true(obj, "Evicted") and (obj.get("status") or {}).get("admission"):
        return False
    return bool(_condition(obj, "QuotaReserved"))


def preemption(obj: dict[str, Any], names: dict[str, str]) -> tuple[tuple[str, str, str], Preempted] | None:
    """The Preempted=True condition of a Workload (keyed by the victim, its time and message, so
    that each preemption counts once: the victims of one preemptor share a time and a message),
    the preemptor named from the UID in its message."""
    cond = _condition(obj, "Preempted")
    if cond.get("status") != "True":
        return None
    match = UID.search(str(cond.get("message", "")))
    preemptor = names.get(match.group(1), "?") if match else "?"
    victim = obj["metadata"]["name"]
    key = (victim, str(cond.get("lastTransitionTime")), str(cond.get("message")))
    return key, Preempted(victim, preemptor, str(cond.get("reason")))


def differences(scenario: Scenario, kueue: list[Outcome], batchgate: list[Outcome]) -> list[Difference]:
    """Where the two sides' outcomes differ, event by event."""
    out: list[Difference] = []
    for step, (k, b) in enumerate(zip(kueue, batchgate)):
        event = scenario.events[step]
        label = (f"after {event.workload} arrives" if isinstance(event, Arrive) else f"after {event.workload} finishes")
        if not (k.settled and b.settled):
            out.append(Difference(step, "decision", f"{label}: not settled (Kueue {k.settled}, batchgate {b.settled})"))
        for name in sorted(set(k.workloads) | set(b.workloads)):
            kh, bh = k.workloads.get(name, Held("absent")), b.workloads.get(name, Held("absent"))
            if (kh.state, kh.flavor) != (bh.state, bh.flavor):
                out.append(Difference(step, "decision", f"{label}: {name} {_show(kh)} in Kueue, {_show(bh)} in batchgate"))
            elif kh.reason != bh.reason:
                out.append(Difference(step, "reason", f"{label}: {name} pending, Kueue {kh.reason!r}, batchgate {bh.reason!r}"))
        if k.preempted != b.preempted:
            out.append(Difference(step, "decision", f"{label}: preempted {_victims(k.preempted)} by Kueue, "
                                                    f"{_victims(b.preempted)} by batchgate"))
    return out


def _show(h: Held) -> str:
    return f"admitted in {h.flavor}" if h.state == "admitted" else h.state


def _victims(preempted: frozenset[Preempted]) -> str:
    return "[" + ", ".join(f"{p.victim} by {p.preemptor} ({p.reason})" for p in sorted(preempted, key=str)) + "]"


# one side: a controller on its own cluster ---------------------------------------------------------

@dataclass
class Recorder:
    """What one scenario's Workloads are on one side, kept current by the side's watch."""

    prefix: str
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # uid -> name
    first_seen: dict[str, float] = field(default_factory=dict)
    seen_preemptions: set[tuple[str, str, str]] = field(default_factory=set)
    preempted: set[Preempted] = field(default_factory=set)  # since the last outcome
    changed: float = field(default_factory=time.monotonic)


class Side:
    """A controller on its own cluster: plays scenarios there and reports each event's outcome.
    One watch of all Workloads serves every scenario; evictions are finished as Kueue's harness does."""

    def __init__(self, name: str, client: KubeClient, workloads: Resource, timeout: float,
                 restart: Callable[[bool], None], fair_sharing: bool, quiet: float = QUIET_SECONDS) -> None:
        self.name, self.client, self.api, self.timeout, self.quiet = name, client, workloads, timeout, quiet
        self.restart, self.fair_sharing = restart, fair_sharing
        self.lock = threading.Lock()
        self.recorders: dict[str, Recorder] = {}
        self.done = threading.Event()
        self.pool = ThreadPoolExecutor(4)
        threading.Thread(target=keep_watching, args=(client, workloads, None, self._observe, self.done), daemon=True).start()

    def close(self) -> None:
        self.done.set()
        self.pool.shutdown(wait=False)

    def use(self, fair_sharing: bool) -> None:
        """Fair sharing on or off from now on: the controller restarted with it, and caught up (no
        ClusterQueue written for a while: Kueue rewrites every one's status after a restart, at its
        client's 50 requests/s, before it gets to a new scenario's). Between scenarios only."""
        if fair_sharing == self.fair_sharing:
            return
        self.restart(fair_sharing)
        self.fair_sharing = fair_sharing
        cq = RESOURCES["ClusterQueue"]
        deadline, last, since = time.monotonic() + RESTART_SECONDS, -1, time.monotonic()
        while time.monotonic() < deadline:
            latest = max((int(o["metadata"]["resourceVersion"]) for o in self.client.list(cq)["items"]), default=0)
            if latest != last:
                last, since = latest, time.monotonic()
            elif time.monotonic() - since >= CAUGHT_UP_SECONDS:
                return
            time.sleep(0.5)
        raise RuntimeError(f"{self.name}: ClusterQueues still written {RESTART_SECONDS:.0f} s after the restart")

    def _observe(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        with self.lock:
            rec = self.recorders.get(meta["namespace"])
            if rec is None:
                return
            rec.objects[meta["name"]] = obj
            rec.first_seen.setdefault(meta["name"], time.monotonic())
            rec.names[meta["uid"]] = meta["name"]
            rec.changed = time.monotonic()
            seen = preemption(obj, rec.names)
            if seen and seen[0] not in rec.seen_preemptions:
                rec.seen_preemptions.add(seen[0])
                rec.preempted.add(seen[1])
            if is_true(obj, "Evicted") and (obj.get("status") or {}).get("admission"):
                self.pool.submit(release_evicted, self.client, self.api, meta["name"], meta["namespace"])

    def play(self, scenario: Scenario) -> list[Outcome]:
        if scenario.fair_sharing != self.fair_sharing:
            raise RuntimeError(f"{self.name}: seed {scenario.seed} wants fair sharing {scenario.fair_sharing}, "
                               f"the controller runs with {self.fair_sharing}: call use() between groups")
        rec = Recorder(scenario.prefix)
        with self.lock:
            self.recorders[scenario.prefix] = rec
        for obj in setup_objects(scenario):
            self._create(RESOURCES[obj["kind"]], obj)
        self._wait_active(scenario)
        outcomes = []
        for event in scenario.events:
            if isinstance(event, Arrive):
                self._create(self.api, workload(scenario, event, self.api.api_version))
            else:
                mark_finished(self.client, self.api, event.workload, scenario.prefix)
            outcomes.append(self._settle(rec))
        with self.lock:
            del self.recorders[scenario.prefix]
        for name in rec.objects:  # gone, so that no later scenario shares a controller with them
            try:
                self.client.delete(self.api, name, scenario.prefix)
            except ApiError as exc:
                if not exc.not_found:
                    raise
        return outcomes

    def _create(self, api: Resource, obj: dict[str, Any]) -> None:
        for attempt in range(20):  # a webhook that is not serving yet refuses with 500
            try:
                self.client.create(api, obj)
                return
            except ApiError as exc:
                if exc.status < 500 or attempt == 19:
                    raise
                time.sleep(0.5)

    def _wait_active(self, scenario: Scenario) -> None:
        """Every ClusterQueue of the scenario Active in its status: the controller has it."""
        cq = RESOURCES["ClusterQueue"]
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if all(is_true(self.client.get(cq, scenario.name(q.name)), "Active") for q in scenario.queues):
                time.sleep(QUIET_SECONDS)  # its LocalQueues too
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: the ClusterQueues of seed {scenario.seed} are not Active after {self.timeout:.0f} s")

    def _settle(self, rec: Recorder) -> Outcome:
        deadline = time.monotonic() + self.timeout
        time.sleep(self.quiet)  # the event reaches the controller and the watch: workloads are seconds apart
        while True:
            with self.lock:
                now = time.monotonic()
                quiet = now - rec.changed >= self.quiet
                # Kueue v0.17 writes nothing to a head that needs preemption and finds no victims
                ready = all(decided(obj) or now - rec.first_seen[name] >= UNDECIDED_SECONDS
                            for name, obj in rec.objects.items())
                if (quiet and ready) or time.monotonic() > deadline:
                    preempted, rec.preempted = frozenset(rec.preempted), set()
                    return Outcome({name: held(obj, rec.prefix, rec.names) for name, obj in rec.objects.items()}, preempted,
                                   quiet and ready)
            time.sleep(0.05)


@contextmanager
def kueue_side(stack: ExitStack, timeout: float, fair_sharing: bool, hashing: bool = False) -> Iterator[Side]:
    """Kueue v0.17 (batch/job integrated only) on a fresh real control plane, with its gate
    SchedulingEquivalenceHashing on where `hashing`."""
    control_plane, built = toolchain.locate(), toolchain.locate(which=toolchain.peer_programs)
    if control_plane is None or built is None:
        raise PeerError(NOT_BUILT)
    cluster = stack.enter_context(RealCluster(Path(tempfile.mkdtemp(prefix="differential-kueue-")), binaries=control_plane,
                                              operators=False))
    peers = stack.enter_context(Peers(cluster, built))
    peers.start_kueue(["batch/job"], fair_sharing, feature_gates={"SchedulingEquivalenceHashing": True} if hashing else None)

    def restart(fair: bool) -> None:
        peers.restart_kueue(fair)

    side = Side("kueue", KubeClient.from_kubeconfig(str(cluster.kubeconfig)), KUEUE_WORKLOADS, timeout, restart,
                fair_sharing)
    try:
        yield side
    finally:
        side.close()


POLICY = ("batchgate-system", "batchgate-policy")  # the controller's default --policy-configmap


def policy_configmap(fair_sharing: bool, requeue_batch: str = "0s", hashing: bool = False) -> dict[str, Any]:
    """batchgate's policy ConfigMap: the defaults, fair sharing on or off, the period parked
    Workloads wait to go back (`admission.requeueBatchPeriod`: 0s as Kueue v0.10, 1s as v0.17) and
    equivalent Workloads parked together or not (`admission.schedulingEquivalenceHashing`)."""
    policy = {"fairSharing": {"enable": fair_sharing},
              "admission": {"requeueBatchPeriod": requeue_batch, "schedulingEquivalenceHashing": hashing}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": POLICY[0], "name": POLICY[1]},
            "data": {"policy.yaml": yaml.safe_dump(policy)}}


@contextmanager
def batchgate_side(stack: ExitStack, timeout: float, fair_sharing: bool, requeue_batch: str = "0s",
                   hashing: bool = False) -> Iterator[Side]:
    """batchgate's controller on a fresh real control plane with batchgate's CRDs and RBAC; a
    restart writes the policy ConfigMap first and waits until the new controller is ready (its
    informers listed, the ConfigMap's policy applied)."""
    if toolchain.locate() is None:
        raise PeerError(NOT_BUILT)
    kubeconfig, controller_kubeconfig, _ = real_cluster(stack, Path(tempfile.mkdtemp(prefix="differential-batchgate-")))
    client = KubeClient.from_kubeconfig(str(kubeconfig))
    running = [stack.enter_context(ExitStack())]  # the controller's own, closed at a restart or with `stack`

    def start(fair: bool) -> None:
        configmap = policy_configmap(fair, requeue_batch, hashing)
        try:
            client.create(CONFIGMAPS, configmap)
        except ApiError as exc:
            if not exc.already_exists:
                raise
            client.replace(CONFIGMAPS, configmap)
        running[0].close()
        _, metrics = start_controller(running[0], controller_kubeconfig)
        wait_ready(metrics.replace("/metrics", "/readyz"), timeout)

    start(fair_sharing)
    batch = parse_policy(policy_configmap(fair_sharing, requeue_batch)["data"]["policy.yaml"]).admission.requeue_batch_period
    side = Side("batchgate", client, WL, timeout, start, fair_sharing, QUIET_SECONDS + batch.total_seconds())
    try:
        yield side
    finally:
        side.close()


def wait_ready(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout:.0f} s")


def both_sides(stack: ExitStack, timeout: float, fair_sharing: bool = False,
               requeue_batch: str = "0s", hashing: bool = False) -> tuple[Side, Side]:
    """Kueue's side and batchgate's, started at once (each cluster takes a minute on a busy
    machine), both stopped with `stack`; if one does not start, the other is stopped too."""
    owns = [stack.enter_context(ExitStack()), stack.enter_context(ExitStack())]  # closed with `stack`, even on Ctrl-C

    def start(own: ExitStack, side: Callable[[ExitStack, float, bool], AbstractContextManager[Side]]) -> Side:
        return own.enter_context(side(own, timeout, fair_sharing))

    with ThreadPoolExecutor(2) as pool:
        kueue = pool.submit(start, owns[0], partial(kueue_side, hashing=hashing))
        batchgate = pool.submit(start, owns[1], partial(batchgate_side, requeue_batch=requeue_batch, hashing=hashing))
    return kueue.result(), batchgate.result()


def use(sides: Iterable[Side], fair_sharing: bool) -> None:
    """Every side switched to `fair_sharing` at once (each restart takes seconds)."""
    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(side.use, fair_sharing) for side in sides]:
            done.result()


def by_fair_sharing(seeds: Iterable[int]) -> list[tuple[bool, list[int]]]:
    """The seeds in the groups they are played in: fair sharing off, then on (a group without seeds left out)."""
    settings = {seed: generate(seed).fair_sharing for seed in seeds}
    return [(fair, group) for fair in (False, True) if (group := [s for s, f in settings.items() if f == fair])]


@dataclass(frozen=True)
class Compared:
    scenario: Scenario
    differences: list[Difference]

    @property
    def decisions_agree(self) -> bool:
        return not any(d.what == "decision" for d in self.differences)


def compare(kueue: Side, batchgate: Side, seed: int) -> Compared:
    """One scenario on both sides at once, compared."""
    scenario = generate(seed)
    with ThreadPoolExecutor(2) as pool:
        k, b = pool.submit(kueue.play, scenario), pool.submit(batchgate.play, scenario)
        return Compared(scenario, differences(scenario, k.result(), b.result()))


def parse_seeds(text: str) -> range:
    start, _, stop = text.partition(":")
    return range(int(start), int(stop)) if stop else range(int(start), int(start) + 1)


def report(r: Compared) -> None:
    """One scenario's line: agree, or its differences and the scenario."""
    if not r.differences:
        print(f"seed {r.scenario.seed}: agree", flush=True)
        return
    print(f"seed {r.scenario.seed}: {'reasons differ' if r.decisions_agree else 'DECISIONS DIFFER'}")
    print("\n".join(f"    {d.what}: {d.text}" for d in r.differences))
    print(describe(r.scenario), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=parse_seeds, default=range(0, 50), help="start:stop (a range of seeds) or one seed")
    parser.add_argument("--parallel", type=int, default=4, help="scenarios played at once on each side")
    parser.add_argument("--timeout", type=float, default=60, help="seconds an event may take to settle")
    parser.add_argument("--fair-sharing", choices=("off", "on"), help="play only the seeds with fair sharing so")
    parser.add_argument("--requeue-batch", default="0s", metavar="PERIOD",
                        help="batchgate's admission.requeueBatchPeriod (default 0s, Kueue v0.10; 1s is Kueue v0.17's)")
    parser.add_argument("--equivalence-hashing", action="store_true",
                        help="both sides park a head's equivalent Workloads with it (Kueue's beta gate "
                             "SchedulingEquivalenceHashing, batchgate's admission.schedulingEquivalenceHashing)")
    args = parser.parse_args()
    results: list[Compared] = []
    groups = [(fair, seeds) for fair, seeds in by_fair_sharing(args.seeds)
              if args.fair_sharing is None or fair == (args.fair_sharing == "on")]
    try:
        with ExitStack() as stack:
            kueue, batchgate = both_sides(stack, args.timeout, groups[0][0] if groups else False, args.requeue_batch,
                                          args.equivalence_hashing)
            for fair, seeds in groups:
                print(f"fair sharing {'on' if fair else 'off'}: {len(seeds)} scenarios", flush=True)
                use((kueue, batchgate), fair)
                pool = ThreadPoolExecutor(args.parallel)
                try:
                    for r in pool.map(lambda seed: compare(kueue, batchgate, seed), seeds):
                        results.append(r)
                        report(r)
                except KeyboardInterrupt:  # stop: the scenarios under way finish, the rest are not started
                    print("interrupted: the agreement below is over the scenarios finished", flush=True)
                    break
                except (ApiError, RuntimeError) as err:  # a side stopped answering (a peer that exited, say)
                    print(f"did not finish: {err}; the agreement below is over the scenarios finished", flush=True)
                    break
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
    except (PeerError, RealClusterError, subprocess.CalledProcessError) as err:
        print(f"bench/peers/differential: {err}", file=sys.stderr)
        return 2
    agree = sum(r.decisions_agree for r in results)
    fully = sum(not r.differences for r in results)
    print(f"\n{len(results)} scenarios: decisions agree in {agree}, decisions and pending reasons in {fully}")
    return 0 if agree == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
