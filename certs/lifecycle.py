"""What the gateway's certificate keeper should do, given the Secret, the webhook configurations and now.

Pure: no API calls, no clock reads, no key generation. `plan_secret` looks at the Secret's data and
says whether to keep it, renew only the serving certificate (the CA, and so every caBundle, stays)
or issue a new CA and serving certificate. `stale_bundles` says which webhooks of the product's
configurations do not carry the bundle. The adapter (certs/keeper.py) carries both out.

A CA is renewed without a failed review: the new `ca.crt` holds the new CA first and the old one
after it while the old one is still valid, so configurations trust both the serving certificate
still mounted in running pods and the one the Secret now holds.

A Secret deleted or corrupted while running loses the old CA, yet running pods keep serving the old
certificate until the kubelet projects the new Secret into their volume (its sync period plus its
cache TTL, about a minute or two) and the gateway reloads it. The configurations' caBundle is then
the only record of the old CA: `plan_bundle` keeps the still-valid CAs it carries beside the
Secret's for `switch_grace` after the Secret's serving certificate was issued, and drops them
after. The rule reads only shared state (the Secret, the configurations, now), so every replica's
keeper reaches the same bundle and none flaps it.
"""

from __future__ import annotations

import base64
import datetime as _dt
from dataclasses import dataclass, field
from typing import Literal, Mapping

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from batchgate.keys import RENEW_ANNOTATION, RENEW_CA_PREFIX, RENEWED_ANNOTATION
from certs.authority import BACKDATE, CA_CERT, CA_KEY, TLS_CERT, TLS_KEY

Action = Literal["keep", "renew-serving", "issue-all"]


@dataclass(frozen=True)
class CertSettings:
    """How long certificates live and how early they are renewed (flags of `batchgate certs manage`)."""

    dns_names: tuple[str, ...]
    ca_validity: _dt.timedelta = _dt.timedelta(days=3650)
    """The CA: ten years, as upstream's internal certificate management."""
    serving_validity: _dt.timedelta = _dt.timedelta(days=365)
    serving_renew_before: _dt.timedelta = _dt.timedelta(days=90)
    """Renew this long before expiry: a quarter of the year, many chances for a keeper to run."""
    ca_renew_before: _dt.timedelta = _dt.timedelta(days=90)
    check_every: _dt.timedelta = _dt.timedelta(hours=1)
    """Longest time between two looks at the Secret when nothing is due."""
    switch_grace: _dt.timedelta = _dt.timedelta(minutes=5)
    """How long after a new serving certificate the CAs it replaced stay in the caBundle: longer
    than the kubelet takes to project a changed Secret (sync period + cache TTL, 1 + 1 minute by
    default) plus the gateway's reload, so no pod still serves a certificate the bundle dropped."""

    def __post_init__(self) -> None:
        if not self.dns_names:
            raise ValueError("dns_names: at least one name is needed")
        if self.serving_renew_before >= self.serving_validity:
            raise ValueError("serving_renew_before must be shorter than serving_validity (it would renew forever)")
        if self.switch_grace < _dt.timedelta(0):
            raise ValueError("switch_grace must not be negative")
        if self.ca_renew_before >= self.ca_validity:
            raise ValueError("ca_renew_before must be shorter than ca_validity (it would renew forever)")


@dataclass(frozen=True)
class SecretPlan:
    """What to do with the Secret: the action, why (for the log and Events), and when to look next."""

    action: Action
    reason: str
    recheck_at: _dt.datetime
    keep_old_cas: tuple[x509.Certificate, ...] = field(default=(), compare=False)
    """CAs still valid that the new ca.crt must keep trusting after the new CA (issue-all only)."""
    handled: str | None = None
    """The forced-renewal request this write handles: the keeper records it (RENEWED_ANNOTATION)."""


@dataclass(frozen=True)
class WebhookBundle:
    """One webhook of one configuration, as it is in the cluster."""

    configuration_kind: str
    configuration: str
    index: int
    name: str
    ca_bundle: str


