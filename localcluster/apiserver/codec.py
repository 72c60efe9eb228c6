"""Request bodies in (JSON, YAML, protobuf) and query parameters, parsed as kube-apiserver does.

Every parse failure is an ApiError with the code a real server answers (400 for malformed
bodies or parameters, 415 for media types it cannot read), never an exception escaping.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from localcluster.errors import ApiError, bad_request, unsupported_media_type

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

BODY_TYPES = [JSON, YAML, PROTOBUF]
BUILTIN_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH]
CUSTOM_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]

MAX_BODY_BYTES = 3 * 1024 * 1024

def parse_bool(value: str | None) -> bool:
    """A boolean query parameter as apimachinery converts one (Convert_Slice_string_To_bool): absent,
    "0" or "false" (any case) is false, every other value, the empty one included, true. Never an
    error: kube-apiserver takes `?watch=maybe` for a watch."""
    return value is not None and value != "0" and value.lower() != "false"


def parse_int(value: str | None, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax (query parameter {name})') from None


def media_type(content_type: str | None) -> str:
    """The media type without parameters (`; charset=utf-8` is tolerated)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


def _yaml(body: bytes) -> Any:
    try:
        documents = list(yaml.safe_load_all(body))
    except yaml.YAMLError as exc:
        raise bad_request(f"error converting YAML to JSON: {str(exc).splitlines()[0]}") from None
    documents = [d for d in documents if d is not None]
    if len(documents) > 1:
        raise bad_request("error converting YAML to JSON: yaml: more than one document in the request body")
    return documents[0] if documents else None


def _protobuf(body: bytes) -> Any:
    try:
        from localcluster.apiserver import protobuf
    except ImportError:
        raise unsupported_media_type(PROTOBUF, [JSON, YAML]) from None
    if not body.startswith(protobuf.MAGIC):  # not protobuf at all: kube-apiserver's decoder refuses it, 400
        summary = body[:30].hex() + (" ..." if len(body) > 30 else "")  # as its summarizeData shows a body
        raise bad_request("the object provided is unrecognized: provided data does not appear to be a protobuf "
                          f"message, expected prefix [107 56 115 0] ({summary})")
    try:
        return protobuf.decode(body)
    except protobuf.ProtobufError as exc:  # protobuf the stand-in cannot read (a kind it does not decode)
        raise ApiError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format - accepted media types include: "
                       f"{JSON}, {YAML}, {PROTOBUF}: {exc}") from None


def decode_object(content_type: str | None, body: bytes) -> Any:
    """A create/update body: JSON by default, YAML, or protobuf for built-in kinds."""
    kind = media_type(content_type)
    if not body.strip():
        raise bad_request("the request body is empty")
    if kind in ("", JSON, "*/*"):
        return _json(body)
    if kind in (YAML, "application/x-yaml", "text/yaml"):
        return _yaml(body)
    if kind == PROTOBUF:
        return _protobuf(body)
    raise unsupported_media_type(kind, BODY_TYPES)


def decode_patch(content_type: str | None, body: bytes, builtin: bool) -> tuple[str, Any]:
    kind = media_type(content_type)
    accepted = BUILTIN_PATCH_TYPES if builtin else CUSTOM_PATCH_TYPES
    if kind not in accepted:
        raise unsupported_media_type(kind, accepted)
    if not body.strip():
        raise bad_request("the body of the request was empty")
    if kind == APPLY_PATCH:
        return kind, _yaml(body)
    return kind, _json(body)


def decode_options(body: bytes, content_type: str | None) -> dict[str, Any]:
    """DeleteOptions (or similar) from an optional body."""
    if not body.strip():
        return {}
    kind = media_type(content_type)
    if kind == PROTOBUF:
        return {}
    value = _yaml(body) if kind in (YAML,) else _json(body)
    if not isinstance(value, dict):
        raise bad_request("json: cannot unmarshal into Go value of type v1.DeleteOptions")
    return value


def wants_table(accept: str) -> bool:
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


def acceptable(accept: str) -> bool:
    """Whether a JSON reply satisfies the Accept header (kubectl also offers protobuf and Table)."""
    if not accept:
        return True
    for part in accept.split(","):
        kind = part.split(";", 1)[0].strip().lower()
        if kind in (JSON, "*/*", "application/*", PROTOBUF, YAML, "application/json-seq", ""):
            return True
    return False
