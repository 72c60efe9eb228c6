"""`batchgate demo`: the main job on a cluster of this machine, narrated.

A cluster with 4 GPU nodes that runs the product's image as real pods: Kubernetes' own control
plane when it is built (realcluster/, `make kube`), else the stand-in (localcluster/); `--kube`
chooses (demo/kube.py). The product installed as users do (`kubectl apply -k manifests/local`,
every pod Ready), then four scenes: the samples in demo/samples (the shapes MLBatch users submit)
submitted by alice and bob through the gateway; MLBatch-like queues with more work than fits
(admission, borrowing and preemption as they happen); a PyTorch AppWrapper whose pods get their
env from the gateway; Ray (a RayCluster in an AppWrapper, a queued RayJob, an unqueued RayCluster
refused). Then the cluster stays up for kubectl until Ctrl-C (or the demo exits, with
--exit-when-done).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import signal
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType

from batchgate.clock import Clock, SystemClock
from demo import framework_scene, gateway_only, queues_scene, ray_scene, samples_scene
from demo.kube import KINDS, Kube, KubeChoiceError, choose
from demo.kubectl import Kubectl, KubectlError
from demo.narration import Narrator
from demo.stack import DEMO_MANIFESTS, SYSTEM_NAMESPACE, Stack, install_product, start_cluster, wait_for_nodes
from localcluster.sim.nodes import nodes_from_flags
from realcluster import toolchain

NODES, NODE_CPU, NODE_MEMORY, NODE_GPUS = 4, "32", "256Gi", 8


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="batchgate demo", description=__doc__.splitlines()[0])
    p.add_argument("--exit-when-done", action="store_true", help="stop the cluster and exit after the last scene")
    p.add_argument("--kube", choices=KINDS, default="auto",
                   help="real: Kubernetes' own control plane (built by `make kube`); local: the stand-in API server; "
                        "auto (default): real when it is built, else local")
    p.add_argument("--speed", type=float,
                   help="the stand-in's simulated time runs this many times faster (default 1); refused on the "
                        "real control plane, which runs on real time")
    p.add_argument("--workdir", type=Path, help="keep certificates, kubeconfig and the audit log here "
                                                "(default: a temporary directory, removed on exit)")
    p.add_argument("--samples", type=Path, default=samples_scene.SAMPLES,
                   help="the manifests scene 1 submits: DIR/alice/*.yaml as alice, DIR/bob/*.yaml as bob; with "
                        "--gateway-only every manifest under DIR (default: the demo's own, demo/samples)")
    p.add_argument("--workers", default="2", help="gunicorn workers for the gateway of --gateway-only (default 2)")
    p.add_argument("--gateway-only", action="store_true",
                   help="no cluster: send the samples straight to the gateway as AdmissionReviews and exit")
    p.add_argument("--verbose", action="store_true", help="show the local cluster's own warnings")
    return p


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _check(args: argparse.Namespace) -> str | None:
    """What makes the demo impossible to run, in one sentence, or None."""
    if args.speed is not None and args.speed <= 0:
        return f"--speed must be positive, got {args.speed}"
    if not args.samples.is_dir():
        return f"--samples: no directory {args.samples}"
    return None


def _kube(args: argparse.Namespace) -> Kube:
    """The Kubernetes `--kube` asks for, if it can run the demo here; else a KubeChoiceError."""
    try:
        kube = choose(args.kube, None if args.kube == "local" else toolchain.locate())
    except toolchain.ToolchainError as err:
        raise KubeChoiceError(str(err)) from None
    if kube.kind == "real" and args.speed not in (None, 1.0):
        chosen = "--kube auto chose it, as it is built" if kube.wanted == "auto" else "--kube real"
        raise KubeChoiceError(f"--speed {args.speed:g}: only the stand-in's simulated time runs faster, and the real "
                              f"control plane ({chosen}) runs on real time: drop --speed, or add --kube local")
    if kube.kind == "local" and shutil.which(kube.kubectl) is None:
        raise KubeChoiceError("kubectl not found on the PATH: the demo drives the stand-in with the real kubectl")
    return kube


def scripted(stack: Stack, narrator: Narrator, clock: Clock, samples: Path) -> None:
    """The four scenes, in order, on a cluster that has just started."""
    narrator.section("1. the gateway: what it does to what users submit")
    nodes = wait_for_nodes(stack.kubectl, NODES)
    narrator.say(f"cluster up at {stack.cluster.url}: {len(nodes)} nodes x {NODE_GPUS} GPUs "
                 f"({', '.join(n['metadata']['name'] for n in nodes)}), users admin, alice (team-a), bob (team-b)")
    seconds = install_product(stack.kubectl)
    pods = stack.kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE)["items"]
    narrator.say("admin: kubectl apply --server-side -k manifests/local, then the demo's policy "
                 f"(demo/manifests/policy.yaml); "
                 f"{len(pods)} product pods Ready after {seconds:.0f}s: "
                 + ", ".join(f"{n} {owner}" for owner, n in sorted(Counter(
                     p["metadata"]["name"].rsplit("-", 2)[0] for p in pods).items())))
    narrator.say("the gateway pods serve TLS with the certificate their keeper made (Secret batchgate-webhook-tls), "
                 "caBundle injected into the webhook configurations; admission calls them through Service "
                 "batchgate-webhook")
    scenes(stack.kubectl, narrator, clock, samples)


def scenes(kubectl: Kubectl, narrator: Narrator, clock: Clock, samples: Path) -> None:
    """Every scene, against a cluster where the product is installed (the least-privilege test
    measures the product's service accounts over these)."""
    kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
    narrator.say("admin creates the team namespaces team-a and team-b (demo/manifests/teams.yaml)")
    samples_scene.run(kubectl, narrator, samples)

    narrator.section("2. the controller: queues, borrowing and preemption, live")
    narrator.say("controller: deployment/batchgate-controller, two replicas, one leading, as service account "
                 "batchgate-controller (quota admission, AppWrapper lifecycle, gang placement)")
    queues_scene.run(kubectl, narrator, clock)

    narrator.section("3. a PyTorch AppWrapper: each pod's env from the gateway")
    framework_scene.run(kubectl, narrator, clock)

    narrator.section("4. Ray: a RayCluster in an AppWrapper, a queued RayJob, an unqueued RayCluster refused")
    ray_scene.run(kubectl, narrator, clock)


def explore(stack: Stack, narrator: Narrator) -> None:
    narrator.section("the cluster is yours")
    narrator.say("it keeps running until Ctrl-C; in another shell:")
    narrator.quote(f"export KUBECONFIG={stack.cluster.kubeconfig}\n"
                   + (f"alias kubectl={stack.kube.kubectl}   # the kubectl of its release: yours may be "
                      "another minor\n" if stack.kube.kind == "real" else "")
                   + "kubectl get clusterqueues; kubectl get workloads -A; kubectl get pods -A -o wide\n"
                   "kubectl describe workload -n team-a; kubectl get events -n team-a\n"
                   "kubectl --context alice -n team-a delete job alice-urgent   # a waiting job is admitted\n"
                   "kubectl --context alice -n team-a create job x --image=busybox   # denied: no queue label\n"
                   ".venv/bin/batchgate check   # capacity against quotas, and why work waits\n"
                   "docs/demo.md has more")
    narrator.say(f"the gateway's audit log (a JSON line per decision): "
                 f"kubectl logs -n {SYSTEM_NAMESPACE} deploy/batchgate-webhook")
    from dashboard.server import serve
    from dashboard.watch import hub_from_kubeconfig

    hub = hub_from_kubeconfig(str(stack.cluster.kubeconfig), None, SystemClock(), audit_log=None)
    dashboard = serve(hub, "127.0.0.1", 0)
    hub.start()
    narrator.say(f"the dashboard (live, read-only; `batchgate dashboard` serves the same): http://127.0.0.1:{dashboard.port}/")
    print(f"export KUBECONFIG={stack.cluster.kubeconfig}", flush=True)
    threading.Event().wait()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    problem = _check(args)
    if problem:
        print(f"batchgate demo: {problem}", file=sys.stderr)
        return 2
    if args.gateway_only:
        return gateway_only.run(args.samples, args.workers)
    try:
        kube = _kube(args)
    except KubeChoiceError as err:
        print(f"batchgate demo: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING if args.verbose else logging.CRITICAL)
    for signum in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a shell's `&` starts us with it ignored
        signal.signal(signum, _interrupt)
    clock = SystemClock()
    narrator = Narrator(clock)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="batchgate-demo-"))
    stack: Stack | None = None
    finished = False
    try:
        narrator.say(f"starting the cluster: {kube.describe()}")
        stack = start_cluster(workdir, kube, nodes_from_flags(NODES, NODE_CPU, NODE_MEMORY, NODE_GPUS),
                              args.speed or 1.0)
        scripted(stack, narrator, clock, args.samples)
        finished = True
        narrator.say("scripted part done")
        if not args.exit_when_done:
            explore(stack, narrator)
        return 0
    except KeyboardInterrupt:
        print("\ninterrupted", flush=True)
        return 0 if finished else 130
    except (KubectlError, RuntimeError, OSError) as exc:
        print(f"batchgate demo: {exc}", file=sys.stderr)
        return 1
    finally:
        if stack is not None:
            stack.stop()
            print("demo cluster, gateway and controller stopped", flush=True)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
