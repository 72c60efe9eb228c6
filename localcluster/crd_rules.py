"""CRD validation rules (`x-kubernetes-validations`), evaluated with cel-python as kube-apiserver does.

kube-apiserver (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go) walks the object
and its schema together and, at every node that carries rules and has a value, evaluates each
rule with `self` bound to that value. A rule that reads `oldSelf` is a transition rule: it runs
only on an update where the node correlates with the old object (object properties by name,
`x-kubernetes-list-type: map` items by their keys). With CRD validation ratcheting (on by default
since v1.30) a node whose value did not change is not judged again. A false rule is a 422
`<path>: Invalid value: "<schema type>": <message>`.

The rules of a CRD version are compiled once, when the version is served (`compile_schema`, kept
on its ResourceType): a request only evaluates. cel-python is the CEL implementation (a
maintained, spec-conformance-tested library, rather than a hand-written subset). The shipped CRDs'
rules use `has`, `all`, `size` and comparisons only, so no Kubernetes CEL library function
(`quantity`, `isSorted`, `url`, ...) is added; a rule calling one fails as an evaluation error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
    message_program: Any = None  # messageExpression's Runner

    def detail(self, activation: dict[str, Any]) -> str:
        """The failure's message: messageExpression's string when it gives one (non-empty, one line),
        else the message, else `failed rule: <rule>` (ruleMessageOrDefault)."""
        if self.message_program is not None:
            try:
                text = self.message_program.evaluate(activation)
            except (celpy.CELEvalError, RecursionError):
                text = None
            if isinstance(text, str) and text.strip() and "\n" not in text:
                return str(text).strip()
        return self.message or f"failed rule: {self.text.strip()}"

    def failure(self, path: str, schema_type: str, detail: str) -> FieldError:
        """The FieldError kube-apiserver reports: at the node (or its fieldPath), valued by the schema type."""
        where = (path + self.field_path if self.field_path.startswith(("[", ".")) else
                 f"{path}.{self.field_path}" if self.field_path else path).lstrip(".")
        kind = _REASONS.get(self.reason, "Invalid")
        if kind == "Duplicate":  # field.Duplicate carries the value only
            return FieldError(kind, where, "", schema_type)
        return FieldError(kind, where, detail, schema_type)

    @property
    def shown(self) -> str:
        """What an error names the rule by: its message, else its text (ruleErrorString)."""
        return self.message or self.text.strip()


class RuleCompileError(ValueError):
    """A rule cel-python cannot parse; the CRD that carries it is refused. `field` is the entry's
    field at fault: rule or messageExpression."""

    def __init__(self, reason: str, field: str = "rule") -> None:
        super().__init__(reason)
        self.field = field


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
    text, expression = entry["rule"], entry.get("messageExpression")
    expression = expression if isinstance(expression, str) and expression.strip() else ""
    try:
        message_program = _program(expression) if expression else None
    except RuleCompileError as exc:
        raise RuleCompileError(str(exc), "messageExpression") from None
    return Rule(text, str(entry.get("message") or "").strip(), str(entry.get("reason") or ""),
                str(entry.get("fieldPath") or ""), _program(text),
                "oldSelf" in text or "oldSelf" in expression, message_program)


def _entries(schema: dict[str, Any]) -> list[Any]:
    entries = schema.get("x-kubernetes-validations")
    return entries if isinstance(entries, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def rule_compile_errors(schema: Any, path: str) -> list[FieldError]:
    """Every rule in a CRD schema that does not compile, with its schema path, as CRD validation says."""
    errors: list[FieldError] = []
    if not isinstance(schema, dict):
        return errors
    for i, entry in enumerate(_entries(schema)):
        try:
            compile_rule(entry)
        except RuleCompileError as exc:
            value = entry.get(exc.field) if isinstance(entry, dict) else entry
            errors.append(FieldError("Invalid", f"{path}.x-kubernetes-validations[{i}].{exc.field}",
                                     f"compilation failed: {exc}", value))
    for key, sub in _dict(schema.get("properties")).items():
        errors += rule_compile_errors(sub, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        errors += rule_compile_errors(schema.get(key), f"{path}.{key}")
    return errors


@dataclass(frozen=True)
class RuleNode:
    """A schema node's compiled rules and the nodes under it that carry rules; subtrees without
    any are left out, so an object's unruled parts (pod templates, status) are not walked."""

    schema: Mapping[str, Any]  # the node's schema: its type names the error and types `self`
    rules: tuple[Rule, ...]
    properties: Mapping[str, RuleNode]
    additional: RuleNode | None  # additionalProperties
    items: RuleNode | None
    map_keys: tuple[str, ...]  # x-kubernetes-list-map-keys of a `listType: map` list

    @property
    def schema_type(self) -> str:
        return str(self.schema.get("type") or "object")


