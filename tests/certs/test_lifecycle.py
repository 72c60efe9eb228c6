"""The certificate keeper's decisions: what to do with the serving Secret, given its data and now.

We test these aspects: a missing or broken Secret is issued anew, a serving certificate near its
end or for the wrong names is renewed under the same CA, a CA near its end is replaced while the
old CA stays trusted, a valid Secret is kept until the next look, applying any plan leaves a
Secret the next look keeps, a forced renewal is handled once, webhooks whose caBundle is not the
Secret's are found, and a CA lost with its Secret stays in the caBundle beside the new one until
the switch grace is over.
"""

from __future__ import annotations

import base64
import datetime as _dt
from typing import Callable

import pytest
from cryptography import x509

from batchgate.clock import UTC
from batchgate.keys import RENEW_ANNOTATION, RENEWED_ANNOTATION
from certs.authority import CA_CERT, CA_KEY, TLS_CERT, TLS_KEY, issue_secret_data
from certs.lifecycle import CertSettings, WebhookBundle, parse_cas, plan_bundle, plan_secret, stale_bundles

T0 = _dt.datetime(2030, 1, 1, tzinfo=UTC)
NAMES = ("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local")
SETTINGS = CertSettings(dns_names=NAMES)
DAY = _dt.timedelta(days=1)
Data = dict[str, bytes]


def fresh(at: _dt.datetime = T0, names: tuple[str, ...] = NAMES) -> Data:
    return issue_secret_data(list(names), at, ca_days=3650, cert_days=365)


def with_other_ca_key(data: Data) -> Data:
    return {**data, CA_KEY: fresh()[CA_KEY]}


def with_foreign_serving(data: Data) -> Data:
    other = fresh()
    return {**data, TLS_CERT: other[TLS_CERT], TLS_KEY: other[TLS_KEY]}


def renewed_serving(at: _dt.datetime) -> Callable[[Data], Data]:
    return lambda data: issue_secret_data(list(NAMES), at, ca_days=3650, cert_days=365, current=data)


@pytest.mark.parametrize("make, now, action, reason", [
    pytest.param(lambda: None, T0, "issue-all", "does not exist", id="a missing Secret is issued"),
    pytest.param(lambda: {k: v for k, v in fresh().items() if k != TLS_KEY}, T0, "issue-all", "lacks tls.key",
                 id="a Secret without its serving key is issued anew"),
    pytest.param(lambda: {**fresh(), CA_CERT: b"junk"}, T0, "issue-all", "not a PEM",
                 id="a corrupted CA certificate is issued anew"),
    pytest.param(lambda: with_other_ca_key(fresh()), T0, "issue-all", "not the EC key",
                 id="a CA key that does not match its certificate is issued anew"),
    pytest.param(lambda: fresh(), T0, "keep", "valid", id="a fresh Secret is kept"),
    pytest.param(lambda: fresh(), T0 + 274 * DAY, "keep", "valid", id="91 days before the serving expiry it is kept"),
    pytest.param(lambda: fresh(), T0 + 276 * DAY, "renew-serving", "expires",
                 id="89 days before the serving expiry it is renewed"),
    pytest.param(lambda: fresh(names=NAMES[:2]), T0, "renew-serving", "does not name gate.sys.svc",
                 id="a serving certificate missing a Service name is renewed"),
    pytest.param(lambda: with_foreign_serving(fresh()), T0, "renew-serving", "not signed by the CA",
                 id="a serving certificate from another CA is renewed"),
    pytest.param(lambda: {**fresh(), TLS_KEY: fresh()[TLS_KEY]}, T0, "renew-serving", "not the key",
                 id="a serving key that does not match is renewed"),
    pytest.param(lambda: {**fresh(), TLS_CERT: b"junk"}, T0, "renew-serving", "not a PEM",
                 id="a corrupted serving certificate is renewed"),
    pytest.param(lambda: renewed_serving(T0 + 3400 * DAY)(fresh()), T0 + 3600 * DAY, "issue-all", "the CA expires",
                 id="a CA 50 days from its end is replaced"),
])
def test_the_plan_for_a_secret(make: Callable[[], Data | None], now: _dt.datetime, action: str, reason: str) -> None:
    plan = plan_secret(make(), SETTINGS, now)
    assert (plan.action, reason in plan.reason) == (action, True), plan.reason


