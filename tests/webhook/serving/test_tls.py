"""Rotated serving certificates are served without a restart (webhook/serving/tls.py).

`batchgate certs rotate` renews the serving certificate under the same CA; the next TLS
handshake with a running gateway must present it, while clients keep trusting the one caBundle.
"""

from __future__ import annotations

import logging
import shutil
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Callable

import pytest
from cryptography import x509

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files

from tests.webhook.helpers import run_cli
from webhook.serving.launch import RunningGateway
from webhook.serving.tls import ReloadingContext

ROTATION_TIMEOUT_SECONDS = 10.0


def served_serial(gateway: RunningGateway) -> int:
    context = ssl.create_default_context(cafile=str(gateway.cert_dir / "ca.crt"))
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="batchgate-webhook.batchgate-system.svc") as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def file_serial(cert_dir: Path) -> int:
    return x509.load_pem_x509_certificate((cert_dir / "tls.crt").read_bytes()).serial_number


def test_a_rotated_certificate_is_served_on_the_next_handshake(cert_dir: Path,
                                                              launch: Callable[..., RunningGateway]) -> None:
    gateway = launch(cert_dir, "--workers", "2")
    before = served_serial(gateway)
    assert before == file_serial(cert_dir)
    ca_before = (cert_dir / "ca.crt").read_bytes()
    result = run_cli("certs", "rotate", "--dir", str(cert_dir))
    assert result.returncode == 0, result.stderr
    assert (cert_dir / "ca.crt").read_bytes() == ca_before, "rotation keeps the CA and so the caBundle"
    rotated = file_serial(cert_dir)
    assert rotated != before
    deadline = time.monotonic() + ROTATION_TIMEOUT_SECONDS
    streak = 0
    while streak < 10:  # ten handshakes in a row with the new serial: both workers serve it
        assert time.monotonic() < deadline, "the gateway still serves the old certificate"
        if served_serial(gateway) == rotated:
            streak += 1
        else:
            streak = 0
            time.sleep(0.05)
    assert sum("Booting worker" in line for line in gateway.stderr_lines) == 2, "no worker was restarted"


def test_a_half_written_pair_keeps_the_previous_context_until_it_matches(tmp_path: Path, cert_dir: Path) -> None:
    reloading = ReloadingContext(cert_dir / "tls.crt", cert_dir / "tls.key")
    first = reloading.get()
    other = tmp_path / "other"
    assert run_cli("certs", "init", "--dir", str(other)).returncode == 0
    shutil.copy(other / "tls.crt", cert_dir / "tls.crt")  # the new cert lands before its key
    assert reloading.get() is first and reloading.reloads == 0
    shutil.copy(other / "tls.key", cert_dir / "tls.key")
    assert reloading.get() is not first and reloading.reloads == 1
    assert reloading.get() is reloading.get(), "unchanged files reuse the cached context"


def test_rotation_never_shows_a_reader_a_mismatched_pair(cert_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A reader reloading as fast as it can while the pair is rotated 30 times never catches a
    new certificate with the old key (KEY_VALUES_MISMATCH), so it never logs a failed load."""
    reloading = ReloadingContext(cert_dir / "tls.crt", cert_dir / "tls.key")
    reloading.get()
    done = threading.Event()

    def rotate() -> None:
        for _ in range(30):
            write_serving_files(cert_dir, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
        done.set()

    rotator = threading.Thread(target=rotate)
    with caplog.at_level(logging.ERROR, logger="batchgate.webhook.tls"):
        rotator.start()
        while not done.is_set():
            reloading.get()
        rotator.join()
        reloading.get()
    assert [r.getMessage() for r in caplog.records] == []
    assert reloading.reloads >= 1
    assert len(list(cert_dir.glob("..pair-*"))) <= 2, "old pairs are removed"
