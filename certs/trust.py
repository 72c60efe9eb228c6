"""Whether the certificate a gateway pod serves is trusted by the product's webhook configurations.

A pure judgement for the keeper's readiness endpoint (certs/readiness.py): the API server calls a
webhook only through its caBundle, so a pod serving a certificate no CA there verifies would fail
every review sent to it. A configuration that does not exist is reported, not counted against the
pod: a not-ready gateway would take the endpoint away from the configurations that remain.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature


@dataclass(frozen=True)
class TrustVerdict:
    """Ready when every webhook of every present configuration trusts the served chain; the
    reasons name each webhook that does not, and `missing` the configurations not found."""

    ready: bool
    reasons: tuple[str, ...]
    missing: tuple[str, ...] = ()

    def message(self) -> str:
        parts = list(self.reasons) or ["served certificate trusted by every webhook configuration"]
        if self.missing:
            parts.append(f"not found (re-apply the install): {', '.join(self.missing)}")
        return "; ".join(parts)


def _bundle_cas(bundle: str) -> list[x509.Certificate]:
    """The CA certificates of one caBundle (base64 of PEM); none when it is empty or garbled."""
    try:
        pem = base64.b64decode(bundle, validate=True)
        return list(x509.load_pem_x509_certificates(pem)) if pem.strip() else []
    except (binascii.Error, ValueError):
        return []


def _verifies(ca: x509.Certificate, leaf: x509.Certificate, now: _dt.datetime) -> bool:
    if ca.subject != leaf.issuer or not (ca.not_valid_before_utc <= now <= ca.not_valid_after_utc):
        return False
    try:
        leaf.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError):  # a wrong signature, or a key of another type
        return False
    return True


def judge_trust(served_chain: bytes, configurations: Mapping[str, Sequence[tuple[str, str]] | None],
                now: _dt.datetime) -> TrustVerdict:
    """`served_chain`: the PEM the gateway serves (tls.crt, leaf first); `configurations`: for each
    "Kind/name", its webhooks' (name, caBundle), or None when the configuration was not found."""
    try:
        leaf = x509.load_pem_x509_certificates(served_chain)[0]
    except (ValueError, IndexError):
        return TrustVerdict(False, ("served certificate (tls.crt) missing or not PEM: the keeper has not "
                                    "written the Secret yet, or it is corrupt",))
    if not (leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc):
        return TrustVerdict(False, (f"served certificate not valid now (valid {leaf.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}"
                                    f" to {leaf.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ})",))
    reasons: list[str] = []
    missing: list[str] = []
    for name, webhooks in configurations.items():
        if webhooks is None:
            missing.append(name)
            continue
        for hook, bundle in webhooks:
            cas = _bundle_cas(bundle)
            if not cas:
                reasons.append(f"{name} webhook {hook}: caBundle empty or not PEM")
            elif not any(_verifies(ca, leaf, now) for ca in cas):
                reasons.append(f"{name} webhook {hook}: caBundle has no CA that verifies the served certificate "
                               f"(issuer {leaf.issuer.rfc4514_string()})")
    return TrustVerdict(not reasons, tuple(reasons), tuple(missing))
