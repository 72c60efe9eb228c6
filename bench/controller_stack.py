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
        self.cluster = subprocess.Popen(
            [sys.executable, "-m", "batchgate.cli", "cluster", "--workdir", str(workdir), "--kubeconfig",
             str(self.kubeconfig), "--nodes", str(nodes), "--node-cpu", "64", "--node-memory", "256Gi",
             "--users-file", str(users), "--record-requests", str(self.recorded),
             *(["--node-gpus", str(node_gpus)] if node_gpus else [])], stdout=subprocess.PIPE, text=True, env=env)
        assert self.cluster.stdout is not None
        for line in self.cluster.stdout:
            if line.startswith("press Ctrl-C"):
                break
        threading.Thread(target=self.cluster.stdout.read, daemon=True).start()  # keep the pipe drained
        document = yaml.safe_load(self.kubeconfig.read_text())
        self.url = document["clusters"][0]["cluster"]["server"]
        self.token = next(u["user"]["token"] for u in document["users"] if u["name"] == "admin")
        self.ca_file = str(workdir / "pki" / "serving.crt")  # the stand-in's self-signed serving certificate
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
        session = requests.Session()
        session.trust_env = False
        session.verify = self.ca_file
        session.headers.update({"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        return session

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
        out: Counter[str] = Counter()
        for request in json.loads(self.recorded.read_text()):
            if request["user"] == CONTROLLER_USER:
                what = request["resource"] + (f"/{request['subresource']}" if request["subresource"] else "")
                out[f"{request['verb']} {what}"] += int(request["count"])
        return out
