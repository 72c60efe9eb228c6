"""Benchmark the install as users do it, on the local cluster that runs the product's image as pods.

Per round, on a fresh cluster (4 nodes x 8 GPUs): the time from `kubectl apply -k manifests/local`
until every product pod is Ready and every caBundle is injected, and until alice's first
AppWrapper is admitted (that span includes applying the demo's policy, the team namespaces and
the queues, as the demo does). Then, in the first round, the failed-review count while one gateway
pod is deleted, while `kubectl rollout restart deployment/batchgate-webhook` runs, while the
certificate Secret is deleted and while a renewal is forced (`batchgate.dev/renew`), during a
steady stream of alice's AppWrapper submissions (server-side dry runs, so every one is a full
admission through the gateway pods); how long a caBundle edited away takes to come back (the
keeper watches its configurations), as seen by polling kubectl; and how soon after the
controller's leader pod is deleted the standby holds the Lease, on the Lease's own timestamps.
`--kube real` runs it all on the real control plane (realcluster/) instead of the stand-in.
Prints the machine; asserts nothing.

    .venv/bin/python bench/install.py [--rounds 3] [--stream-seconds 20] [--kube local|real]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine_info import machine  # noqa: E402
from demo.kubectl import Kubectl  # noqa: E402
from demo.stack import DEMO_MANIFESTS, install_product, local_image  # noqa: E402
from localcluster.runner import LocalCluster  # noqa: E402
from localcluster.sim.nodes import nodes_from_flags  # noqa: E402
from realcluster.cluster import RealCluster  # noqa: E402
from tests import clusters  # noqa: E402
from tests.e2e.test_install import (DISRUPTIONS, alice_appwrapper, bundles, delete_certificate_secret,  # noqa: E402
                                    delete_leader, eventually, force_renewal, leader, stream_during)


def make_cluster(workdir: Path, kube: str) -> tuple[LocalCluster | RealCluster, Kubectl]:
    """The install's cluster, not started: 4 nodes x 8 GPUs running the product's image as process
    pods, the demo's users; the stand-in ('local') or the real control plane ('real')."""
    return clusters.make(workdir, users_file=DEMO_MANIFESTS / "users.yaml", nodes=nodes_from_flags(4, "32", "256Gi", 8),
                         run_images=[local_image()], kube=kube)


def timed_install(kubectl: Kubectl) -> tuple[float, float]:
    """Seconds from `kubectl apply --server-side -k manifests/local` to every product pod Ready (and
    every caBundle injected), and to alice's first AppWrapper admitted."""
    started = time.monotonic()
    ready = install_product(kubectl)
    first_admitted(kubectl)
    return ready, time.monotonic() - started


def first_admitted(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
    kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "queues.yaml"))
    kubectl.run("create", "-f", "-", user="alice", stdin=json.dumps(alice_appwrapper("first")))
    while not any(c["type"] == "Admitted" and c["status"] == "True"
                  for w in kubectl.get_json("workloads", "-n", "team-a")["items"]
                  for c in w.get("status", {}).get("conditions", [])):
        time.sleep(0.1)


def bundle_heal_seconds(kubectl: Kubectl) -> float:
    """Edit the validating configuration's first caBundle away, then poll until it is back."""
    kubectl.run("patch", "validatingwebhookconfiguration", "batchgate-validating", "--type=json", "-p",
                json.dumps([{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": "Cg=="}]))
    started = time.monotonic()
    while "Cg==" in bundles(kubectl):
        time.sleep(0.05)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stream-seconds", type=float, default=20.0)
    parser.add_argument("--kube", choices=("local", "real"), default="local")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}; cluster: {args.kube}")
    ready, admitted = [], []
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            cluster, kubectl = make_cluster(Path(tmp) / "cluster", args.kube)
            with cluster:
                ready_after, admitted_after = timed_install(kubectl)
                ready.append(ready_after)
                admitted.append(admitted_after)
                line = f"round {i + 1}: apply -k -> every pod Ready {ready[-1]:.1f} s, -> first AppWrapper admitted " \
                       f"{admitted[-1]:.1f} s"
                measured = {**DISRUPTIONS, "the certificate Secret deleted": delete_certificate_secret,
                            "a renewal forced (kubectl annotate ... batchgate.dev/renew=...)": force_renewal}
                for what, disrupt in measured.items() if i == 0 else ():
                    sent, failed, errors = stream_during(kubectl, disrupt, args.stream_seconds)
                    line += f"\n  {what} during {sent} submissions: {failed} failed reviews"
                    line += "".join(f"\n    failure: {e}" for e in errors)
                if i == 0:
                    heals = [bundle_heal_seconds(kubectl) for _ in range(5)]
                    line += f"\n  a caBundle edited away is back after: {', '.join(f'{h:.2f}' for h in heals)} s " \
                            f"(median {statistics.median(heals):.2f} s, as seen by kubectl get in a loop)"
                    holder, pod_name = eventually(lambda: all(leader(kubectl)) and leader(kubectl), "a controller leads")
                    takeover = delete_leader(kubectl, holder, pod_name)
                    line += (f"\n  controller leader pod deleted: the standby acquired the Lease {takeover.seconds:.1f} s "
                             f"after the old leader's last renewal or the deletion (leaseDurationSeconds "
                             f"{takeover.lease_duration_seconds}), leaseTransitions +{takeover.transitions}")
                print(line, flush=True)
    print(f"apply -k manifests/local -> every product pod Ready: median {statistics.median(ready):.1f} s "
          f"(min {min(ready):.1f}, max {max(ready):.1f}); -> first admitted AppWrapper: median "
          f"{statistics.median(admitted):.1f} s (min {min(admitted):.1f}, max {max(admitted):.1f}) over {args.rounds} rounds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
