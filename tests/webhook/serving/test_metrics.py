"""The gateway's certificate expiry gauge: read from the files it serves at each scrape, so a
rotation shows at once; an unreadable file has no series rather than a wrong one."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from batchgate.clock import UTC
from certs.authority import service_names, write_serving_files
from webhook.serving.metrics import CERTIFICATE_EXPIRY, GatewayMetrics

NOW = _dt.datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
NAMES = service_names("batchgate-webhook", "batchgate-system")


def expiry(metrics: GatewayMetrics) -> dict[str, _dt.datetime]:
    text, _ = metrics.render()
    (family,) = [f for f in text_string_to_metric_families(text.decode()) if f.name == CERTIFICATE_EXPIRY]
    return {s.labels["certificate"]: _dt.datetime.fromtimestamp(s.value, UTC) for s in family.samples}


def test_the_gauge_shows_each_certificates_not_after_and_follows_a_rotation(tmp_path: Path) -> None:
    write_serving_files(tmp_path, NAMES, NOW, ca_days=3650, cert_days=30)
    metrics = GatewayMetrics(tmp_path)
    ca_expiry = expiry(metrics)["ca"]
    assert expiry(metrics) == {"serving": NOW + _dt.timedelta(days=30), "ca": ca_expiry}
    assert ca_expiry == NOW + _dt.timedelta(days=3650)
    write_serving_files(tmp_path, NAMES, NOW + _dt.timedelta(days=20), cert_days=365)  # renewed, same CA
    assert expiry(metrics) == {"serving": NOW + _dt.timedelta(days=385), "ca": ca_expiry}


@pytest.mark.parametrize("damage", [
    pytest.param(lambda d: (d / "ca.crt").unlink(), id="a missing CA file drops only the CA's series"),
    pytest.param(lambda d: (d / "ca.crt").write_text("not a certificate"), id="garbage in the CA file likewise"),
])
def test_an_unreadable_certificate_has_no_series(tmp_path: Path, damage) -> None:
    write_serving_files(tmp_path, NAMES, NOW, cert_days=30)
    damage(tmp_path)
    assert expiry(GatewayMetrics(tmp_path)) == {"serving": NOW + _dt.timedelta(days=30)}


def test_without_a_certificate_directory_there_is_no_gauge() -> None:
    text, _ = GatewayMetrics().render()
    assert CERTIFICATE_EXPIRY.encode() not in text
