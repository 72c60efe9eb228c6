import base64
import ssl
import subprocess
import sys
import threading
from pathlib import Path

from cryptography import x509

from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files


def test_serving_cert_covers_every_service_name_and_loopback(tmp_path: Path) -> None:
    files = write_serving_files(tmp_path, service_names("gate", "sys"), SystemClock().now())
    cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = set(san.get_values_for_type(x509.DNSName))
    assert {"gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local", "localhost"} <= dns
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert base64.b64decode(files.ca_bundle) == files.ca_cert.read_bytes()
    assert oct(files.key.stat().st_mode & 0o777) == "0o600"


def test_a_tls_client_trusting_the_ca_accepts_the_svc_name(tmp_path: Path) -> None:
    files = write_serving_files(tmp_path, service_names("gate", "sys"), SystemClock().now())
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(files.cert, files.key)
    client_ctx = ssl.create_default_context(cafile=str(files.ca_cert))
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve)
    thread.start()
    with socket.create_connection(("127.0.0.1", port)) as raw:
        with client_ctx.wrap_socket(raw, server_hostname="gate.sys.svc") as tls:
            assert tls.recv(2) == b"ok"
    thread.join()
    listener.close()


def test_rotate_keeps_the_ca_so_the_ca_bundle_stays_valid(tmp_path: Path) -> None:
    first = write_serving_files(tmp_path, ["a"], SystemClock().now())
    second = write_serving_files(tmp_path, ["a"], SystemClock().now(), reuse_ca=True)
    assert first.ca_bundle == second.ca_bundle


def test_cli_init_prints_the_ca_bundle(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "batchgate.cli", "certs", "init", "--dir", str(tmp_path), "--service", "s"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert (tmp_path / "caBundle").read_text() in out
