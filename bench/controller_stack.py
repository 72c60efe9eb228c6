"""The local cluster and the real controller as separate processes, for the end-to-end benchmarks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import requests
import yaml

from bench.cluster_process import ClusterProcess, admin_session, cluster_command
from demo.kubectl import KUBECTL

ROOT = Path(__file__).resolve().parents[1]


CONTROLLER_USER = "batchgate-controller"  # the controller's own identity, so its requests can be told apart


class Processes:
    """`batchgate cluster` and `batchgate controller`, each in its own process (`node_gpus` 0: CPU-only nodes).

    The controller calls as its own user (a cluster admin): the cluster counts every request by
    user, and `controller_requests` reads the controller's counts once both have stopped."""

    def __init__(self, workdir: Path, nodes: int, qps: float, burst: int, node_gpus: int = 0) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.kubeconfig = workdir / "kubeconfig"
        self.recorded = workdir / "requests.json"
        users = workdir / "users.yaml"
        users.write_text(yaml.safe_dump({"users": [{"name": CONTROLLER_USER, "groups": ["system:masters"]}]}))
        started = ClusterProcess(cluster_command(
            workdir, self.kubeconfig, "--nodes", str(nodes), "--node-cpu", "64", "--node-memory", "256Gi",
            "--users-file", str(users), "--record-requests", str(self.recorded),
            *(["--node-gpus", str(node_gpus)] if node_gpus else [])), workdir, self.kubeconfig)
        self.cluster, self.url, self.token, document = started.process, started.url, started.token, started.document
        self.ca_file = started.ca_file
        assert self.cluster.stdout is not None
        threading.Thread(target=self.cluster.stdout.read, daemon=True).start()  # keep the pipe drained
        subprocess.run([KUBECTL, f"--kubeconfig={self.kubeconfig}", "apply", "-k", str(ROOT / "manifests" / "crds")],
                       check=True, capture_output=True, timeout=120)
        controller_kubeconfig = workdir / "controller.kubeconfig"
        controller_kubeconfig.write_text(yaml.safe_dump({**document, "current-context": CONTROLLER_USER}))
        self.controller = subprocess.Popen(
            [sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", str(controller_kubeconfig),
             "--no-leader-elect", "--qps", str(qps), "--burst", str(burst), "--metrics-address", "127.0.0.1",
             "--metrics-port", "0", "--log-level", "warning"],
            env=env, stderr=subprocess.DEVNULL)

    def session(self) -> requests.Session:
        return admin_session(self.token, self.ca_file)

    def stop(self) -> None:
        for process in (self.controller, self.cluster):
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()

    def controller_requests(self) -> Counter[str]:
        """The controller's resource requests by `verb resource[/subresource]`, as the cluster counted
        them (read after `stop`: the cluster writes its counts as it stops)."""
        return recorded_requests(self.recorded, CONTROLLER_USER)


def recorded_requests(path: Path, user: str) -> Counter[str]:
    """`user`'s requests by `verb resource[/subresource]`, as `batchgate cluster --record-requests` wrote them."""
    out: Counter[str] = Counter()
    for request in json.loads(path.read_text()):
        if request["user"] == user:
            what = request["resource"] + (f"/{request['subresource']}" if request["subresource"] else "")
            out[f"{request['verb']} {what}"] += int(request["count"])
    return out
