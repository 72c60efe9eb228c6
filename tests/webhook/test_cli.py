"""`batchgate webhook`'s start-up checks and messages (the demo's tests are in tests/demo/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webhook.helpers import run_cli
from webhook.serving.launch import start_gateway


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
