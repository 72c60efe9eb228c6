"""The values rules take and return, independent of the AdmissionReview wire format."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal, Mapping

from batchgate.api.objects import Named
from batchgate.frozen import frozen

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@frozen
class UserInfo:
    """Who sent the request, as the API server authenticated them."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@frozen
class GroupVersionKind(Named):
    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> "GroupVersionKind":
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)


@frozen
class AdmissionRequest:
    """One admission request. `object`/`old_object` are the raw wire values (maybe not dicts)."""

    uid: str
    kind: GroupVersionKind
    operation: Operation
    user: UserInfo
    namespace: str = ""
    name: str = ""
    resource: str = ""
    sub_resource: str = ""
    object: Any = None
    old_object: Any = None
    dry_run: bool = False


@frozen
class Mutation:
    """What `/mutate` decided: the mutated deep copy and why each change was made.

    `object` is None when nothing applies (exempt, unpoliced kind, DELETE). The server diffs it
    against the request's object into the JSON Patch; `changes` are the human reasons.
    """

    object: dict[str, Any] | None = None
    changes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    denial: "Verdict | None" = None
    reason: str = ""
    """Short CamelCase word for the audit log: Mutated, Unchanged, Exempt, NamespaceNotManaged..."""


@frozen
class Verdict:
    """What `/validate` decided. `reason` is a short CamelCase rule name, `message` names the field."""

    allowed: bool
    code: int = 200
    reason: str = ""
    message: str = ""
    warnings: tuple[str, ...] = ()
