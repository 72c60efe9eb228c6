"""We test `batchgate cluster`'s node flags as a user runs them: bad nodes files and quantities
stop the start with a clear message and exit code 2; good flags bring up the nodes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from demo.kubectl import KUBECTL

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cluster(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "batchgate.cli", "cluster", *args], capture_output=True, text=True,
                          env=ENV, timeout=timeout)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("- name: gpu\n  capacity: {cpu: 8, nvidia.com/gpu: eight}\n",
                     "nodes[0] (gpu) capacity nvidia.com/gpu: invalid quantity 'eight'", id="a capacity that is not a quantity"),
        pytest.param("- name: gpu\n", "nodes[0].capacity: required mapping like {cpu: '8', memory: 32Gi}", id="a node without capacity"),
    ],
)
def test_a_bad_nodes_file_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "nodes.yaml"
    path.write_text(content)
    result = cluster("--nodes-file", str(path))
    assert result.returncode == 2
    assert result.stderr.strip() == f"batchgate cluster: {path}: {message}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("--node-memory", "lots"), "--node-cpu/--node-memory capacity memory: invalid quantity 'lots'",
                     id="a memory flag that is not a quantity"),
        pytest.param(("--nodes", "-1"), "--nodes must not be negative, got -1", id="a negative node count"),
        pytest.param(("--nodes-file", "/nonexistent/nodes.yaml"), "cannot read /nonexistent/nodes.yaml: No such file or directory",
                     id="a nodes file that is not there"),
    ],
)
def test_bad_node_flags_are_clear_errors(args, message):
    result = cluster(*args)
    assert (result.returncode, result.stderr.strip()) == (2, f"batchgate cluster: {message}")


def test_the_flags_bring_up_the_nodes(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen([sys.executable, "-m", "batchgate.cli", "cluster", "--nodes", "2", "--node-gpus", "4",
                                "--workdir", str(tmp_path / "work"), "--kubeconfig", str(kubeconfig)],
                               stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("press Ctrl-C"):
                break
        assert "nodes: 2 simulated (node-0, node-1)\n" in lines
        out = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                              "wait", "--for=condition=Ready", "node/node-0", "node/node-1", "--timeout=30s"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        nodes = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                                "get", "nodes", "-o", "yaml"], capture_output=True, text=True, timeout=60)
        items = yaml.safe_load(nodes.stdout)["items"]
        assert [n["status"]["allocatable"]["nvidia.com/gpu"] for n in items] == ["4", "4"]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
