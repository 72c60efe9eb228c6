"""The stand-in's serving pair: kept across restarts on one directory, as kube-apiserver keeps its
`--cert-dir` pair, and made anew only when the kept one cannot serve."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Callable

import pytest

from localcluster import tls

NOW = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
NAMES = ["localhost", "127.0.0.1"]


def test_a_second_start_on_the_same_directory_keeps_the_pair_its_clients_trust(tmp_path: Path) -> None:
    first = tls.self_signed(tmp_path, NAMES, NOW)
    cert, key = first.cert.read_bytes(), first.key.read_bytes()
    again = tls.self_signed(tmp_path, NAMES, NOW + dt.timedelta(hours=1))
    assert (again.cert.read_bytes(), again.key.read_bytes()) == (cert, key)
    assert oct(again.key.stat().st_mode & 0o777) == "0o600"


def _garble_key(pair: tls.ServingPair) -> None:
    pair.key.write_bytes(b"not a key")


def _other_key(pair: tls.ServingPair) -> None:
    other = tls.self_signed(pair.cert.parent / "other", NAMES, NOW)
    pair.key.write_bytes(other.key.read_bytes())


@pytest.mark.parametrize("names, later, spoil", [
    pytest.param(["localhost", "127.0.0.1", "kubernetes"], dt.timedelta(0), None, id="a name it does not cover"),
    pytest.param(NAMES, tls.VALIDITY, None, id="expired"),
    pytest.param(NAMES, dt.timedelta(0), _garble_key, id="an unreadable key"),
    pytest.param(NAMES, dt.timedelta(0), _other_key, id="a key that is not the certificate's"),
])
def test_a_pair_that_cannot_serve_is_made_anew(tmp_path: Path, names: list[str], later: dt.timedelta,
                                               spoil: Callable[[tls.ServingPair], None] | None) -> None:
    first = tls.self_signed(tmp_path, NAMES, NOW)
    cert = first.cert.read_bytes()
    if spoil is not None:
        spoil(first)
    again = tls.self_signed(tmp_path, names, NOW + later)
    assert again.cert.read_bytes() != cert
    assert tls._still_serves(again, names, NOW + later)