def parse_cas(pem: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle (the new CA first)."""
    return x509.load_pem_x509_certificates(pem)


def _private_key(pem: bytes) -> ec.EllipticCurvePrivateKey | None:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        return None
    return key if isinstance(key, ec.EllipticCurvePrivateKey) else None


def _same_key(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> bool:
    public = cert.public_key()
    return isinstance(public, ec.EllipticCurvePublicKey) and public.public_numbers() == key.public_key().public_numbers()


def _names(cert: x509.Certificate) -> set[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return set(san.get_values_for_type(x509.DNSName))


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def renewal_request(annotations: Mapping[str, str]) -> str | None:
    """The forced-renewal value an admin set on the Secret that the keeper has not handled yet."""
    requested = annotations.get(RENEW_ANNOTATION)
    return requested if requested and requested != annotations.get(RENEWED_ANNOTATION) else None


def plan_secret(data: Mapping[str, bytes] | None, settings: CertSettings, now: _dt.datetime,
                annotations: Mapping[str, str] | None = None) -> SecretPlan:
    """Keep, renew the serving certificate, or issue everything anew; with the reason and the next look.
    A forced renewal (`annotations`, RENEW_ANNOTATION) renews the serving certificate, or with a
    `ca-` value issues a new CA too, without keeping the old one in ca.crt (the caBundle still
    carries it for the switch grace, as when a Secret is lost); every write records the request."""
    request = renewal_request(annotations or {})
    plan = _plan_secret(data, settings, now, request)
    return SecretPlan(plan.action, plan.reason, plan.recheck_at, plan.keep_old_cas,
                      request if plan.action != "keep" else None)


def _plan_secret(data: Mapping[str, bytes] | None, settings: CertSettings, now: _dt.datetime,
                 request: str | None) -> SecretPlan:
    soon = now + settings.check_every
    if data is None:
        return SecretPlan("issue-all", "the Secret does not exist", soon)
    missing = [key for key in (CA_CERT, CA_KEY, TLS_CERT, TLS_KEY) if not data.get(key)]
    if missing:
        return SecretPlan("issue-all", f"the Secret lacks {', '.join(missing)}", soon)
    try:
        cas = parse_cas(data[CA_CERT])
    except ValueError:
        return SecretPlan("issue-all", f"{CA_CERT} is not a PEM certificate", soon)
    ca, older = cas[0], tuple(c for c in cas[1:] if c.not_valid_after_utc > now)
    ca_key = _private_key(data[CA_KEY])
    if ca_key is None or not _same_key(ca, ca_key):
        return SecretPlan("issue-all", f"{CA_KEY} is not the EC key of {CA_CERT}", soon)
    forced = f"renewal requested ({RENEW_ANNOTATION}={request})"
    if request is not None and request.startswith(RENEW_CA_PREFIX):
        return SecretPlan("issue-all", forced, soon)
    ca_due = ca.not_valid_after_utc - settings.ca_renew_before
    if now >= ca_due:
        keep = (ca, *older) if ca.not_valid_after_utc > now else older
        return SecretPlan("issue-all", f"the CA expires {ca.not_valid_after_utc:%Y-%m-%d}", soon, keep)
    if request is not None:
        return SecretPlan("renew-serving", forced, soon)
    try:
        (serving, *_) = parse_cas(data[TLS_CERT])
    except ValueError:
        return SecretPlan("renew-serving", f"{TLS_CERT} is not a PEM certificate", soon)
    key = _private_key(data[TLS_KEY])
    if key is None or not _same_key(serving, key):
        return SecretPlan("renew-serving", f"{TLS_KEY} is not the key of {TLS_CERT}", soon)
    if not _signed_by(serving, ca):
        return SecretPlan("renew-serving", f"{TLS_CERT} is not signed by the CA", soon)
    absent = sorted(set(settings.dns_names) - _names(serving))
    if absent:
        return SecretPlan("renew-serving", f"{TLS_CERT} does not name {', '.join(absent)}", soon)
    serving_due = serving.not_valid_after_utc - settings.serving_renew_before
    if now >= serving_due:
        return SecretPlan("renew-serving", f"the serving certificate expires {serving.not_valid_after_utc:%Y-%m-%d}", soon)
    return SecretPlan("keep", "valid", min(soon, serving_due, ca_due))


@dataclass(frozen=True)
class BundlePlan:
    """The caBundle every webhook must carry, and the CAs from the configurations it keeps (why)."""

    bundle: str
    carried: tuple[str, ...]
    """Subjects of the CAs kept from the configurations, not in the Secret (for the log)."""
    recheck_at: _dt.datetime | None
    """When the carried CAs are dropped (None when none are carried)."""


def _configured_cas(bundles: list[str], now: _dt.datetime) -> list[x509.Certificate]:
    """The still-valid CA certificates the configurations carry (a placeholder or junk is skipped)."""
    found: list[x509.Certificate] = []
    for encoded in bundles:
        try:
            certs = parse_cas(base64.b64decode(encoded, validate=True))
        except ValueError:
            continue
        for cert in certs:
            try:
                is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            except x509.ExtensionNotFound:
                is_ca = False
            if is_ca and cert.not_valid_before_utc <= now < cert.not_valid_after_utc and cert not in found:
                found.append(cert)
    return found


def plan_bundle(data: Mapping[str, bytes], configured: list[str], settings: CertSettings,
                now: _dt.datetime) -> BundlePlan:
    """The Secret's ca.crt, followed, within `switch_grace` of its serving certificate's issue, by
    every valid CA the configurations carry that the Secret lacks (so pods still serving the
    replaced certificate stay trusted until the kubelet gives them the new one)."""
    secret_cas = parse_cas(data[CA_CERT])
    serving = parse_cas(data[TLS_CERT])[0]
    until = serving.not_valid_before_utc + BACKDATE + settings.switch_grace
    carried = [c for c in _configured_cas(configured, now) if c not in secret_cas] if now < until else []
    pem = data[CA_CERT] + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in carried)
    return BundlePlan(base64.b64encode(pem).decode(), tuple(c.subject.rfc4514_string() for c in carried),
                      until if carried else None)


def stale_bundles(webhooks: list[WebhookBundle], bundle: str) -> list[WebhookBundle]:
    """The webhooks whose caBundle is not the Secret's (edited away, a placeholder, an older CA)."""
    return [hook for hook in webhooks if hook.ca_bundle != bundle]
