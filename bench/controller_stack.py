"""The local cluster and the real controller as separate processes, for the end-to-end benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import requests
import yaml

from demo.kubectl import KUBECTL

ROOT = Path(__file__).resolve().parents[1]


class Processes:
    """`batchgate cluster` and `batchgate controller`, each in its own process (`node_gpus` 0: CPU-only nodes)."""

    def __init__(self, workdir: Path, nodes: int, qps: float, burst: int, node_gpus: int = 0) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.kubeconfig = workdir / "kubeconfig"
        self.cluster = subprocess.Popen(
            [sys.executable, "-m", "batchgate.cli", "cluster", "--workdir", str(workdir), "--kubeconfig",
             str(self.kubeconfig), "--nodes", str(nodes), "--node-cpu", "64", "--node-memory", "256Gi",
             *(["--node-gpus", str(node_gpus)] if node_gpus else [])], stdout=subprocess.PIPE, text=True, env=env)
        assert self.cluster.stdout is not None
        for line in self.cluster.stdout:
            if line.startswith("press Ctrl-C"):
                break
        threading.Thread(target=self.cluster.stdout.read, daemon=True).start()  # keep the pipe drained
        document = yaml.safe_load(self.kubeconfig.read_text())
        self.url = document["clusters"][0]["cluster"]["server"]
        self.token = next(u["user"]["token"] for u in document["users"] if u["name"] == "admin")
        self.ca_file = str(workdir / "pki" / "ca.crt")
        subprocess.run([KUBECTL, f"--kubeconfig={self.kubeconfig}", "apply", "-k", str(ROOT / "manifests" / "crds")],
                       check=True, capture_output=True, timeout=120)
        self.controller = subprocess.Popen(
            [sys.executable, "-m", "batchgate.cli", "controller", "--kubeconfig", str(self.kubeconfig),
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
