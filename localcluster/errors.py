"""API errors as the metav1.Status bodies and codes a real kube-apiserver sends.

Every failure inside a request handler is an `ApiError`; the server turns it into JSON with the
matching HTTP code, so no bad input can surface as a traceback or a 500.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_CAUSE_REASONS = {
    "Required": ("FieldValueRequired", "Required value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
    "TooMany": ("FieldValueTooMany", "Too many"),
}


def go_value(value: Any) -> str:
    """A value the way Go's field errors print it: strings quoted, others as JSON."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class FieldError:
    """One field problem, as `k8s.io/apimachinery/pkg/util/validation/field.Error`."""

    type: str
    field: str
    detail: str = ""
    value: Any = None
    supported: tuple[str, ...] = ()

    def message(self) -> str:
        _, label = _CAUSE_REASONS[self.type]
        if self.type in ("Required", "Forbidden", "TooMany"):
            return f"{label}: {self.detail}" if self.detail else label
        if self.type == "NotSupported":
            choices = ", ".join(json.dumps(s) for s in self.supported)
            return f"{label}: {go_value(self.value)}: supported values: {choices}"
        text = f"{label}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.message()}"

    def cause(self) -> dict[str, str]:
        return {"reason": _CAUSE_REASONS[self.type][0], "message": self.message(), "field": self.field}


@dataclass
class ApiError(Exception):
    """An error reply: HTTP code, Status reason, message, optional details."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    @classmethod
    def from_status(cls, status: dict[str, Any]) -> ApiError:
        """An error carrying a Status built elsewhere (admission denials)."""
        return cls(int(status.get("code") or 500), str(status.get("reason") or ""), str(status.get("message") or ""),
                   dict(status.get("details") or {}))

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def not_found(group: str, resource: str, name: str) -> ApiError:
    gr = f"{resource}.{group}" if group else resource
    return ApiError(404, "NotFound", f'{gr} "{name}" not found', _details(name, group, resource))


def already_exists(group: str, resource: str, name: str, deleting: bool = False) -> ApiError:
    gr = f"{resource}.{group}" if group else resource
    prefix = "object is being deleted: " if deleting else ""
    return ApiError(409, "AlreadyExists", f'{prefix}{gr} "{name}" already exists', _details(name, group, resource))


def conflict(group: str, resource: str, name: str, why: str) -> ApiError:
    gr = f"{resource}.{group}" if group else resource
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {gr} "{name}": {why}', _details(name, group, resource)
    )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
    qualified = f"{kind}.{group}" if group else kind
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
    details = _details(name, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str, group: str = "", resource: str = "", name: str = "") -> ApiError:
    return ApiError(403, "Forbidden", message, _details(name, group, resource) if resource else {})


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
    )


def not_acceptable(accepted: list[str]) -> ApiError:
    return ApiError(
        406, "NotAcceptable", f"only the following media types are accepted: {', '.join(accepted)}"
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_large() -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})
