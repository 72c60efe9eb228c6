"""Name, label and annotation rules of apimachinery's validation package, with its messages."""

from __future__ import annotations

import re
import secrets
from typing import Any

from localcluster.errors import FieldError

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(f"^{_LABEL}$")
DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def subdomain_errors(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not DNS1123_SUBDOMAIN.match(value):
        out.append(SUBDOMAIN_MSG)
    return out


def label_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not DNS1123_LABEL.match(value):
        out.append(LABEL_MSG)
    return out


def dns1035_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not DNS1035_LABEL.match(value):
        out.append(DNS1035_MSG)
    return out


def path_segment_errors(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    for bad in ("/", "%"):
        if bad in value:
            return [f"may not contain '{bad}'"]
    return []


def qualified_name_errors(key: str) -> list[str]:
    prefix, slash, name = key.rpartition("/")
    out = []
    if slash and (not prefix or subdomain_errors(prefix)):
        out.append("prefix part " + (SUBDOMAIN_MSG if prefix else "must be non-empty"))
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    elif not _QUALIFIED_NAME.match(name):
        out.append(QUALIFIED_MSG)
    return out


def label_value_errors(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        out.append(LABEL_VALUE_MSG)
    return out


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [FieldError("Invalid", path, "must be a map of strings", labels)]
    errors = []
    for key, value in labels.items():
        for msg in qualified_name_errors(key):
            errors.append(FieldError("Invalid", path, msg, key))
        if not isinstance(value, str):
            errors.append(FieldError("Invalid", f"{path}", "label values must be strings", value))
            continue
        for msg in label_value_errors(value):
            errors.append(FieldError("Invalid", path, msg, value))
    return errors


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [FieldError("Invalid", path, "must be a map of strings", annotations)]
    errors, total = [], 0
    for key, value in annotations.items():
        for msg in qualified_name_errors(key):
            errors.append(FieldError("Invalid", path, msg, key))
        if not isinstance(value, str):
            errors.append(FieldError("Invalid", path, "annotation values must be strings", value))
            continue
        total += len(key) + len(value)
    if total > 256 * 1024:
        errors.append(FieldError("TooLong", path, "must have at most 262144 bytes", ""))
    return errors


_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(base: str) -> str:
    """`base` cut to 58 characters plus five random characters, as the apiserver's generator."""
    return base[:58] + "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