ASK = {RENEW_ANNOTATION: "2030-01-02"}
ASK_CA = {RENEW_ANNOTATION: "ca-2030-01-02"}


@pytest.mark.parametrize("make, annotations, action, handled, keeps_ca", [
    pytest.param(fresh, {}, "keep", None, True, id="no request keeps a valid Secret"),
    pytest.param(fresh, ASK, "renew-serving", "2030-01-02", True,
                 id="a new request renews the serving certificate under the same CA and is recorded"),
    pytest.param(fresh, {**ASK, RENEWED_ANNOTATION: "2030-01-02"}, "keep", None, True,
                 id="a request already handled is not handled again"),
    pytest.param(fresh, {**ASK, RENEWED_ANNOTATION: "2030-01-01"}, "renew-serving", "2030-01-02", True,
                 id="a request with a value other than the one handled is handled"),
    pytest.param(fresh, {RENEW_ANNOTATION: ""}, "keep", None, True, id="an empty request is no request"),
    pytest.param(fresh, ASK_CA, "issue-all", "ca-2030-01-02", False,
                 id="a request starting with ca- issues a new CA without keeping the old one in ca.crt"),
    pytest.param(lambda: None, ASK, "issue-all", "2030-01-02", False,
                 id="a request on a Secret that must be issued anew anyway is recorded with it"),
    pytest.param(lambda: {**fresh(), TLS_CERT: b"junk"}, ASK, "renew-serving", "2030-01-02", True,
                 id="a request on a broken serving certificate renews it once"),
])
def test_a_forced_renewal(make: Callable[[], Data | None], annotations: dict[str, str], action: str,
                          handled: str | None, keeps_ca: bool) -> None:
    data = make()
    plan = plan_secret(data, SETTINGS, T0 + DAY, annotations)
    assert (plan.action, plan.handled, plan.keep_old_cas) == (action, handled, ()), plan.reason
    assert (plan.action != "issue-all") is keeps_ca
    assert (RENEW_ANNOTATION in plan.reason) is (data is not None and handled is not None), plan.reason


def apply(data: Data | None, now: _dt.datetime) -> Data:
    """What the keeper writes for the plan of `data` at `now`."""
    plan = plan_secret(data, SETTINGS, now)
    if plan.action == "keep":
        assert data is not None
        return data
    current = data if plan.action == "renew-serving" else None
    return issue_secret_data(list(NAMES), now, ca_days=3650, cert_days=365, current=current, keep_cas=plan.keep_old_cas)


@pytest.mark.parametrize("days", [0, 100, 276, 364, 366, 3000, 3600, 3649, 3651],
                         ids=lambda d: f"whatever the Secret, after {d} days the keeper's write is kept at once")
def test_applying_a_plan_converges(days: int) -> None:
    now = T0 + days * DAY
    data = apply(apply(fresh(), now), now)
    assert plan_secret(data, SETTINGS, now).action == "keep"


def test_a_valid_secret_is_looked_at_again_when_renewal_falls_due_or_within_the_check_period() -> None:
    plan = plan_secret(fresh(), SETTINGS, T0 + 274 * DAY + _dt.timedelta(hours=23, minutes=30))
    assert plan.recheck_at - (T0 + 274 * DAY + _dt.timedelta(hours=23, minutes=30)) <= SETTINGS.check_every
    assert plan_secret(fresh(), SETTINGS, T0).recheck_at == T0 + SETTINGS.check_every


def test_a_replaced_ca_is_still_trusted_so_running_pods_keep_serving() -> None:
    now = T0 + 3600 * DAY
    old = renewed_serving(T0 + 3400 * DAY)(fresh())
    new = apply(old, now)
    old_ca, new_ca = parse_cas(old[CA_CERT])[0], parse_cas(new[CA_CERT])[0]
    assert [c.serial_number for c in parse_cas(new[CA_CERT])] == [new_ca.serial_number, old_ca.serial_number]
    old_serving = x509.load_pem_x509_certificate(old[TLS_CERT])
    old_serving.verify_directly_issued_by(parse_cas(new[CA_CERT])[1])
    x509.load_pem_x509_certificate(new[TLS_CERT]).verify_directly_issued_by(new_ca)


