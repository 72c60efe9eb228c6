"""The AdmissionReview wire format: parse a request body once, build the reply.

Pure functions of bytes and values, so the server, the offline review and the tests share them.
Hostile bodies are expected: anything we cannot answer raises `MalformedReview` with a message
that says what is wrong, never a stack trace.
"""

from __future__ import annotations

import base64
import json
from functools import cached_property
from typing import Any, Mapping, Sequence

from batchgate.frozen import frozen

from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")

MAX_BODY_BYTES = 3 * 1024 * 1024
"""The API server's own request limit (k8s-contract A5): no real review is larger."""

class MalformedReview(ValueError):
    """A body that is not an answerable AdmissionReview.

    `uid` is set when the request's uid could be read: then the reply is an AdmissionReview
    denial with code 400 that the API server shows to the user; without it, an HTTP 400.
    """

    def __init__(self, message: str, uid: str | None = None, partial: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.uid = uid
        self.partial = dict(partial or {})


def decode_json(body: bytes) -> Any:
    """JSON from bytes, or `MalformedReview`.

    Nesting: the C decoder stops at the interpreter's recursion limit with RecursionError (JSON
    nested 100,000 deep is refused while parsing, in microseconds); objects nested deeper than
    the rules accept are denied by the rules' own depth check (`webhook.rules.MAX_NESTING`).
    """
    if len(body) > MAX_BODY_BYTES:
        raise MalformedReview(f"request body is {len(body)} bytes, over the limit of {MAX_BODY_BYTES}")
    try:
        return json.loads(body)
    except RecursionError:
        raise MalformedReview("request body nests too deeply to decode") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedReview(f"request body is not JSON: {exc}") from None


def _string(request: Mapping[str, Any], key: str, uid: str | None, required: bool = False) -> str:
    value = request.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise MalformedReview(f"request.{key} must be a non-empty string" if required else
                              f"request.{key} must be a string", uid)
    return value


def _gvk(request: Mapping[str, Any], uid: str) -> GroupVersionKind:
    kind = request.get("kind")
    if not isinstance(kind, dict):
        raise MalformedReview("request.kind must be an object with group, version and kind", uid)
    parts = []
    for field in ("group", "version", "kind"):
        value = kind.get(field, "")
        if not isinstance(value, str) or (field != "group" and not value):
            raise MalformedReview(f"request.kind.{field} must be a {'non-empty ' if field != 'group' else ''}string", uid)
        parts.append(value)
    return GroupVersionKind(*parts)


def _user(request: Mapping[str, Any], uid: str) -> UserInfo:
    info = request.get("userInfo") or {}
    if not isinstance(info, dict):
        raise MalformedReview("request.userInfo must be an object", uid)
    username, user_uid = info.get("username", ""), info.get("uid", "")
    groups, extra = info.get("groups") or [], info.get("extra") or {}
    if not isinstance(username, str) or not isinstance(user_uid, str):
        raise MalformedReview("request.userInfo.username and uid must be strings", uid)
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise MalformedReview("request.userInfo.groups must be a list of strings", uid)
    if not isinstance(extra, dict) or not all(
        isinstance(v, list) and all(isinstance(s, str) for s in v) for v in extra.values()
    ):
        raise MalformedReview("request.userInfo.extra must map strings to lists of strings", uid)
    return UserInfo(username, user_uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})


