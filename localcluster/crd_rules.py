"""CRD validation rules (`x-kubernetes-validations`), evaluated with cel-python as kube-apiserver does.

kube-apiserver (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go) walks the object
and its schema together and, at every node that carries rules and has a value, evaluates each
rule with `self` bound to that value. A rule that reads `oldSelf` is a transition rule: it runs
only on an update where the node correlates with the old object (object properties by name,
`x-kubernetes-list-type: map` items by their keys). With CRD validation ratcheting (on by default
since v1.30) a node whose value did not change is not judged again. A false rule is a 422
`<path>: Invalid value: "<schema type>": <message>`; rules are skipped when the object already
has a type error, which would make `self` meaningless.

cel-python is the CEL implementation (a maintained, spec-conformance-tested library, rather than
a hand-written subset); the shipped CRDs need no Kubernetes-specific CEL library function (their
rules use `has`, `all`, `size` and comparisons only), so none is added.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes

from localcluster.errors import FieldError

_REASONS = {"FieldValueInvalid": "Invalid", "FieldValueForbidden": "Forbidden",
            "FieldValueRequired": "Required", "FieldValueDuplicate": "Duplicate"}


@dataclass(frozen=True)
class Rule:
    """One compiled `x-kubernetes-validations` entry."""

    text: str
    message: str
    reason: str
    field_path: str
    program: Any  # celpy Runner
    transition: bool  # reads oldSelf

    def failure(self, path: str, schema_type: str, detail: str | None = None) -> FieldError:
        """The FieldError kube-apiserver reports: at the node (or its fieldPath), valued by the schema type."""
        message = detail or self.message or f"failed rule: {self.text}"
        where = (path + self.field_path if self.field_path.startswith(("[", ".")) else
                 f"{path}.{self.field_path}" if self.field_path else path).lstrip(".")
        kind = _REASONS.get(self.reason, "Invalid")
        return FieldError(kind, where, message, schema_type)


class RuleCompileError(ValueError):
    """A rule cel-python cannot parse or check; the CRD that carries it is refused."""


@functools.lru_cache(maxsize=512)
def _program(text: str) -> Any:
    env = celpy.Environment()
    try:
        return env.program(env.compile(text))
    except celpy.CELParseError as exc:
        raise RuleCompileError(str(exc).strip().splitlines()[0]) from None
    except RecursionError:
        raise RuleCompileError("the rule nests too deeply") from None


def compile_rule(entry: Any) -> Rule:
    """An `x-kubernetes-validations` entry compiled, or RuleCompileError naming why not."""
    if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str) or not entry["rule"].strip():
        raise RuleCompileError("rule: Required value")
    text = entry["rule"]
    return Rule(text, str(entry.get("message") or "").strip(), str(entry.get("reason") or ""),
                str(entry.get("fieldPath") or ""), _program(text), "oldSelf" in text)


def rule_compile_errors(schema: Any, path: str) -> list[FieldError]:
    """Every rule in a CRD schema that does not compile, with its schema path, as CRD validation says."""
    errors: list[FieldError] = []
    if not isinstance(schema, dict):
        return errors
    for i, entry in enumerate(_entries(schema)):
        try:
            compile_rule(entry)
        except RuleCompileError as exc:
            rule = entry.get("rule") if isinstance(entry, dict) else entry
            errors.append(FieldError("Invalid", f"{path}.x-kubernetes-validations[{i}].rule",
                                     f"compilation failed: {exc}", rule))
    for key, sub in (schema.get("properties") or {}).items() if isinstance(schema.get("properties"), dict) else ():
        errors += rule_compile_errors(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        errors += rule_compile_errors(schema.get(key), f"{path}.{key}")
    return errors


_NO_OLD = object()


def _entries(schema: dict[str, Any]) -> list[Any]:
    entries = schema.get("x-kubernetes-validations")
    return entries if isinstance(entries, list) else []


def rule_errors(schema: Any, value: Any, old: Any = _NO_OLD, path: str = "") -> list[FieldError]:
    """The failures of every rule under `schema` for `value` (and `old`, on an update)."""
    if not isinstance(schema, dict) or value is None:
        return []
    if old is not _NO_OLD and old == value:
        return []  # ratcheting: an unchanged value is not judged again
    errors = _node_errors(schema, value, old, path)
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if not props else None)
            previous = old.get(key, _NO_OLD) if isinstance(old, dict) else _NO_OLD
            errors += rule_errors(sub, item, previous, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
        olds = {_map_key(o, keys): o for o in old} if keys and isinstance(old, list) else {}
        for i, item in enumerate(value):
            previous = olds.get(_map_key(item, keys), _NO_OLD) if keys else _NO_OLD
            errors += rule_errors(schema.get("items"), item, previous, f"{path}[{i}]")
    return errors


def _map_key(item: Any, keys: list[str]) -> Any:
    return tuple(repr(item.get(k)) for k in keys) if isinstance(item, dict) else repr(item)


def _node_errors(schema: dict[str, Any], value: Any, old: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    schema_type = str(schema.get("type") or "object")
    for entry in _entries(schema):
        try:
            rule = compile_rule(entry)
        except RuleCompileError:
            continue  # refused when the CRD was written; a stored one is not re-judged here
        if rule.transition and old is _NO_OLD:
            continue
        activation = {"self": celpy.json_to_cel(_typed(schema, value))}
        if rule.transition:
            activation["oldSelf"] = celpy.json_to_cel(_typed(schema, old))
        try:
            result = rule.program.evaluate(activation)
        except celpy.CELEvalError as exc:
            result = exc
        except RecursionError:
            result = celpy.CELEvalError("the value nests too deeply")
        if isinstance(result, celpy.CELEvalError):
            errors.append(rule.failure(path, schema_type, f"{rule.message or 'failed rule: ' + rule.text}: "
                                       f"{_reason(result)}"))
        elif not (isinstance(result, celtypes.BoolType) and bool(result)):
            errors.append(rule.failure(path, schema_type))
    return errors


def _typed(schema: Any, value: Any) -> Any:
    """`value` with the CEL types its schema declares: a `number` written as 1 is the double 1.0."""
    if not isinstance(schema, dict):
        return value
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        extra = schema.get("additionalProperties")
        return {k: _typed(props.get(k, extra), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(schema.get("items"), v) for v in value]
    return value


def _reason(error: Exception) -> str:
    """cel-python's error without the activation it appends (the whole object, unbounded)."""
    text = str(error.args[0]) if error.args else str(error)
    return text.split(" (in activation", 1)[0]