def test_an_expired_old_ca_is_dropped_from_the_bundle() -> None:
    data = apply(renewed_serving(T0 + 3400 * DAY)(fresh()), T0 + 3600 * DAY)
    later = T0 + 3700 * DAY
    assert plan_secret(data, SETTINGS, later).action == "keep"
    renewed = apply(data, T0 + 7200 * DAY)  # the second CA near its end: the first expired long ago
    second = parse_cas(data[CA_CERT])[0]
    assert [c.serial_number for c in parse_cas(renewed[CA_CERT])][1:] == [second.serial_number]


def test_webhooks_whose_bundle_differs_are_stale() -> None:
    data = fresh()
    good = plan_bundle(data, [], SETTINGS, T0).bundle
    hooks = [WebhookBundle("ValidatingWebhookConfiguration", "v", 0, "a", good),
             WebhookBundle("ValidatingWebhookConfiguration", "v", 1, "b", "Cg=="),
             WebhookBundle("MutatingWebhookConfiguration", "m", 0, "c", "")]
    assert [h.name for h in stale_bundles(hooks, good)] == ["b", "c"]


def b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


OLD = fresh()
"""The Secret before it was deleted: its CA is what the configurations carry."""
GRACE = SETTINGS.switch_grace


@pytest.mark.parametrize("configured, new_at, now, carried", [
    pytest.param(lambda: [b64(OLD[CA_CERT])] * 3, T0 + DAY, T0 + DAY, True,
                 id="right after a new Secret the lost CA the configurations carry stays beside the new one"),
    pytest.param(lambda: [b64(OLD[CA_CERT])], T0 + DAY, T0 + DAY + GRACE - _dt.timedelta(seconds=1), True,
                 id="the lost CA stays until the switch grace is over"),
    pytest.param(lambda: [b64(OLD[CA_CERT])], T0 + DAY, T0 + DAY + GRACE, False,
                 id="once the switch grace is over the lost CA is dropped"),
    pytest.param(lambda: [b64(OLD[CA_CERT])], T0 + 3651 * DAY, T0 + 3651 * DAY, False,
                 id="an expired lost CA is not carried"),
    pytest.param(lambda: ["Cg==", "", "not base64!"], T0 + DAY, T0 + DAY, False,
                 id="a placeholder or junk bundle carries nothing"),
    pytest.param(lambda: [b64(OLD[TLS_CERT])], T0 + DAY, T0 + DAY, False,
                 id="a certificate that is not a CA is not carried"),
])
def test_a_ca_lost_with_its_secret_stays_in_the_bundle_for_the_switch_grace(
        configured: Callable[[], list[str]], new_at: _dt.datetime, now: _dt.datetime, carried: bool) -> None:
    new = fresh(new_at)
    plan = plan_bundle(new, configured(), SETTINGS, now)
    cas = parse_cas(base64.b64decode(plan.bundle))
    assert cas[0] == parse_cas(new[CA_CERT])[0]
    assert (cas[1:] == parse_cas(OLD[CA_CERT])) is carried
    assert (plan.recheck_at == new_at + GRACE) is carried
    if carried:  # the serving certificate the pods still serve chains to the bundle
        x509.load_pem_x509_certificate(OLD[TLS_CERT]).verify_directly_issued_by(cas[1])


def test_a_ca_the_secret_already_lists_is_not_carried_twice() -> None:
    renewed = apply(OLD, T0 + 3600 * DAY)  # a CA renewal: the new ca.crt lists the old CA after the new
    plan = plan_bundle(renewed, [b64(OLD[CA_CERT]), b64(renewed[CA_CERT])], SETTINGS, T0 + 3600 * DAY)
    assert base64.b64decode(plan.bundle) == renewed[CA_CERT] and plan.carried == ()


@pytest.mark.parametrize("change, field", [
    pytest.param({"dns_names": ()}, "dns_names", id="no DNS names is refused"),
    pytest.param({"serving_renew_before": _dt.timedelta(days=400)}, "serving_renew_before",
                 id="renewing earlier than a certificate lives is refused"),
    pytest.param({"ca_renew_before": _dt.timedelta(days=4000)}, "ca_renew_before",
                 id="renewing the CA earlier than it lives is refused"),
    pytest.param({"switch_grace": -DAY}, "switch_grace", id="a negative switch grace is refused"),
])
def test_settings_that_cannot_work_are_refused(change: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CertSettings(**{"dns_names": NAMES, **change})