def parse_review(document: Any) -> AdmissionRequest:
    """An `AdmissionRequest` from a decoded AdmissionReview, or `MalformedReview`."""
    if not isinstance(document, dict):
        raise MalformedReview(f"an AdmissionReview must be a JSON object, not {type(document).__name__}")
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version != API_VERSION or kind != KIND:
        raise MalformedReview(f"expected apiVersion {API_VERSION} kind {KIND}, got {api_version!r} {kind!r}")
    request = document.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("the AdmissionReview has no request object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview("request.uid must be a non-empty string")
    partial: dict[str, Any] = {"uid": uid}
    try:
        operation = request.get("operation")
        if operation not in OPERATIONS:
            raise MalformedReview(f"request.operation must be one of {', '.join(OPERATIONS)}, not {operation!r}", uid)
        partial["operation"] = operation
        gvk = _gvk(request, uid)
        partial["kind"] = gvk
        namespace, name = _string(request, "namespace", uid), _string(request, "name", uid)
        partial.update(namespace=namespace, name=name)
        user = _user(request, uid)
        partial["user"] = user
        dry_run = request.get("dryRun", False)
        if not isinstance(dry_run, bool):
            raise MalformedReview("request.dryRun must be a boolean", uid)
        resource = request.get("resource") or {}
        return AdmissionRequest(
            uid=uid,
            kind=gvk,
            operation=operation,
            user=user,
            namespace=namespace,
            name=name,
            resource=resource.get("resource", "") if isinstance(resource, dict) else "",
            sub_resource=_string(request, "subResource", uid),
            object=request.get("object"),
            old_object=request.get("oldObject"),
            dry_run=dry_run,
        )
    except MalformedReview as exc:
        exc.partial = partial
        raise


def _pointer(path: str, key: str | int) -> str:
    """RFC 6901: `~` becomes `~0` and `/` becomes `~1` (label keys are full of slashes)."""
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _diff(path: str, before: Any, after: Any, ops: list[dict[str, Any]]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": _pointer(path, key)})
        for key, value in after.items():
            if key not in before:
                ops.append({"op": "add", "path": _pointer(path, key), "value": value})
            elif before[key] != value:
                _diff(_pointer(path, key), before[key], value, ops)
    elif isinstance(before, list) and isinstance(after, list) and (
            len(before) == len(after) or (len(after) > len(before) and after[:len(before)] == before)):
        for index, (old, new) in enumerate(zip(before, after)):
            if old != new:
                _diff(_pointer(path, index), old, new, ops)
        for index in range(len(before), len(after)):
            ops.append({"op": "add", "path": _pointer(path, index), "value": after[index]})
    else:
        ops.append({"op": "replace", "path": path, "value": after})


def json_patch(original: Any, mutated: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations turning `original` into `mutated`; [] when they are equal.

    A diff (rather than hand-written ops) adds a whole map where one was missing, so an `add`
    never lands under an absent parent. Only changed subtrees are walked, with equality checks
    done in C: `jsonpatch.make_patch` gives equivalent patches but its list diffing costs about
    five times the rules themselves on an AppWrapper (bench/webhook_load.py); the tests apply
    every patch with `jsonpatch` as the reference. Lists that are not the same length or an
    append are replaced whole.
    """
    if mutated is None or mutated == original:
        return []
    ops: list[dict[str, Any]] = []
    _diff("", original, mutated, ops)
    return ops


@frozen
class Reply:
    """One answer to one review, before it becomes wire JSON."""

    uid: str
    allowed: bool
    code: int = 200
    reason: str = ""
    message: str = ""
    patch: Sequence[Mapping[str, Any]] = ()
    warnings: Sequence[str] = ()

    @cached_property
    def encoded_patch(self) -> bytes:
        """The patch as JSON, encoded once: `/mutate` checks its size, then sends it (7.5 µs for
        the bench's AppWrapper, once per review instead of twice)."""
        return json.dumps(list(self.patch), separators=(",", ":")).encode()

    def to_review(self) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if not self.allowed:
            status: dict[str, Any] = {"code": self.code, "message": self.message}
            if self.reason:
                status["reason"] = self.reason
            response["status"] = status
        if self.patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(self.encoded_patch).decode("ascii")
        if self.warnings:
            response["warnings"] = list(self.warnings)
        return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def malformed_body(message: str) -> dict[str, Any]:
    """The JSON body of an HTTP 400 for a review we could not read at all."""
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 400,
            "reason": "BadRequest", "message": message}


def review_document(request: AdmissionRequest) -> dict[str, Any]:
    """The AdmissionReview the API server would POST for `request` (for clients: demo, bench, tests)."""
    kind = {"group": request.kind.group, "version": request.kind.version, "kind": request.kind.kind}
    body: dict[str, Any] = {
        "uid": request.uid,
        "kind": kind,
        "requestKind": kind,
        "resource": {"group": request.kind.group, "version": request.kind.version, "resource": request.resource},
        "name": request.name,
        "namespace": request.namespace,
        "operation": request.operation,
        "userInfo": {"username": request.user.username, "uid": request.user.uid, "groups": list(request.user.groups)},
        "object": request.object,
        "oldObject": request.old_object,
        "dryRun": request.dry_run,
    }
    return {"apiVersion": API_VERSION, "kind": KIND, "request": body}
