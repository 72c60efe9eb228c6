"""Custom resources by their CRD: structural-schema defaulting, pruning and validation.

The subset of OpenAPI v3 that CRDs use (types, properties, additionalProperties, items,
required, enum, bounds, lengths, patterns, nullable, int-or-string, preserve-unknown-fields,
embedded resources), with the error paths and wording kube-apiserver gives, so a bad custom
resource is a 422 naming the exact field.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from localcluster import crd_rules
from localcluster.errors import FieldError
from localcluster.names import subdomain_errors
from localcluster.resources import ResourceType

_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _matches_type(value: Any, wanted: str) -> bool:
    if wanted == "object":
        return isinstance(value, dict)
    if wanted == "array":
        return isinstance(value, list)
    if wanted == "string":
        return isinstance(value, str)
    if wanted == "boolean":
        return isinstance(value, bool)
    if wanted == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if wanted == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    """`properties`, or nothing when a malformed CRD gives something else."""
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _schemas(schema: dict[str, Any], key: str) -> list[Any]:
    value = schema.get(key)
    return value if isinstance(value, list) else []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# defaulting and pruning


def apply_defaults(schema: dict[str, Any] | None, value: Any) -> None:
    """Fill `default`s of absent properties, recursively, in place."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        for key, sub in _props(schema).items():
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(sub, value[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                if key not in _props(schema):
                    apply_defaults(extra, item)
    elif isinstance(value, list):
        for item in value:
            apply_defaults(schema.get("items"), item)


def prune(schema: dict[str, Any] | None, value: Any, path: str, root: bool = False) -> list[str]:
    """Drop fields the schema does not declare; returns their paths (for strict field validation)."""
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
        return []
    pruned: list[str] = []
    if isinstance(value, dict):
        props = _props(schema)
        extra = schema.get("additionalProperties")
        keep_meta = root or schema.get("x-kubernetes-embedded-resource")
        for key in list(value):
            if keep_meta and key in ("apiVersion", "kind", "metadata"):
                continue
            if key in props:
                pruned += prune(props[key], value[key], _join(path, key))
            elif isinstance(extra, dict):
                pruned += prune(extra, value[key], _join(path, key))
            elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
                continue
            else:
                pruned.append(_join(path, key))
                del value[key]
    elif isinstance(value, list):
        for i, item in enumerate(value):
            pruned += prune(schema.get("items"), item, f"{path}[{i}]")
    return pruned


# validation


def validate_value(schema: dict[str, Any] | None, value: Any, path: str) -> list[FieldError]:
    if not isinstance(schema, dict):
        return []
    if value is None:
        if schema.get("nullable") or not schema.get("type"):
            return []
        return [FieldError("TypeInvalid", path, f'{path} in body must be of type {schema["type"]}: "null"', "null")]
    errors: list[FieldError] = []
    wanted = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            return [FieldError("TypeInvalid", path, f'{path} in body must be of type integer,string: "{_type_of(value)}"', _type_of(value))]
    elif wanted and not _matches_type(value, wanted):
        return [FieldError("TypeInvalid", path, f'{path} in body must be of type {wanted}: "{_type_of(value)}"', _type_of(value))]
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        errors.append(FieldError("NotSupported", path, value=value, supported=tuple(str(e) for e in schema["enum"])))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        errors += _bounds(schema, value, path)
    if isinstance(value, str):
        errors += _string_checks(schema, value, path)
    if isinstance(value, list):
        errors += _array_checks(schema, value, path)
    if isinstance(value, dict):
        errors += _object_checks(schema, value, path)
    for sub in _schemas(schema, "allOf"):
        errors += validate_value(sub, value, path)
    if _schemas(schema, "anyOf") and not any(not validate_value(s, value, path) for s in _schemas(schema, "anyOf")):
        errors.append(FieldError("Invalid", path, f"{path} in body must match at least one schema in anyOf", value))
    if _schemas(schema, "oneOf") and sum(1 for s in _schemas(schema, "oneOf") if not validate_value(s, value, path)) != 1:
        errors.append(FieldError("Invalid", path, f"{path} in body must match exactly one schema in oneOf", value))
    if isinstance(schema.get("not"), dict) and not validate_value(schema["not"], value, path):
        errors.append(FieldError("Invalid", path, f"{path} in body should not match the schema in not", value))
    return errors


def _number(schema: dict[str, Any], key: str) -> float | None:
    """A numeric schema keyword, or None when absent or malformed (a bad CRD must not break writes)."""
    value = schema.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _bounds(schema: dict[str, Any], value: float, path: str) -> list[FieldError]:
    errors = []
    low, high = _number(schema, "minimum"), _number(schema, "maximum")
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            errors.append(FieldError("Invalid", path, f"{path} in body should be greater than {low}", value))
        elif value < low:
            errors.append(FieldError("Invalid", path, f"{path} in body should be greater than or equal to {low}", value))
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            errors.append(FieldError("Invalid", path, f"{path} in body should be less than {high}", value))
        elif value > high:
            errors.append(FieldError("Invalid", path, f"{path} in body should be less than or equal to {high}", value))
    multiple = _number(schema, "multipleOf")
    if multiple and value % multiple:
        errors.append(FieldError("Invalid", path, f"{path} in body should be a multiple of {multiple}", value))
    return errors


def _string_checks(schema: dict[str, Any], value: str, path: str) -> list[FieldError]:
    errors = []
    longest, shortest = _number(schema, "maxLength"), _number(schema, "minLength")
    if longest is not None and len(value) > longest:
        errors.append(FieldError("TooLong", path, f"may not be more than {longest} bytes", value))
    if shortest is not None and len(value) < shortest:
        errors.append(FieldError("Invalid", path, f"{path} in body should be at least {shortest} chars long", value))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            if not re.search(pattern, value):
                errors.append(FieldError("Invalid", path, f"{path} in body should match '{pattern}'", value))
        except re.error:
            pass
    return errors


def _array_checks(schema: dict[str, Any], value: list[Any], path: str) -> list[FieldError]:
    errors = []
    most, fewest = _number(schema, "maxItems"), _number(schema, "minItems")
    if most is not None and len(value) > most:
        errors.append(FieldError("TooMany", path, f"must have at most {most} items"))
    if fewest is not None and len(value) < fewest:
        errors.append(FieldError("Invalid", path, f"{path} in body should have at least {fewest} items", value))
    items = schema.get("items")
    for i, item in enumerate(value):
        errors += validate_value(items, item, f"{path}[{i}]")
    return errors


def _object_checks(schema: dict[str, Any], value: dict[str, Any], path: str) -> list[FieldError]:
    errors = []
    required = schema.get("required")
    for key in required if isinstance(required, list) else []:
        if isinstance(key, str) and key not in value:
            errors.append(FieldError("Required", _join(path, key), ""))
    props = _props(schema)
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in props:
            errors += validate_value(props[key], item, _join(path, key))
        elif isinstance(extra, dict):
            errors += validate_value(extra, item, _join(path, key))
    most, fewest = _number(schema, "maxProperties"), _number(schema, "minProperties")
    if most is not None and len(value) > most:
        errors.append(FieldError("TooMany", path, f"must have at most {most} items"))
    if fewest is not None and len(value) < fewest:
        errors.append(FieldError("Invalid", path, f"{path} in body should have at least {fewest} properties", value))
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                errors.append(FieldError("Required", _join(path, key), "must not be empty"))
    return errors


def _body_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The schema without metadata/apiVersion/kind at the root, which the server validates itself."""
    if not isinstance(schema, dict):
        return None
    body = dict(schema)
    props = {k: v for k, v in _props(schema).items() if k not in ("metadata", "apiVersion", "kind")}
    body["properties"] = props
    return body


def decode_custom(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """What kube-apiserver's decoder does to a custom resource: drop the fields its schema does not
    declare (their paths returned, for field validation), then fill defaults. Built-ins: nothing."""
    if rt.builtin:
        return []
    schema = _body_schema(rt.schema)
    pruned = prune(schema, obj, "", root=True)
    apply_defaults(schema, obj)
    return pruned


def undeclared_fields(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Paths of `obj` a custom resource's schema does not declare (server-side apply refuses them)."""
    if rt.builtin:
        return []
    return prune(_body_schema(rt.schema), copy.deepcopy(obj), "", root=True)


def validate_custom(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Schema validation, then the CRD's validation rules (`old` on an update, for transition rules).
    As kube-apiserver does, an error that leaves `self` meaningless (a wrong type, a missing
    required field, a value too long or not in its enum, too many items) stops the rules, with a
    note saying so."""
    errors = validate_value(_body_schema(rt.schema), _body(obj), "")
    if rt.rules is None:
        return errors
    if any(e.type in _BLOCKING for e in errors):
        return errors + [FieldError("Invalid", "<nil>", "some validation rules were not checked because the object "
                                    "was invalid; correct the existing errors to complete validation", "null")]
    if old is None:
        return errors + crd_rules.rule_errors(rt.rules, _rule_body(obj))
    return errors + crd_rules.rule_errors(rt.rules, _rule_body(obj), _rule_body(old))


# apiextensions-apiserver pkg/registry/customresource/strategy.go hasBlockingErr
_BLOCKING = ("NotSupported", "Required", "TooLong", "TooMany", "TypeInvalid")


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}


def _rule_body(obj: dict[str, Any]) -> dict[str, Any]:
    """The object a root rule's `self` sees: of the metadata, only name and generateName."""
    meta = found if isinstance(found := obj.get("metadata"), dict) else {}
    return {**obj, "metadata": {k: meta[k] for k in ("name", "generateName") if k in meta}}


# the CustomResourceDefinition kind itself


def prepare_crd(crd: dict[str, Any]) -> None:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("conversion", {"strategy": "None"})
    names = spec.get("names")
    if isinstance(names, dict):
        if names.get("kind"):
            names.setdefault("listKind", f"{names['kind']}List")
        if names.get("plural") and not names.get("singular") and names.get("kind"):
            names["singular"] = str(names["kind"]).lower()
    for version in spec.get("versions") or []:
        if isinstance(version, dict):
            version.setdefault("served", True)
            version.setdefault("storage", False)


def validate_crd(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("Required", "spec", "")]
    errors: list[FieldError] = []
    group = spec.get("group")
    names = found if isinstance(found := spec.get("names"), dict) else {}
    if not group:
        errors.append(FieldError("Required", "spec.group", ""))
    elif not isinstance(group, str):
        errors.append(FieldError("Invalid", "spec.group", "must be a string", group))
    elif "." not in group:
        errors.append(FieldError("Invalid", "spec.group", "should be a domain with at least one dot", group))
    else:
        errors += [FieldError("Invalid", "spec.group", m, group) for m in subdomain_errors(group)]
    for key in ("plural", "kind"):
        if not names.get(key):
            errors.append(FieldError("Required", f"spec.names.{key}", ""))
        elif not isinstance(names[key], str):
            errors.append(FieldError("Invalid", f"spec.names.{key}", "must be a string", names[key]))
    for key in ("shortNames", "categories"):
        value = names.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            errors.append(FieldError("Invalid", f"spec.names.{key}", "must be a list of strings", value))
    expected = f"{names.get('plural')}.{group}"
    if names.get("plural") and group and crd["metadata"].get("name") != expected:
        errors.append(FieldError("Invalid", "metadata.name", f"must be spec.names.plural+\".\"+spec.group",
                                 crd["metadata"].get("name")))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        if spec.get("scope") is None:
            errors.append(FieldError("Required", "spec.scope", ""))
        else:
            errors.append(FieldError("NotSupported", "spec.scope", value=spec["scope"], supported=("Cluster", "Namespaced")))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        errors.append(FieldError("Invalid", "spec.versions", "must have exactly one version marked as storage version", versions))
        return errors
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errors.append(FieldError("Invalid", "spec.versions", "must have exactly one version marked as storage version", ""))
    for i, version in enumerate(versions):
        if not isinstance(version, dict) or not isinstance(version.get("name"), str) or not version.get("name"):
            errors.append(FieldError("Required", f"spec.versions[{i}].name", ""))
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), dict) else None
        if not isinstance(schema, dict):
            errors.append(FieldError("Required", f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"))
        else:
            errors += crd_rules.rule_compile_errors(schema, f"spec.versions[{i}].schema.openAPIV3Schema")
        errors += _printer_column_errors(version.get("additionalPrinterColumns"), _columns_path(versions, i))
        subresources = version.get("subresources")
        if subresources is not None and not isinstance(subresources, dict):
            errors.append(FieldError("Invalid", f"spec.versions[{i}].subresources", "must be an object", subresources))
        elif isinstance(subresources, dict) and "scale" in subresources:
            errors += _scale_errors(subresources["scale"], f"spec.versions[{i}].subresources.scale")
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("scope") and spec.get("scope") != old_spec.get("scope"):
            errors.append(FieldError("Invalid", "spec.scope", "field is immutable", spec.get("scope")))
    return errors


def _scale_errors(scale: Any, path: str) -> list[FieldError]:
    """Replica paths must name fields under .spec and .status, as apiextensions requires."""
    if not isinstance(scale, dict):
        return [FieldError("Invalid", path, "must be an object", scale)]
    errors = []
    for key, root in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value = scale.get(key)
        if not isinstance(value, str) or not value:
            errors.append(FieldError("Required", f"{path}.{key}", ""))
        elif not value.startswith(root) or len(value) == len(root):
            errors.append(FieldError("Invalid", f"{path}.{key}", f"should be a json path under {root[:-1]}", value))
    selector = scale.get("labelSelectorPath")
    if selector is not None and not (isinstance(selector, str) and selector.startswith((".spec.", ".status."))):
        errors.append(FieldError("Invalid", f"{path}.labelSelectorPath", "should be a json path under either .spec or .status", selector))
    return errors


_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


def _columns_path(versions: list[Any], i: int) -> str:
    """Where kube-apiserver reports version i's printer columns: it converts a v1 CRD whose versions
    all have the same columns to one top-level list first, so its errors name spec.additionalPrinterColumns."""
    first = versions[0].get("additionalPrinterColumns") if isinstance(versions[0], dict) else None
    same = all(isinstance(v, dict) and v.get("additionalPrinterColumns") == first for v in versions)
    return "spec.additionalPrinterColumns" if same else f"spec.versions[{i}].additionalPrinterColumns"


def _printer_column_errors(columns: Any, path: str) -> list[FieldError]:
    if columns is None:
        return []
    if not isinstance(columns, list):
        return [FieldError("Invalid", path, "must be a list", columns)]
    errors = []
    for i, column in enumerate(columns):
        where = f"{path}[{i}]"
        if not isinstance(column, dict):
            errors.append(FieldError("Invalid", where, "must be an object", column))
            continue
        for key in ("name", "jsonPath"):
            if not isinstance(column.get(key), str) or not column.get(key):
                errors.append(FieldError("Required", f"{where}.{key}", ""))
        if column.get("type") not in _COLUMN_TYPES:
            errors.append(FieldError("NotSupported", f"{where}.type", value=column.get("type"), supported=_COLUMN_TYPES))
    return errors


def resource_types(crd: dict[str, Any]) -> list[ResourceType]:
    """The served versions of an established CRD, storage version included."""
    spec = crd["spec"]
    names = spec["names"]
    versions = [v for v in spec["versions"] if v.get("served", True)]
    storage = next((v["name"] for v in spec["versions"] if v.get("storage")), versions[0]["name"] if versions else "")
    out = []
    for version in versions:
        subresources = version.get("subresources") or {}
        sub = tuple(name for name in ("status", "scale") if name in subresources)
        scale = subresources.get("scale") or {}
        out.append(ResourceType(
            group=spec["group"], version=version["name"], plural=names["plural"], kind=names["kind"],
            namespaced=spec["scope"] == "Namespaced", short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()), subresources=sub, builtin=False,
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=tuple(version.get("additionalPrinterColumns") or ()), storage_version=storage,
            scale_paths=(str(scale.get("specReplicasPath", "")), str(scale.get("statusReplicasPath", "")),
                         str(scale.get("labelSelectorPath", ""))) if scale else ("", "", ""),
            rules=crd_rules.compile_schema(_body_schema((version.get("schema") or {}).get("openAPIV3Schema"))),
        ))
    return out