def compile_schema(schema: Any) -> RuleNode | None:
    """The rule tree of one CRD version's schema, None if it carries no rule. A rule that does not
    compile is left out: CRD validation refused it when the CRD was written."""
    if not isinstance(schema, dict):
        return None
    rules = []
    for entry in _entries(schema):
        try:
            rules.append(compile_rule(entry))
        except RuleCompileError:
            continue
    properties = {key: node for key, sub in _dict(schema.get("properties")).items()
                  if (node := compile_schema(sub)) is not None}
    additional, items = compile_schema(schema.get("additionalProperties")), compile_schema(schema.get("items"))
    if not (rules or properties or additional or items):
        return None
    keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
    return RuleNode(schema, tuple(rules), properties, additional, items,
                    tuple(str(k) for k in keys) if isinstance(keys, list) else ())


_NO_OLD = object()


def rule_errors(node: RuleNode | None, value: Any, old: Any = _NO_OLD, path: str = "") -> list[FieldError]:
    """The failures of every rule under `node` for `value` (and `old`, on an update)."""
    if node is None or value is None:
        return []
    if old is not _NO_OLD and old == value:
        return []  # ratcheting: an unchanged value is not judged again
    errors = _node_errors(node, value, old, path)
    if isinstance(value, dict):
        for key, item in value.items():
            sub = node.properties.get(key) if key in _dict(node.schema.get("properties")) else node.additional
            previous = old.get(key, _NO_OLD) if isinstance(old, dict) else _NO_OLD
            errors += rule_errors(sub, item, previous, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and node.items is not None:
        olds = {_map_key(o, node.map_keys): o for o in old} if node.map_keys and isinstance(old, list) else {}
        for i, item in enumerate(value):
            previous = olds.get(_map_key(item, node.map_keys), _NO_OLD) if node.map_keys else _NO_OLD
            errors += rule_errors(node.items, item, previous, f"{path}[{i}]")
    return errors


def _map_key(item: Any, keys: tuple[str, ...]) -> Any:
    return tuple(repr(item.get(k)) for k in keys) if isinstance(item, dict) else repr(item)


def _node_errors(node: RuleNode, value: Any, old: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    rules = [rule for rule in node.rules if old is not _NO_OLD or not rule.transition]
    if not rules:
        return errors
    bound = {"self": celpy.json_to_cel(_typed(node.schema, value))}  # converted once for all the node's rules
    if old is not _NO_OLD and any(rule.transition for rule in rules):
        bound["oldSelf"] = celpy.json_to_cel(_typed(node.schema, old))
    for rule in rules:
        activation = bound if rule.transition else {"self": bound["self"]}
        try:
            result = rule.program.evaluate(activation)
        except celpy.CELEvalError as exc:
            result = exc
        except RecursionError:
            result = celpy.CELEvalError("the value nests too deeply")
        if isinstance(result, celpy.CELEvalError):
            errors.append(rule.failure(path, node.schema_type, _evaluation_error(result, rule)))
        elif not (isinstance(result, celtypes.BoolType) and bool(result)):
            errors.append(rule.failure(path, node.schema_type, rule.detail(activation)))
    return errors


def _typed(schema: Any, value: Any) -> Any:
    """`value` with the CEL types its schema declares: a `number` written as 1 is the double 1.0."""
    if not isinstance(schema, Mapping):
        return value
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict):
        props, extra = _dict(schema.get("properties")), schema.get("additionalProperties")
        return {k: _typed(props.get(k, extra), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(schema.get("items"), v) for v in value]
    return value


def _evaluation_error(error: Exception, rule: Rule) -> str:
    """kube-apiserver's text for a rule that errs, with cel-go's wording where cel-python's differs
    and without the activation cel-python appends (the whole object, unbounded)."""
    text = (str(error.args[0]) if error.args else str(error)).split(" (in activation", 1)[0]
    if text.startswith("found no matching overload"):
        return (f"'no such overload': call arguments did not match a supported operator, function or macro "
                f"signature for rule: {rule.shown}")
    if text.startswith("no such member in mapping: "):
        text = "no such key: " + text.removeprefix("no such member in mapping: ").strip("'")
    elif selected := _NO_SELECTION.search(text):  # cel-python quotes the whole value here
        text = f"type '{selected.group(1).lower()}' does not support field selection"
    return f"{text[:_MOST]} evaluating rule: {rule.shown}"


_NO_SELECTION = re.compile(r"with type: '<class 'celpy\.celtypes\.(\w+?)Type'>' does not support field selection$")
_MOST = 200  # cel-python's error texts may quote values; kube-apiserver's name types
