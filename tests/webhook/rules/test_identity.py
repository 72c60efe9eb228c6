"""Identity label sanitizing, as upstream's SanitizeLabel."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from webhook.rules.identity import sanitize_label_value


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param("alice", "alice", id="a plain name is kept"),
        pytest.param("system:serviceaccount:team1:sa", "system_serviceaccount_team1_sa", id="colons become underscores"),
        pytest.param("kube:admin", "kube_admin", id="an openshift admin"),
        pytest.param("alice@example.com", "alice_example.com", id="an email keeps its dots"),
        pytest.param("-_.bob._-", "bob", id="separators are trimmed from both ends"),
        pytest.param("a" * 70, "a" * 63, id="long names are cut to 63"),
        pytest.param("a" * 62 + ":b", "a" * 62, id="cut first, then replaced, then trimmed"),
        pytest.param("ünïcode", "n_code", id="non-ascii letters are replaced and then trimmed"),
        pytest.param("", "", id="empty stays empty"),
    ],
)
def test_sanitize(raw: str, expected: str) -> None:
    assert sanitize_label_value(raw) == expected


@given(st.text())
def test_a_sanitized_value_is_always_a_valid_label_value(raw: str) -> None:
    value = sanitize_label_value(raw)
    assert len(value) <= 63
    assert all(c.isascii() and (c.isalnum() or c in "-_.") for c in value)
    assert not value or (value[0].isalnum() and value[-1].isalnum())
