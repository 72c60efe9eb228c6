"""`batchgate check` from files: tables, JSON, exit codes, and bad input as one line on stderr."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from controller.check_cli import main
from tests.controller.check.builders import GPU, node
from tests.controller.decisions.trace_builders import basic, cluster_queue, flavor, group, local_queue, workload
from tests.controller.cluster import ROOT, subprocess_env
from tests.tls_stub import TlsStub


def write(tmp_path: Path, objects: list[Any], name: str = "objects.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


def mlbatch_like(gpus_per_node: int = 8) -> list[dict[str, Any]]:
    """Two teams and a slack queue in one cohort, on two GPU nodes; one job running, one waiting."""
    return [
        node("gpu-1", cpu="64", gpus=gpus_per_node), node("gpu-2", cpu="64", gpus=gpus_per_node),
        flavor("default-flavor"),
        cluster_queue("team-a-cq", group({"default-flavor": {"cpu": 48, GPU: 6}}), cohort="default-cohort"),
        cluster_queue("team-b-cq", group({"default-flavor": {"cpu": 48, GPU: 6}}), cohort="default-cohort"),
        cluster_queue("slack-cq", group({"default-flavor": {"cpu": 32, GPU: 4}}), cohort="default-cohort"),
        local_queue("default-queue", "team-a-cq", ns="team-a"), local_queue("default-queue", "team-b-cq", ns="team-b"),
        workload("train", ns="team-a", queue="default-queue", admitted_to="team-a-cq",
                 flavors={"cpu": "default-flavor", GPU: "default-flavor"}, cpu=4, gpu=4, count=2),
        workload("tune", ns="team-b", queue="default-queue", created=5, cpu=4, gpu=8, count=1),
    ]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_healthy_cluster_prints_aligned_tables_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--from-file", str(write(tmp_path, mlbatch_like()))], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("RESOURCE"))
    gpu_line = next(line for line in lines if line.startswith(GPU))
    assert header.index("CAPACITY") == gpu_line.index("16")  # columns line up as in kubectl get
    assert gpu_line.split()[-1] == "ok"
    assert "team-b/tune" in out and "0 error(s)" in out
    assert "fits now in ClusterQueue team-b-cq" in out


def test_over_committed_gpus_exit_1_and_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--from-file", str(write(tmp_path, mlbatch_like(gpus_per_node=4)))], capsys)
    assert code == 1
    assert "OVER-COMMITTED" in out
    assert "the nominal quotas sum to 16 but schedulable nodes have 8 allocatable" in out


def test_json_output_is_one_document_with_every_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--from-file", str(write(tmp_path, mlbatch_like())), "-o", "json"], capsys)
    doc = json.loads(out)
    assert code == 0
    assert set(doc) == {"capacity", "flavorCapacity", "nodes", "clusterQueues", "cohorts", "pending", "findings",
                        "summary"}
    gpu = next(r for r in doc["capacity"] if r["resource"] == GPU)
    assert gpu == {"resource": GPU, "nodes": 2, "capacity": "16", "notCounted": "0", "nominalQuota": "16",
                   "usage": "8", "overCommitted": False}
    team_a = next(q for q in doc["clusterQueues"] if q["name"] == "team-a-cq")
    assert team_a["reservingWorkloads"] == 1 and team_a["active"] is True
    assert next(r for r in team_a["resources"] if r["resource"] == GPU)["borrowed"] == "2"
    assert doc["pending"][0]["name"] == "team-b/tune" and doc["pending"][0]["reasonSource"] == "computed"
    assert doc["summary"]["error"] == 0


def test_fair_sharing_flag_reaches_the_computed_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objects = [flavor(), cluster_queue("a", cpu=10, cohort="c", reclaim="Any"), cluster_queue("b", cpu=10, cohort="c"),
               local_queue("lq", "a", ns="ta"), local_queue("lq", "b", ns="tb"),
               workload("hog", ns="tb", queue="lq", admitted_to="b", cpu=18),
               workload("want", ns="ta", queue="lq", cpu=12, created=3)]
    path = write(tmp_path, objects)
    reasons = []
    for extra in ([], ["--fair-sharing"]):
        _, out, _ = run(["--from-file", str(path), "-o", "json", *extra], capsys)
        reasons.append(json.loads(out)["pending"][0]["reason"])
    assert "Pending the preemption" not in reasons[0] and "Pending the preemption" in reasons[1]


def test_kubectl_lists_are_read_like_separate_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = [{"apiVersion": "v1", "kind": "List", "items": mlbatch_like()}]
    code, out, _ = run(["--from-file", str(write(tmp_path, listed)), "-o", "json"], capsys)
    assert code == 0 and len(json.loads(out)["clusterQueues"]) == 3


def test_a_bad_object_is_an_error_finding_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = cluster_queue("bad", cpu="ten")
    code, out, err = run(["--from-file", str(write(tmp_path, [*basic(cpu=10), bad]))], capsys)
    assert (code, err) == (1, "")
    assert "InvalidObject" in out and "nominalQuota: invalid quantity 'ten'" in out


@pytest.mark.parametrize("content, argv_extra, message", [
    pytest.param("a: [unclosed", [], "invalid YAML at line 1", id="a file that is not YAML is bad input"),
    pytest.param("- just\n- a list\n", [], "document 1 is not a Kubernetes object", id="a YAML list is bad input"),
    pytest.param("metadata: {name: x}\n", [], "document 1 has no kind", id="a document without a kind is bad input"),
    pytest.param("kind: Node\n", ["--kubeconfig", "k"], "--from-file reads no cluster",
                 id="a file and a kubeconfig together are bad input"),
    pytest.param("kind: Node\n", ["-o", "yaml"], "invalid choice: 'yaml'", id="an unknown output format is bad input"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                         argv_extra: list[str], message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(content)
    code, out, err = run(["--from-file", str(path), *argv_extra], capsys)
    assert (code, out) == (2, "")
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--from-file", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and "cannot read" in err and "No such file" in err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


@pytest.mark.parametrize("args, message", [
    pytest.param(lambda tmp: ["--kubeconfig", str(kubeconfig(tmp, f"https://127.0.0.1:{closed_port()}"))],
                 "cannot reach the cluster at https://127.0.0.1:", id="an unreachable cluster exits 2"),
    pytest.param(lambda tmp: ["--kubeconfig", str(tmp / "missing")], "cannot load kubeconfig",
                 id="a missing kubeconfig exits 2"),
    pytest.param(lambda tmp: ["--kubeconfig", str(kubeconfig(tmp, "https://127.0.0.1:1")), "--context", "other"],
                 "cannot load kubeconfig", id="an unknown context exits 2"),
])
def test_cluster_problems_exit_2_with_one_line_and_no_traceback(tmp_path: Path, args: Any, message: str) -> None:
    result = subprocess.run([sys.executable, "-m", "batchgate.cli", "check", *args(tmp_path)], capture_output=True,
                            text=True, timeout=60, env=subprocess_env(), cwd=ROOT)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_batchgate_command_runs_the_check_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path, mlbatch_like())
    result = subprocess.run([sys.executable, "-m", "batchgate.cli", "check", "--from-file", str(path), "-o", "json"],
                            capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["error"] == 0


def test_a_cluster_whose_certificate_is_not_trusted_exits_2_saying_so(tmp_path: Path) -> None:
    stub = TlsStub(web.Application, tmp_path / "pki", "api", "stub", "untrusted api")  # its CA is not the system's
    try:
        path = kubeconfig(tmp_path, f"https://127.0.0.1:{stub.port}")
        config = yaml.safe_load(path.read_text())
        del config["clusters"][0]["cluster"]["insecure-skip-tls-verify"]
        path.write_text(yaml.safe_dump(config))
        result = subprocess.run([sys.executable, "-m", "batchgate.cli", "check", "--kubeconfig", str(path)],
                                capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=ROOT)
    finally:
        stub.stop()
    assert result.returncode == 2, result.stderr
    assert f"cannot reach the cluster at https://127.0.0.1:{stub.port}" in result.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in result.stderr and len(result.stderr.strip().splitlines()) == 1
