"""`batchgate demo` end to end, and `batchgate webhook`'s start-up checks and messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webhook.server.helpers import corpus_dir, corpus_objects, run_cli
from webhook.demo import describe_patch
from webhook.launch import start_gateway


def test_the_demo_sends_every_corpus_object_from_two_users_through_the_real_gateway() -> None:
    result = run_cli("demo", "--exit-when-done", "--corpus", str(corpus_dir()), timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    decisions = [line for line in lines if line.startswith(("alice ", "bob "))]
    objects = corpus_objects()
    assert len(decisions) == 2 * len(objects)
    assert sum(line.startswith("alice ") for line in decisions) == len(objects)
    assert any("allowed user=alice, userid=uid-alice-1001" in line for line in decisions)
    assert any("allowed user=bob, userid=uid-bob-1002" in line for line in decisions)
    assert any("DENIED" in line and "allowedKinds.wrapped" in line for line in decisions)
    assert lines[0].startswith("gateway: gunicorn over TLS at https://127.0.0.1:")
    allowed = sum(" allowed " in line for line in decisions)
    assert lines[-1] == (f"{len(decisions)} decisions: {allowed} allowed, {len(decisions) - allowed} denied; "
                         f"{len(decisions) * 2} audit lines "
                         "(one per /mutate and /validate call)")


def test_the_demo_fails_loudly_without_a_corpus(tmp_path: Path) -> None:
    result = run_cli("demo", "--corpus", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "not found" in result.stderr


@pytest.mark.parametrize(
    ("ops", "summary"),
    [
        pytest.param([], "no change", id="an empty patch is no change"),
        pytest.param([{"op": "add", "path": "/metadata/labels", "value": {"a/user": "x", "b": "y"}}], "user=x, b=y",
                     id="a whole labels map reads as its labels"),
        pytest.param([{"op": "add", "path": "/spec/a/schedulerName", "value": "s"},
                      {"op": "add", "path": "/spec/b/schedulerName", "value": "s"}], "schedulerName=s (x2)",
                     id="repeats are counted"),
        pytest.param([{"op": "remove", "path": "/spec/x"}], "removed /spec/x", id="a removal names its path"),
    ],
)
def test_the_demo_describes_a_patch_by_what_it_sets(ops: list, summary: str) -> None:
    assert describe_patch(ops) == summary


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--port", "70000"], "port must be 0..65535", id="a port out of range"),
        pytest.param(["--port", "0", "--policy-configmap", "no-slash"], "expected NAMESPACE/NAME",
                     id="a ConfigMap reference without a namespace"),
        pytest.param(["--port", "0", "--workers", "0"], "must be at least 1", id="zero workers"),
        pytest.param(["--port", "0", "--policy-file", "a", "--policy-configmap", "ns/n"], "not allowed with",
                     id="two policy sources"),
        pytest.param(["--port", "0", "--policy-configmap", "ns/n", "--kubeconfig", "/no/kubeconfig"],
                     "cannot use the kubeconfig", id="a kubeconfig that does not exist"),
    ],
)
def test_the_webhook_command_refuses_bad_options_with_exit_2(cert_dir: Path, args: list[str], message: str) -> None:
    result = run_cli("webhook", "--cert-dir", str(cert_dir), *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_the_webhook_command_needs_certificates(tmp_path: Path) -> None:
    result = run_cli("webhook", "--cert-dir", str(tmp_path), "--port", "0")
    assert result.returncode == 2 and "tls.crt not found" in result.stderr and "batchgate certs init" in result.stderr


def test_without_a_policy_source_the_gateway_says_it_uses_the_defaults(cert_dir: Path) -> None:
    gateway = start_gateway(cert_dir, "--workers", "1")
    try:
        client = gateway.client()
        status, body, _ = client.request("GET", "/readyz")
        client.close()
    finally:
        gateway.stop()
    assert status == 200 and b"built-in defaults" in body
    assert any("using the built-in default policy" in line for line in gateway.stderr_lines)


def test_each_run_gets_its_own_metrics_directory_and_removes_it_on_exit(
        cert_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # where the gateway makes its PROMETHEUS_MULTIPROC_DIR
    gateway = start_gateway(cert_dir, "--workers", "2")
    try:
        client = gateway.client()
        assert client.request("GET", "/metrics")[0] == 200
        client.close()
        (metrics_dir,) = tmpdir.glob("batchgate-metrics-*")
        assert list(metrics_dir.glob("*.db")), "workers write their samples there"
    finally:
        assert gateway.stop() == 0
    assert list(tmpdir.glob("batchgate-metrics-*")) == []
