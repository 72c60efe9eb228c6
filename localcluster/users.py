"""Who may call the cluster: bearer tokens for admin, alice and bob (or a users file), and
impersonation, which only members of system:masters may use.

A users file is YAML: `users: [{name: alice, username: alice@example.com, uid: "1001",
groups: [ml-team]}]`. Every user also belongs to system:authenticated, as on a real cluster.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localcluster.errors import ApiError, forbidden, unauthorized

AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"


@dataclass(frozen=True)
class User:
    name: str  # the kubeconfig user/context name
    username: str
    uid: str
    groups: tuple[str, ...]
    extra: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    def info(self) -> dict[str, Any]:
        """authentication/v1 UserInfo, as admission reviews and SelfSubjectReview carry it."""
        out: dict[str, Any] = {"username": self.username, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


DEFAULT_USERS = (
    User("admin", "admin", "admin-uid", (MASTERS, AUTHENTICATED)),
    User("alice", "alice", "1001", (AUTHENTICATED,)),
    User("bob", "bob", "1002", (AUTHENTICATED,)),
)


class UsersFileError(ValueError):
    pass


def load_users(path: Path | None) -> list[User]:
    """The default three users, overridden or extended by a users file."""
    users = {u.name: u for u in DEFAULT_USERS}
    if path is None:
        return list(users.values())
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsersFileError(f"{path}: {exc}") from None
    entries = document.get("users") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise UsersFileError(f"{path}: expected a mapping with a list under 'users'")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise UsersFileError(f"{path}: users[{i}].name: a non-empty string is required")
        groups = entry.get("groups") or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise UsersFileError(f"{path}: users[{i}].groups: must be a list of strings")
        if AUTHENTICATED not in groups:
            groups = [*groups, AUTHENTICATED]
        users[entry["name"]] = User(entry["name"], str(entry.get("username") or entry["name"]),
                                    str(entry.get("uid") or ""), tuple(groups))
    return list(users.values())


class Authenticator:
    """Maps bearer tokens to users and applies `Impersonate-*` headers."""

    def __init__(self, users: list[User]) -> None:
        self.users = {u.name: u for u in users}
        self.tokens = {u.name: secrets.token_urlsafe(24) for u in users}
        self._by_token = {token: self.users[name] for name, token in self.tokens.items()}

    def authenticate(self, authorization: str | None) -> User:
        if not authorization or not authorization.startswith("Bearer "):
            raise unauthorized()
        user = self._by_token.get(authorization[len("Bearer "):].strip())
        if user is None:
            raise unauthorized()
        return user

    def impersonate(self, user: User, headers: Any) -> User:
        target = headers.get("Impersonate-User")
        groups = headers.getall("Impersonate-Group", []) if hasattr(headers, "getall") else []
        uid = headers.get("Impersonate-Uid")
        extra = {k[len("Impersonate-Extra-"):].lower(): headers.getall(k) for k in headers
                 if k.lower().startswith("impersonate-extra-")}
        if not target and not groups and not uid and not extra:
            return user
        if not target:
            raise ApiError(500, "InternalError", "Internal error occurred: requested impersonation of groups or "
                           "uid without a user")
        if MASTERS not in user.groups:
            raise forbidden(f'users "{target}" is forbidden: User "{user.username}" cannot impersonate resource '
                            f'"users" in API group "" at the cluster scope', "", "users", target)
        all_groups = list(groups)
        if AUTHENTICATED not in all_groups and target != "system:anonymous":
            all_groups.append(AUTHENTICATED)
        return User(target, target, uid or "", tuple(all_groups), extra)


def kubeconfig(server: str, ca_pem: bytes, tokens: dict[str, str], current: str = "admin") -> dict[str, Any]:
    """A kubeconfig with one cluster and a context per user, named after the user."""
    cluster = "localcluster"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {
            "server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": name, "user": {"token": token}} for name, token in tokens.items()],
        "contexts": [{"name": name, "context": {"cluster": cluster, "user": name, "namespace": "default"}}
                     for name in tokens],
        "current-context": current,
        "preferences": {},
    }
