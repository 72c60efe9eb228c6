"""The stand-in's own serving certificates, made the way kube-apiserver and the kubelet make theirs
when they are given none: one self-signed certificate for the names clients dial, which is also
what those clients trust (the kubeconfig's certificate-authority-data, a pod's `ca.crt`).

The stand-in plays Kubernetes, so it carries its own rather than borrowing the product's
certificate authority (which a real cluster never shares with its API server either).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=365)
CLOCK_SKEW = dt.timedelta(minutes=5)  # valid from a little earlier, for clients whose clocks lag


@dataclass(frozen=True)
class ServingPair:
    cert: Path  # PEM; trusted by clients as their CA file too
    key: Path  # PEM, PKCS8, readable by its owner only


def _alt_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def self_signed(directory: Path, names: list[str], now: dt.datetime) -> ServingPair:
    """`<directory>/serving.crt` and `serving.key`: kept when a pair there is still valid for `names`
    (kube-apiserver keeps its `--cert-dir` pair, so a server restarted on the same directory is
    trusted by the clients it had), else a fresh ECDSA P-256 certificate written there."""
    pair = ServingPair(directory / "serving.crt", directory / "serving.key")
    if _still_serves(pair, names, now):
        return pair
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{names[0]}@{int(now.timestamp())}")])
    builder = x509.CertificateBuilder(
        subject_name=subject, issuer_name=subject, public_key=key.public_key(),
        serial_number=x509.random_serial_number(), not_valid_before=now - CLOCK_SKEW,
        not_valid_after=now + VALIDITY,
        extensions=[
            x509.Extension(x509.BasicConstraints.oid, True, x509.BasicConstraints(ca=True, path_length=0)),
            x509.Extension(x509.SubjectAlternativeName.oid, False,
                           x509.SubjectAlternativeName([_alt_name(n) for n in names])),
            x509.Extension(x509.ExtendedKeyUsage.oid, False,
                           x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])),
        ],
    )
    cert = builder.sign(key, hashes.SHA256())
    directory.mkdir(parents=True, exist_ok=True)
    pair.key.touch(mode=0o600)
    pair.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return pair


def _still_serves(pair: ServingPair, names: list[str], now: dt.datetime) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
        key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
    except (OSError, ValueError):
        return False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    covered = all(_alt_name(name) in san for name in names)
    matches = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo) \
        == cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return covered and matches and cert.not_valid_before_utc <= now < cert.not_valid_after_utc - CLOCK_SKEW
