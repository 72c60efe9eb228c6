"""Whether the served certificate is trusted by the webhook configurations (certs/trust.py).

We test these aspects: a caBundle holding the serving CA (alone or beside an old one) is trusted;
another CA, even one of the same name, is not; an empty or garbled caBundle is not; one untrusting
webhook among several makes the pod unready and is named; a configuration not found is reported
but leaves the pod ready; a served file that is missing, garbled or expired is not trusted.
"""

from __future__ import annotations

import base64
import datetime as _dt

import pytest

from batchgate.clock import UTC
from certs.authority import CA_CERT, TLS_CERT, issue_secret_data
from certs.trust import judge_trust

T0 = _dt.datetime(2030, 1, 1, tzinfo=UTC)
NAMES = ["gate", "gate.sys", "gate.sys.svc"]
SERVED = issue_secret_data(NAMES, T0, ca_days=3650, cert_days=365)
OTHER = issue_secret_data(NAMES, T0, ca_days=3650, cert_days=365)  # another CA, also "batchgate-ca"
GOOD = base64.b64encode(SERVED[CA_CERT]).decode()
WRONG = base64.b64encode(OTHER[CA_CERT]).decode()
BOTH = base64.b64encode(OTHER[CA_CERT] + SERVED[CA_CERT]).decode()
M, V = "MutatingWebhookConfiguration/batchgate-mutating", "ValidatingWebhookConfiguration/batchgate-validating"

CASES = [
    ("the serving CA in every caBundle is trusted", {M: [("m", GOOD)], V: [("v", GOOD)]}, True, (), ()),
    ("the serving CA beside an old CA is trusted", {M: [("m", BOTH)]}, True, (), ()),
    ("another CA of the same name is not trusted", {M: [("m", WRONG)]}, False, ("m: caBundle has no CA",), ()),
    ("an empty caBundle is not trusted", {M: [("m", "")]}, False, ("m: caBundle empty",), ()),
    ("a garbled caBundle is not trusted", {M: [("m", "bm90IGEgY2VydA==")]}, False, ("m: caBundle empty",), ()),
    ("one untrusting webhook among several is named", {M: [("m1", GOOD), ("m2", WRONG)], V: [("v", GOOD)]},
     False, ("m2: caBundle has no CA",), ()),
    ("a configuration not found is reported but leaves the pod ready", {M: None, V: [("v", GOOD)]},
     True, (), (M,)),
]


@pytest.mark.parametrize("configurations,ready,reasons,missing",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_trust_of_the_served_certificate(configurations, ready, reasons, missing) -> None:
    verdict = judge_trust(SERVED[TLS_CERT], configurations, T0 + _dt.timedelta(days=1))
    assert verdict.ready is ready
    assert verdict.missing == missing
    assert len(verdict.reasons) == len(reasons)
    for want, got in zip(reasons, verdict.reasons):
        assert want in got
    if missing:
        assert "re-apply the install" in verdict.message()


SERVED_CASES = [
    ("a missing served certificate is not trusted", b"", T0, "missing or not PEM"),
    ("a garbled served certificate is not trusted", b"-----BEGIN CERTIFICATE-----\nxx\n", T0, "missing or not PEM"),
    ("an expired served certificate is not trusted", SERVED[TLS_CERT], T0 + _dt.timedelta(days=400), "not valid now"),
]


@pytest.mark.parametrize("served,now,reason", [c[1:] for c in SERVED_CASES], ids=[c[0] for c in SERVED_CASES])
def test_a_served_file_that_cannot_be_trusted(served, now, reason) -> None:
    verdict = judge_trust(served, {M: [("m", GOOD)]}, now)
    assert not verdict.ready
    assert reason in verdict.message()
