"""Make a CA and serving certificates whose SANs match how Kubernetes dials a webhook.

The API server verifies the webhook's certificate against `<service>.<namespace>.svc`, so the
serving certificate names every form of that DNS name plus loopback for local use. Keys are
ECDSA P-256: fast TLS handshakes, small certificates.
"""

from __future__ import annotations

import base64
import datetime as _dt
import ipaddress
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
CA_BUNDLE = "caBundle"


@dataclass(frozen=True)
class ServingFiles:
    """Where a cert directory keeps its PEMs, and the base64 caBundle for webhook configs."""

    directory: Path
    ca_cert: Path
    cert: Path
    key: Path
    ca_bundle: str


def service_names(service: str, namespace: str) -> list[str]:
    """Every DNS name a client may use to reach a Service, plus loopback."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
        "localhost",
        "127.0.0.1",
    ]


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _san(names: list[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


BACKDATE = _dt.timedelta(minutes=5)
"""Certificates start this long before they are issued, for clocks a little behind ours."""


def make_ca(common_name: str, now: _dt.datetime, days: int) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + _dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def make_serving_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    names: list[str],
    now: _dt.datetime,
    days: int,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + _dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_san(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def write_serving_files(
    directory: str | Path,
    names: list[str],
    now: _dt.datetime,
    *,
    ca_days: int = 3650,
    cert_days: int = 365,
    reuse_ca: bool = True,
) -> ServingFiles:
    """Write ca.crt/ca.key/tls.crt/tls.key/caBundle into `directory`.

    An existing CA there is kept (rotation renews only the serving pair, so webhook
    configurations holding the caBundle stay valid); otherwise a new CA is made.
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    ca_path, ca_key_path = root / CA_CERT, root / CA_KEY
    if reuse_ca and ca_path.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(ca_path.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key_path}: expected an EC private key")
    else:
        ca_cert, ca_key = make_ca("batchgate-ca", now, ca_days)
        _write(ca_key_path, _pem_key(ca_key), private=True)
        _write(ca_path, ca_cert.public_bytes(serialization.Encoding.PEM))
    cert, key = make_serving_cert(ca_cert, ca_key, names, now, cert_days)
    write_pair(root, cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))
    bundle = base64.b64encode(ca_cert.public_bytes(serialization.Encoding.PEM)).decode()
    _write(root / CA_BUNDLE, bundle.encode())
    return ServingFiles(root, ca_path, root / TLS_CERT, root / TLS_KEY, bundle)


DATA_LINK = "..data"
PAIR_PREFIX = "..pair-"


def write_pair(root: Path, cert_pem: bytes, key_pem: bytes) -> None:
    """Replace tls.crt and tls.key so that a reader sees the old pair or the new one, never one of
    each (which a server reloading on change would refuse with KEY_VALUES_MISMATCH).

    Two files cannot be renamed at once, so both go into a fresh directory and one rename of the
    `..data` symlink switches them: the layout kubelet gives a Secret volume, with tls.crt and
    tls.key symlinks through `..data`. The previous pair's directory is kept (a reader may be
    reading it) and older ones removed.
    """
    version = Path(tempfile.mkdtemp(prefix=PAIR_PREFIX, dir=root))
    (version / TLS_CERT).write_bytes(cert_pem)
    key_path = version / TLS_KEY
    key_path.write_bytes(key_pem)
    key_path.chmod(0o600)
    version.chmod(0o755)
    link = root / DATA_LINK
    previous = os.readlink(link) if link.is_symlink() else None
    _symlink(version.name, link)
    for name in (TLS_CERT, TLS_KEY):
        target = f"{DATA_LINK}/{name}"
        path = root / name
        if not (path.is_symlink() and os.readlink(path) == target):
            _symlink(target, path)  # once, in a directory written before this layout
    for old in root.glob(PAIR_PREFIX + "*"):
        if old.name not in (version.name, previous):
            shutil.rmtree(old, ignore_errors=True)


def _symlink(target: str, path: Path) -> None:
    """Point `path` at `target` with one rename (a symlink made beside it, then renamed over it)."""
    tmp = path.with_name(path.name + ".tmp-link")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, path)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    """Write atomically (tmp + rename) so a server reloading certs never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    if private:
        tmp.chmod(0o600)
    tmp.replace(path)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def issue_secret_data(
    names: list[str],
    now: _dt.datetime,
    *,
    ca_days: int,
    cert_days: int,
    current: dict[str, bytes] | None = None,
    keep_cas: tuple[x509.Certificate, ...] = (),
) -> dict[str, bytes]:
    """The data of a serving Secret: a serving pair signed by `current`'s CA, or by a new CA when
    `current` is None; a new ca.crt lists the CAs in `keep_cas` after the new one, so clients
    holding the old bundle and servers holding the old certificate keep trusting each other."""
    if current is None:
        ca_cert, ca_key = make_ca("batchgate-ca", now, ca_days)
        ca_pem = _pem(ca_cert) + b"".join(_pem(c) for c in keep_cas)
    else:
        ca_cert = x509.load_pem_x509_certificates(current[CA_CERT])[0]
        loaded = serialization.load_pem_private_key(current[CA_KEY], password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{CA_KEY}: expected an EC private key")
        ca_key, ca_pem = loaded, current[CA_CERT]
    cert, key = make_serving_cert(ca_cert, ca_key, names, now, cert_days)
    return {CA_CERT: ca_pem, CA_KEY: _pem_key(ca_key), TLS_CERT: _pem(cert), TLS_KEY: _pem_key(key)}
