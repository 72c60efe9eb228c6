"""Label and field selectors in the string syntax of list and watch query parameters.

Parsing returns a predicate or raises ApiError(400) with the message a real server gives, so a
malformed selector is a clear BadRequest, never a crash.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from localcluster.errors import ApiError, bad_request

Predicate = Callable[[dict[str, Any]], bool]

_TOKEN = re.compile(r"\s*(!=|==|=|!|,|\(|\)|[^\s!=,()]+)")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            if text[pos:].strip() == "":
                break
            raise bad_request(f"unable to parse requirement: found '{text[pos]}', expected: identifier")
        out.append(match.group(1))
        pos = match.end()
    return out


def _requirement(tokens: list[str], i: int) -> tuple[Callable[[dict[str, str]], bool], int]:
    def need(index: int) -> str:
        if index >= len(tokens):
            raise bad_request("unable to parse requirement: found '', expected: identifier")
        return tokens[index]

    if need(i) == "!":
        key = need(i + 1)
        return (lambda labels: key not in labels), i + 2
    key = need(i)
    if i + 1 >= len(tokens) or tokens[i + 1] == ",":
        return (lambda labels: key in labels), i + 1
    op = tokens[i + 1]
    if op in ("=", "==", "!="):
        value = "" if i + 2 >= len(tokens) or tokens[i + 2] == "," else tokens[i + 2]
        if not _LABEL_VALUE.match(value):
            raise bad_request(f"invalid label value: \"{value}\": at key: \"{key}\"")
        step = 2 if value == "" else 3
        if op == "!=":
            return (lambda labels: labels.get(key) != value), i + step
        return (lambda labels: labels.get(key) == value), i + step
    if op in ("in", "notin"):
        if need(i + 2) != "(":
            raise bad_request(f"unable to parse requirement: found '{need(i + 2)}', expected: '('")
        values, j = set(), i + 3
        while need(j) != ")":
            if tokens[j] != ",":
                values.add(tokens[j])
            j += 1
        if op == "in":
            return (lambda labels: labels.get(key) in values), j + 1
        return (lambda labels: labels.get(key) not in values), j + 1
    raise bad_request(f"unable to parse requirement: found '{op}', expected: in, notin, =, ==, !=, gt, lt")


def parse_label_selector(text: str | None) -> Predicate | None:
    """`a=b,c!=d,e in (x,y),!f` -> predicate on an object's metadata.labels (None = everything)."""
    if not text or not text.strip():
        return None
    tokens, checks, i = _tokens(text), [], 0
    while i < len(tokens):
        check, i = _requirement(tokens, i)
        checks.append(check)
        if i < len(tokens):
            if tokens[i] != ",":
                raise bad_request(f"unable to parse requirement: found '{tokens[i]}', expected: ','")
            i += 1
            if i == len(tokens):
                raise bad_request("found '', expected: identifier after ','")

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


def _path(obj: dict[str, Any], dotted: str) -> str:
    value: Any = obj
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


COMMON_FIELDS = ("metadata.name", "metadata.namespace")
FIELDS_BY_RESOURCE: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                   "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    ("", "events"): ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                     "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
    ("events.k8s.io", "events"): ("regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
                                  "reason", "type", "reportingController"),
    ("", "namespaces"): ("status.phase",),
    ("", "nodes"): ("spec.unschedulable",),
    ("", "secrets"): ("type",),
    ("batch", "jobs"): ("status.successful",),
    ("apps", "replicasets"): ("status.replicas",),
}


def _field_is(dotted: str, value: str, equal: bool, obj: dict[str, Any]) -> bool:
    return (_path(obj, dotted) == value) == equal


def parse_field_selector(text: str | None, group: str, plural: str) -> Predicate | None:
    """`metadata.name=x,status.phase!=Running` -> predicate; unsupported fields are a 400."""
    if not text or not text.strip():
        return None
    allowed = COMMON_FIELDS + FIELDS_BY_RESOURCE.get((group, plural), ())
    checks: list[Callable[[dict[str, Any]], bool]] = []
    for term in text.split(","):
        term = term.strip()
        for op in ("!=", "==", "="):
            if op in term:
                field_name, value = term.split(op, 1)
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field_name = field_name.strip()
        if field_name not in allowed:
            raise ApiError(400, "BadRequest", f'"{field_name}" is not a known field selector: only "'
                           + '", "'.join(allowed) + '"')
        if field_name == "source":
            field_name = "source.component"
        checks.append(functools.partial(_field_is, field_name, value, op != "!="))

    def matches(obj: dict[str, Any]) -> bool:
        return all(check(obj) for check in checks)

    return matches


def both(first: Predicate | None, second: Predicate | None) -> Predicate | None:
    if first is None:
        return second
    if second is None:
        return first
    return lambda obj: first(obj) and second(obj)
