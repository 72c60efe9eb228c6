"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), with the API server's error replies."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from localcluster.errors import ApiError, bad_request

MAX_JSON_PATCH_OPERATIONS = 10_000


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, everything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(422, "RequestEntityTooLarge",
                       f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
                       f"got {len(operations)}")
    try:
        result = jsonpatch.JsonPatch(operations).apply(target)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}") from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, TypeError, IndexError) as exc:
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {exc}") from None
    if not isinstance(result, dict):
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request: "
                       "the patch result is not an object")
    return result
