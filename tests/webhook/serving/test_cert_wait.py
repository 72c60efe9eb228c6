"""`batchgate webhook --cert-wait`: a gateway started before its Secret exists waits for the
serving files (the certificate keeper makes them) and then serves; without them it says how to
make them and exits 2."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from webhook.serving.launch import start_gateway


def test_a_gateway_waits_for_its_certificate_and_then_serves(tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    # late enough that a gateway slow to start on a loaded machine still finds no files and waits
    timer = threading.Timer(3.0, lambda: write_serving_files(cert_dir, service_names("gate", "sys"), SystemClock().now()))
    timer.start()
    gateway = start_gateway(cert_dir, "--cert-wait", "25")
    try:
        assert any("waiting for" in line for line in gateway.stderr_lines)
        status, _, _ = gateway.client().request("GET", "/healthz")
        assert status == 200
    finally:
        timer.cancel()
        gateway.stop()


def test_without_a_certificate_the_gateway_says_how_to_make_one(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "batchgate.cli", "webhook", "--cert-dir", str(tmp_path),
                             "--port", "0"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "batchgate certs manage" in result.stderr
