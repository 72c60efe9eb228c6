"""Setting types: each parses a value and describes itself as JSON Schema.

One object does both, so what `batchgate generate pytorchjob` accepts and what its
`--settings-schema` prints cannot drift apart. Parsing raises FieldError with the field path;
the settings reader turns the path into the line to fix.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

from batchgate.api.errors import FieldError, child, type_name
from batchgate.api.pod_spec import check_kubernetes_type

Schema = dict[str, Any]
Defs = dict[str, Schema]


class Shape(ABC):
    """A setting's type. `ref` names it under the schema's `$defs` ("" keeps it inline)."""

    ref: str = ""

    @abstractmethod
    def parse(self, value: Any, path: str) -> Any:
        """The value as the model holds it; FieldError at `path` when it does not fit."""

    @abstractmethod
    def body(self, defs: Defs) -> Schema:
        """This shape as JSON Schema (named shapes it uses are added to `defs`)."""

    def schema(self, defs: Defs) -> Schema:
        if not self.ref:
            return self.body(defs)
        if self.ref not in defs:
            defs[self.ref] = self.body(defs)
        return {"$ref": f"#/$defs/{self.ref}"}


@dataclass(frozen=True)
class Text(Shape):
    """A string, optionally from `enum`, matching `pattern` (`hint` says in words what it wants)."""

    pattern: str = ""
    hint: str = ""
    enum: tuple[str, ...] = ()
    min_length: int = 0
    max_length: int = 0
    ref: str = ""

    def parse(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise FieldError(path, f"must be a string, got {type_name(value)}")
        if self.enum and value not in self.enum:
            raise FieldError(path, f"{value!r} is not one of {', '.join(self.enum)}")
        if self.pattern and not re.search(self.pattern, value):
            raise FieldError(path, f"{value!r} is not {self.hint}")
        if len(value) < self.min_length or self.max_length and len(value) > self.max_length:
            raise FieldError(path, f"{value!r} must be {self.min_length} to {self.max_length} characters long")
        return value

    def body(self, defs: Defs) -> Schema:
        out: Schema = {"type": "string"}
        if self.enum:
            out["enum"] = list(self.enum)
        if self.pattern:
            out["pattern"] = self.pattern
        if self.min_length:
            out["minLength"] = self.min_length
        if self.max_length:
            out["maxLength"] = self.max_length
        return out


@dataclass(frozen=True)
class Integer(Shape):
    minimum: int | None = None
    maximum: int | None = None
    ref: str = ""

    def parse(self, value: Any, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(path, f"must be an integer, got {type_name(value)}")
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            bounds = (f"from {self.minimum} to {self.maximum}" if self.maximum is not None
                      else f"at least {self.minimum}")
            raise FieldError(path, f"must be {bounds}, got {value}")
        return value

    def body(self, defs: Defs) -> Schema:
        out: Schema = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


@dataclass(frozen=True)
class Boolean(Shape):
    def parse(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise FieldError(path, f"must be true or false, got {type_name(value)}")
        return value

    def body(self, defs: Defs) -> Schema:
        return {"type": "boolean"}


@dataclass(frozen=True)
class Scalar(Shape):
    """A literal of any scalar type (an environment variable's value)."""

    def parse(self, value: Any, path: str) -> str | int | float | bool:
        if not isinstance(value, (str, int, float)):
            raise FieldError(path, f"must be a string, a number or true/false, got {type_name(value)}")
        return value

    def body(self, defs: Defs) -> Schema:
        return {"type": ["string", "number", "boolean"]}


@dataclass(frozen=True)
class OneOf(Shape):
    """The first option that accepts the value; `hint` says what any of them wants."""

    options: tuple[Shape, ...]
    hint: str
    ref: str = ""

    def parse(self, value: Any, path: str) -> Any:
        for option in self.options:
            try:
                return option.parse(value, path)
            except FieldError:
                continue
        raise FieldError(path, f"must be {self.hint}, got {value!r}")

    def body(self, defs: Defs) -> Schema:
        return {"oneOf": [option.schema(defs) for option in self.options]}


@dataclass(frozen=True)
class Nullable(Shape):
    """The inner shape, or null for "not set" (read as `unset`)."""

    inner: Shape
    unset: Any = None

    def parse(self, value: Any, path: str) -> Any:
        return self.unset if value is None else self.inner.parse(value, path)

    def body(self, defs: Defs) -> Schema:
        return {"oneOf": [{"type": "null"}, self.inner.schema(defs)]}


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape

    def parse(self, value: Any, path: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise FieldError(path, f"must be a list, got {type_name(value)}")
        return tuple(self.item.parse(v, child(path, i)) for i, v in enumerate(value))

    def body(self, defs: Defs) -> Schema:
        return {"type": "array", "items": self.item.schema(defs)}


@dataclass(frozen=True)
class Record(Shape):
    """A mapping with known keys (others are errors); `build` turns the parsed values into a model
    and may check how they combine."""

    fields: tuple[tuple[str, Shape], ...]
    build: Callable[[dict[str, Any], str], Any]
    required: tuple[str, ...] = ()
    ref: str = ""

    def parse(self, value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise FieldError(path, f"must be a mapping, got {type_name(value)}")
        shapes = dict(self.fields)
        for key in value:
            if key not in shapes:
                raise FieldError(child(path, str(key)), f"unknown key (expected one of {', '.join(shapes)})")
        for key in self.required:
            if value.get(key) in (None, ""):
                raise FieldError(child(path, key), "is required")
        parsed = {key: shapes[key].parse(v, child(path, key)) for key, v in value.items() if v is not None}
        return self.build(parsed, path)

    def body(self, defs: Defs) -> Schema:
        out: Schema = {"type": "object", "properties": {key: shape.schema(defs) for key, shape in self.fields}}
        if self.required:
            out["required"] = list(self.required)
        out["additionalProperties"] = False
        return out


@dataclass(frozen=True)
class KubernetesType(Shape):
    """A Kubernetes API type passed through as written (checked against the pod spec's field table)."""

    type_id: str

    def parse(self, value: Any, path: str) -> Any:
        check_kubernetes_type(value, self.type_id, path)
        return value

    def body(self, defs: Defs) -> Schema:
        return {"type": "object"}
