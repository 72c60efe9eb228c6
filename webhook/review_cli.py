"""`batchgate review`: what the gateway would do to a manifest, without a cluster.

Each document goes through the same code as the server: `/mutate`, the patch applied, then
`/validate` on the result. Exit 0 when every document is allowed, 1 when one is denied, 2 on bad
input (a one-line message, never a traceback).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml

from batchgate.api.located_yaml import LocatedYAMLError, check_bounds
from batchgate.api.objects import metadata
from batchgate.command_line import ArgumentParser, BadInput, fail, read_source
from batchgate.policy import DEFAULT_POLICY, Policy, PolicyError, load_policy_document
from webhook.serving.gateway import Decision, review_offline
from webhook.rules.frameworks.preview import describe_env, workload_pod_previews
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

DEFAULT_GROUPS = ("system:authenticated",)
"""What the API server adds to every authenticated user; used when --groups is not given."""


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="batchgate review", description=__doc__.splitlines()[0])
    p.add_argument("-f", "--filename", required=True, help="manifest (YAML or JSON, several documents allowed); - for stdin")
    p.add_argument("--user", default=None, help="the submitting user (default: the OS user)")
    p.add_argument("--uid", default="", help="the user's uid (userInfo.uid)")
    p.add_argument("--groups", default=None, help=f"comma-separated groups (default: {','.join(DEFAULT_GROUPS)})")
    p.add_argument("--policy", type=Path, help="policy.yaml or the policy ConfigMap manifest (default: built-in)")
    p.add_argument("--operation", choices=["CREATE", "UPDATE"], help="default CREATE, or UPDATE with --old")
    p.add_argument("--old", help="the existing objects, for UPDATE (matched by kind, namespace and name)")
    p.add_argument("-o", "--output", choices=["yaml", "json", "patch"], default="yaml")
    return p


def load_documents(text: str, source: str) -> list[dict[str, Any]]:
    """The Kubernetes objects of a multi-document manifest, or BadInput saying where it breaks."""
    try:
        check_bounds(text)
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except LocatedYAMLError as exc:
        raise BadInput(f"{source}:{exc.line}: {exc.detail}" if exc.line else f"{source}: {exc.detail}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        context = f" ({exc.context} at line {exc.context_mark.line + 1})" if exc.context and exc.context_mark else ""
        raise BadInput(f"{where}: invalid YAML: {exc.problem or exc.context}{context}") from None
    except yaml.YAMLError as exc:
        raise BadInput(f"{source}: invalid YAML: {str(exc).splitlines()[0]}") from None
    except ValueError as exc:  # an integer with more digits than Python converts
        raise BadInput(f"{source}: a value cannot be read: {str(exc).splitlines()[0]}") from None
    objects = []
    for index, document in enumerate(documents, start=1):
        if document.__class__ is dict and document.get("kind") == "List" and isinstance(document.get("items"), list):
            candidates = document["items"]
        else:
            candidates = [document]
        for item in candidates:
            if not (isinstance(item, dict) and isinstance(item.get("apiVersion"), str)
                    and isinstance(item.get("kind"), str) and item["kind"]):
                raise BadInput(f"{source}: document {index} is not a Kubernetes object (needs apiVersion and kind)")
            objects.append(item)
    if not objects:
        raise BadInput(f"{source}: no objects in the manifest")
    return objects


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = metadata(obj)
    return (obj["apiVersion"], obj["kind"], str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def build_request(obj: dict[str, Any], old: dict[str, Any] | None, operation: str, user: UserInfo) -> AdmissionRequest:
    """The AdmissionRequest the API server would send for `obj` (namespace defaults as kubectl's)."""
    api_version, kind, namespace, name = _identity(obj)
    return AdmissionRequest(
        uid=str(uuid.uuid4()),
        kind=GroupVersionKind.from_api_version(api_version, kind),
        operation=operation,  # type: ignore[arg-type]
        user=user,
        namespace=namespace,
        name=name,
        object=obj,
        old_object=old,
    )


@dataclass(frozen=True)
class Outcome:
    obj: dict[str, Any]
    decision: Decision

    @property
    def label(self) -> str:
        _, kind, namespace, name = _identity(self.obj)
        return f"{kind} {namespace}/{name or '(generated)'}"

    def as_json(self) -> dict[str, Any]:
        reply = self.decision.reply
        return {"kind": self.obj["kind"], "name": _identity(self.obj)[3], "namespace": _identity(self.obj)[2],
                "allowed": reply.allowed, "code": reply.code, "reason": reply.reason, "message": reply.message,
                "changes": list(self.decision.changes), "patch": list(reply.patch), "warnings": list(reply.warnings),
                "object": self.decision.mutated if reply.allowed else None,
                "pods": workload_pod_previews(self.decision.mutated) if reply.allowed else []}


def review_all(objects: Sequence[dict[str, Any]], olds: Sequence[dict[str, Any]], operation: str,
               user: UserInfo, policy: Policy) -> list[Outcome]:
    by_identity = {_identity(o): o for o in olds}
    outcomes = []
    for obj in objects:
        old = by_identity.get(_identity(obj))
        if old is None and len(objects) == 1 and len(olds) == 1:
            old = olds[0]
        if operation == "UPDATE" and old is None:
            raise BadInput(f"--old has no object matching {obj['kind']} {_identity(obj)[2]}/{_identity(obj)[3]}")
        outcomes.append(Outcome(obj, review_offline(build_request(obj, old, operation, user), policy)))
    return outcomes


def _print(outcomes: list[Outcome], output: str) -> None:
    if output == "json":
        print(json.dumps([o.as_json() for o in outcomes], indent=2))
        return
    allowed = [o for o in outcomes if o.decision.reply.allowed]
    if output == "patch":
        for o in allowed:
            print(json.dumps(list(o.decision.reply.patch)))
    else:
        print(yaml.safe_dump_all([o.decision.mutated for o in allowed], sort_keys=False), end="")
    for o in allowed:
        for pod in workload_pod_previews(o.decision.mutated):
            print(f"Pod {pod['host']} of {o.label}: {pod['role']}, rank {pod['rank']}: {describe_env(pod)}",
                  file=sys.stderr)
    for o in outcomes:
        reply = o.decision.reply
        for warning in reply.warnings:
            print(f"Warning: {o.label}: {warning}", file=sys.stderr)
        if not reply.allowed:
            print(f"denied {o.label}: {reply.code} {reply.reason}: {reply.message}", file=sys.stderr)


def load_policy(path: Path | None) -> Policy:
    """The policy of `--policy` (a policy.yaml or its ConfigMap), else the built-in default."""
    if path is None:
        return DEFAULT_POLICY
    try:
        return load_policy_document(read_source(str(path)), str(path))
    except PolicyError as exc:
        raise BadInput(f"invalid policy: {exc}") from None


def run(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    policy = load_policy(args.policy)
    operation = args.operation or ("UPDATE" if args.old else "CREATE")
    if operation == "UPDATE" and not args.old:
        raise BadInput("--operation UPDATE needs --old FILE with the existing objects")
    if args.filename == "-" and args.old == "-":
        raise BadInput("only one of -f and --old can read stdin")
    objects = load_documents(read_source(args.filename), args.filename)
    olds = load_documents(read_source(args.old), args.old) if args.old else []
    groups = tuple(g for g in args.groups.split(",") if g) if args.groups is not None else DEFAULT_GROUPS
    user = UserInfo(args.user if args.user is not None else getpass.getuser(), args.uid, groups)
    outcomes = review_all(objects, olds, operation, user, policy)
    _print(outcomes, args.output)
    return 0 if all(o.decision.reply.allowed for o in outcomes) else 1


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except BadInput as exc:
        return fail("batchgate review", str(exc))
