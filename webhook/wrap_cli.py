"""`batchgate wrap`: a YAML of ordinary resources as one AppWrapper, refused where the gateway would.

Every document becomes a component, in order, with podSets declared for the kinds that need them
(batchgate/api/wrap.py). The AppWrapper then goes through the gateway's own AppWrapper validation
under the policy; what it would deny at submission (a kind not in `allowedKinds.wrapped`, a
namespace that disagrees, ...) is printed with the document's number and line, and nothing goes
to stdout. Exit 0 printed, 1 refused by the policy, 2 bad input.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from batchgate.api.errors import FieldError
from batchgate.api.located_yaml import LocatedDocument, LocatedYAMLError, line_for, load_located_all
from batchgate.api.objects import api_version_kind, metadata
from batchgate.api.output import FORMATS, render
from batchgate.api.values import parse_name
from batchgate.api.wrap import DocumentError, Wrapping, default_name, stated_namespace, wrap
from batchgate.command_line import ArgumentParser, BadInput, Refused, read_source, run_command
from webhook.review_cli import load_policy
from webhook.rules.appwrapper_rules import validate_create

DEFAULT_QUEUE = "default-queue"
_COMPONENT = re.compile(r"^spec\.components\[(\d+)\](.*)$")


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="batchgate wrap", description=__doc__.splitlines()[0])
    p.add_argument("-f", "--filename", required=True, help="resources (YAML, documents separated by ---); - for stdin")
    p.add_argument("--name", help="the AppWrapper's name (default: the first resource's)")
    p.add_argument("--namespace", help="the AppWrapper's namespace (default: the first one a resource names)")
    p.add_argument("--queue", default=DEFAULT_QUEUE,
                   help=f"LocalQueue label (default: {DEFAULT_QUEUE}; '' leaves it to the gateway)")
    p.add_argument("--policy", type=Path, help="policy.yaml or the policy ConfigMap manifest (default: built-in)")
    p.add_argument("-o", "--output", choices=FORMATS, default="yaml")
    return p


def _checked(value: str, option: str) -> str:
    try:
        return parse_name(value, option)
    except FieldError as exc:
        raise BadInput(str(exc)) from None


def _load(text: str, source: str) -> list[LocatedDocument]:
    try:
        documents = load_located_all(text)
    except LocatedYAMLError as exc:
        problem = FieldError(exc.path, exc.detail)
        raise BadInput(f"{source}:{exc.line}: {problem}" if exc.line else f"{source}: {problem}") from None
    if not documents:
        raise BadInput(f"{source}: no documents to wrap")
    return documents


def _line(source: str, document: LocatedDocument, index: int, error: FieldError) -> str:
    kind, name = api_version_kind(document.value)[1], metadata(document.value).get("name")
    what = f"document {index + 1}"
    if kind:
        what += f" ({kind} {name})" if isinstance(name, str) and name else f" ({kind})"
    line = line_for(document.lines, error.path)
    return f"{source}:{line}: {what}: {error}" if line else f"{source}: {what}: {error}"


def _in_document(aw: dict[str, Any], error: FieldError) -> DocumentError | None:
    """A gateway error at `spec.components[i]...` as an error inside document i (None: the whole AppWrapper)."""
    match = _COMPONENT.match(error.path)
    if match is None:
        return None
    index, rest = int(match.group(1)), match.group(2)
    pod_set = re.match(r"^\.podSets\[(\d+)\]", rest)
    if pod_set:  # the podSets are wrap's: point at the template the podSet names
        rest = "." + aw["spec"]["components"][index]["podSets"][int(pod_set.group(1))]["path"]
    inner = rest.removeprefix(".template").removeprefix(".")
    return DocumentError(index, FieldError(inner, error.detail))


def wrapped(argv: list[str]) -> str:
    """The AppWrapper to print for `argv`; BadInput or Refused when there is none."""
    args = parser().parse_args(argv)
    policy = load_policy(args.policy)
    source = "<stdin>" if args.filename == "-" else args.filename
    documents = _load(read_source(args.filename), source)
    values = [d.value for d in documents]
    name = _checked(args.name if args.name is not None else default_name(values), "--name")
    if not name:
        raise BadInput(f"{source}: the first resource has no metadata.name; name the AppWrapper with --name")
    namespace = _checked(args.namespace, "--namespace") if args.namespace else stated_namespace(values)
    aw, errors = wrap(values, Wrapping(name, namespace, _checked(args.queue, "--queue")))
    if aw is None:
        raise Refused([_line(source, documents[e.index], e.index, e.error) for e in errors], code=2)
    lines = []
    for error in validate_create(aw, namespace or "", policy):
        located = _in_document(aw, error)
        lines.append(_line(source, documents[located.index], located.index, located.error) if located
                     else f"{source}: the AppWrapper: {error.detail}")
    if lines:
        raise Refused(lines, code=1)
    return render(aw, args.output)


def main(argv: list[str] | None = None) -> int:
    return run_command("batchgate wrap", wrapped, argv)
