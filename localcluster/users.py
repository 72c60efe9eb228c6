"""Who may call the cluster: bearer tokens for admin, alice and bob (or a users file),
service-account tokens (signed JWTs from the TokenRequest API, checked for expiry, audience and
that the ServiceAccount and bound pod still exist), and impersonation, which only members of
system:masters may use.

A users file is YAML: `users: [{name: alice, username: alice@example.com, uid: "1001",
groups: [ml-team]}]`. Every user also belongs to system:authenticated, as on a real cluster.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localcluster.errors import ApiError, forbidden, unauthorized

AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
SERVICE_ACCOUNTS = "system:serviceaccounts"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"  # kube-apiserver's default --api-audiences
ISSUER = API_AUDIENCE


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


@dataclass(frozen=True)
class TokenClaims:
    """What a service-account token asserts (the JWT claims kube-apiserver's TokenRequest writes)."""

    namespace: str
    service_account: str
    service_account_uid: str
    audiences: tuple[str, ...]
    expires: dt.datetime
    issued: dt.datetime
    pod_name: str = ""
    pod_uid: str = ""

    def user(self) -> User:
        """system:serviceaccount:NS:NAME with the service-account groups, as kube-apiserver maps it."""
        username = f"system:serviceaccount:{self.namespace}:{self.service_account}"
        extra = {}
        if self.pod_name:
            extra = {"authentication.kubernetes.io/pod-name": [self.pod_name],
                     "authentication.kubernetes.io/pod-uid": [self.pod_uid]}
        return User(username, username, self.service_account_uid,
                    (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{self.namespace}", AUTHENTICATED), extra)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


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
    """Maps bearer tokens to users and applies `Impersonate-*` headers.

    Service-account tokens are HS256 JWTs signed with a key of this server's own; `now` and
    `still_bound` (does the ServiceAccount, and the pod a token is bound to, still exist with
    the same uid?) are given by the cluster, so a deleted pod's token stops working."""

    def __init__(self, users: list[User], now: Callable[[], dt.datetime] | None = None,
                 still_bound: Callable[[TokenClaims], bool] | None = None) -> None:
        self.users = {u.name: u for u in users}
        self.tokens = {u.name: secrets.token_urlsafe(24) for u in users}
        self._by_token = {token: self.users[name] for name, token in self.tokens.items()}
        self._key = secrets.token_bytes(32)
        self.now = now or (lambda: dt.datetime.now(dt.timezone.utc))
        self.still_bound = still_bound or (lambda claims: True)

    def authenticate(self, authorization: str | None) -> User:
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer":  # the scheme is case-insensitive: in-cluster clients send "bearer"
            raise unauthorized()
        token = token.strip()
        user = self._by_token.get(token)
        if user is None and token.count(".") == 2:
            claims = self.verify(token)
            if claims is not None and API_AUDIENCE in claims.audiences and self.still_bound(claims):
                user = claims.user()
        if user is None:
            raise unauthorized()
        return user

    def issue(self, claims: TokenClaims) -> str:
        """A signed token carrying `claims` (the TokenRequest API's answer)."""
        body = {
            "iss": ISSUER, "sub": claims.user().username, "aud": list(claims.audiences),
            "exp": int(claims.expires.timestamp()), "iat": int(claims.issued.timestamp()),
            "nbf": int(claims.issued.timestamp()), "jti": secrets.token_hex(8),
            "kubernetes.io": {"namespace": claims.namespace,
                              "serviceaccount": {"name": claims.service_account, "uid": claims.service_account_uid},
                              **({"pod": {"name": claims.pod_name, "uid": claims.pod_uid}} if claims.pod_name else {})},
        }
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        signature = hmac.new(self._key, f"{head}.{payload}".encode(), hashlib.sha256).digest()
        return f"{head}.{payload}.{_b64(signature)}"

    def verify(self, token: str) -> TokenClaims | None:
        """The claims of a token this server signed and that has not expired; None otherwise."""
        head, payload, signature = token.split(".")
        expected = hmac.new(self._key, f"{head}.{payload}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(signature), expected):
                return None
            body = json.loads(_unb64(payload))
            k8s = body["kubernetes.io"]
            pod = k8s.get("pod") or {}
            claims = TokenClaims(k8s["namespace"], k8s["serviceaccount"]["name"], k8s["serviceaccount"]["uid"],
                                 tuple(body["aud"]), dt.datetime.fromtimestamp(body["exp"], dt.timezone.utc),
                                 dt.datetime.fromtimestamp(body["iat"], dt.timezone.utc),
                                 pod.get("name", ""), pod.get("uid", ""))
        except (ValueError, KeyError, TypeError):
            return None
        return claims if self.now() < claims.expires else None

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
        all_groups = list(groups) or service_account_groups(target)
        if AUTHENTICATED not in all_groups and target != "system:anonymous":
            all_groups.append(AUTHENTICATED)
        return User(target, target, uid or "", tuple(all_groups), extra)


def service_account_groups(username: str) -> list[str]:
    """A service account's groups, for `system:serviceaccount:NS:NAME` (else none): kube-apiserver
    gives them to an impersonated service account when no group is asked for, as its token would."""
    prefix = "system:serviceaccount:"
    parts = username[len(prefix):].split(":") if username.startswith(prefix) else []
    if len(parts) != 2 or not all(parts):
        return []
    return [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{parts[0]}"]


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
