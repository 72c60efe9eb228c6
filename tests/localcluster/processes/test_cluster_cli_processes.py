"""We start `batchgate cluster --run-image` as a shell starts a background job (SIGINT ignored),
run a process pod, and stop the cluster with SIGINT: the cluster and its pod processes go."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.localcluster.processes.conftest import IMAGE
from tests.localcluster.runtime.conftest import eventually
from tests.localcluster_fixtures import KUBECTL

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what `cmd &` does in a non-interactive shell


def test_sigint_stops_a_background_cluster_and_its_pod_processes(tmp_path):
    kubeconfig, pidfile = tmp_path / "kubeconfig", tmp_path / "pid"
    cluster = subprocess.Popen([sys.executable, "-m", "batchgate.cli", "cluster", "--nodes", "1", "--run-image", IMAGE,
                                "--workdir", str(tmp_path / "work"), "--kubeconfig", str(kubeconfig)],
                               stdout=subprocess.PIPE, text=True, env=ENV, preexec_fn=ignore_sigint)
    try:
        assert cluster.stdout is not None
        lines = [cluster.stdout.readline() for _ in range(6)]
        assert f"pods of {IMAGE} run as local processes\n" in lines
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper", "namespace": "default"},
               "spec": {"containers": [{"name": "main", "image": IMAGE, "command": [
                   sys.executable, "-c", f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                                         "time.sleep(600)"]}]}}
        subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-f", "-"], input=json.dumps(pod), text=True,
                       check=True, capture_output=True, timeout=60)
        pid = int(eventually(lambda: pidfile.exists() and pidfile.read_text(), timeout=60))
        cluster.send_signal(signal.SIGINT)
        assert cluster.wait(timeout=30) == 0
        assert "local cluster stopped" in cluster.stdout.read()
        status = Path(f"/proc/{pid}/status")
        deadline = time.monotonic() + 5
        while status.exists() and "zombie" not in status.read_text().lower() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not status.exists() or "zombie" in status.read_text().lower()
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
