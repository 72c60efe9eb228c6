"""Submitter identity labels: stamped from userInfo on CREATE, never forgeable, never changed."""

from __future__ import annotations

import re
from typing import Any, Mapping

from batchgate import keys
from webhook.rules.review import UserInfo

MAX_LABEL_VALUE = 63
_OUTSIDE_LABEL_ALPHABET = re.compile(r"[^-_.A-Za-z0-9]")
IDENTITY_LABELS = (keys.USER_LABEL, keys.USERID_LABEL)


def sanitize_label_value(text: str) -> str:
    """Upstream's SanitizeLabel: cut to 63, replace characters outside `A-Za-z0-9_-.`, trim `-_.`."""
    return _OUTSIDE_LABEL_ALPHABET.sub("_", text[:MAX_LABEL_VALUE]).strip("-_.")


def identity_labels(user: UserInfo) -> dict[str, str]:
    """The labels a workload submitted by `user` must carry."""
    return {
        keys.USER_LABEL: sanitize_label_value(user.username),
        keys.USERID_LABEL: sanitize_label_value(user.uid),
    }


def identity_changes(old_labels: Mapping[str, Any], new_labels: Mapping[str, Any]) -> list[str]:
    """Identity label keys whose value differs between the stored and the updated object."""
    return [key for key in IDENTITY_LABELS if old_labels.get(key) != new_labels.get(key)]
