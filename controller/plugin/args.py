"""The plugin's command line: kueuectl's verbs and filters, kubectl's connection and output flags.

One argparse tree serves parsing, `--help` and shell completion (completion.py walks it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from batchgate import keys
from batchgate.command_line import ArgumentParser, BadInput
from batchgate.kinds import QUEUED

# What each resource is called on the command line (kueuectl's names and aliases) -> its kind
LIST_RESOURCES: dict[str, str] = {
    **dict.fromkeys(("workloads", "workload", "wl", "kwl"), "Workload"),
    **dict.fromkeys(("localqueues", "localqueue", "lq"), "LocalQueue"),
    **dict.fromkeys(("clusterqueues", "clusterqueue", "cq"), "ClusterQueue"),
    **dict.fromkeys(("resourceflavors", "resourceflavor", "rf"), "ResourceFlavor"),
}
STOPPABLE: dict[str, str] = {name: kind for name, kind in LIST_RESOURCES.items() if kind != "ResourceFlavor"
                             and not name.endswith("s")}
# `why KIND/NAME`: a queued kind by its kind, plural or `plural.group` (as kubectl takes them), or a Workload
WHY_KINDS: dict[str, str] = {
    **{name: k.kind for k in QUEUED.values()
       for name in (k.kind.lower(), k.plural, f"{k.plural}.{k.group}".rstrip("."), k.qualified.lower())},
    **{name: "Workload" for name in ("workload", "workloads", "wl", f"workloads.{keys.KUEUE_GROUP}")},
}
STATUSES = ("all", "pending", "quotareserved", "admitted", "finished")
OUTPUTS = ("table", "wide", "yaml", "json", "name")
DRY_RUN = ("none", "server", "client")  # kueuectl's --dry-run strategies
SHELLS = ("bash", "zsh")
# kubectl's global flags, taken before the verb too (kubectl hands a plugin every word after its
# name; kueuectl, a cobra program, takes them anywhere): those with a value, and -A (list's)
GLOBAL_FLAGS = ("--kubeconfig", "--context", "-n", "--namespace")
GLOBAL_SWITCHES = ("-A", "--all-namespaces")


@dataclass(frozen=True)
class Connection:
    kubeconfig: str | None
    context: str | None
    namespace: str | None  # None: the kubeconfig context's, else "default"
    all_namespaces: bool


def _connection_flags(parser: argparse.ArgumentParser, all_namespaces: bool) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("-n", "--namespace", help="namespace (default: the context's, else default)")
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def parser() -> ArgumentParser:
    top = ArgumentParser(prog="kubectl batchgate", description="batchgate's verbs for queues and workloads")
    verbs = top.add_subparsers(dest="verb", required=True, metavar="VERB")

    listing = verbs.add_parser("list", help="list workloads, localqueues, clusterqueues or resourceflavors")
    listing.add_argument("resource", choices=tuple(LIST_RESOURCES), metavar="RESOURCE",
                         help="workloads (wl), localqueues (lq), clusterqueues (cq) or resourceflavors (rf)")
    _connection_flags(listing, all_namespaces=True)
    listing.add_argument("-o", "--output", choices=OUTPUTS, default="table")
    listing.add_argument("-l", "--selector", help="label selector, as kubectl's")
    listing.add_argument("-c", "--clusterqueue", default="", help="workloads admitted to, or localqueues of, this ClusterQueue")
    listing.add_argument("-q", "--localqueue", default="", help="workloads of this LocalQueue")
    listing.add_argument("--status", action="append", choices=STATUSES, default=[], help="workloads in this status (repeatable)")
    listing.add_argument("--active", choices=("true", "false"), help="clusterqueues that are (not) active")

    for verb, what in (("stop", "stop admitting a workload (deactivate it) or a queue"),
                       ("resume", "resume a workload or a queue that was stopped")):
        sub = verbs.add_parser(verb, help=what)
        sub.add_argument("resource", choices=tuple(STOPPABLE), metavar="RESOURCE",
                         help="workload (wl), localqueue (lq) or clusterqueue (cq)")
        sub.add_argument("name")
        _connection_flags(sub, all_namespaces=False)
        if verb == "stop":
            sub.add_argument("--keep-already-running", action="store_true",
                             help="a queue: hold new admissions but leave admitted workloads running (Hold, not HoldAndDrain)")
        sub.add_argument("-o", "--output", choices=("name", "yaml", "json"),
                         help="print the changed object (name: kind.group/NAME) instead of the `stopped` line")
        sub.add_argument("--dry-run", choices=DRY_RUN, default="none",
                         help="server: the API server checks the change without keeping it; client: send nothing")

    why = verbs.add_parser("why", help="why a job, AppWrapper or Workload waits and what would let it in")
    why.add_argument("target", metavar="KIND/NAME", help="e.g. job/train, appwrapper/sweep, workload/job-train-1a2b3")
    _connection_flags(why, all_namespaces=False)
    why.add_argument("-o", "--output", choices=("text", "yaml", "json"), default="text")
    why.add_argument("--fair-sharing", action="store_true", help="compute reasons as a controller with fair sharing on")

    completion = verbs.add_parser("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=SHELLS)
    return top


def parse(argv: list[str]) -> argparse.Namespace:
    """The arguments, with the filters that do not apply to the resource refused."""
    args = parser().parse_args(argv)
    if args.verb == "list":
        kind = LIST_RESOURCES[args.resource]
        for flag, value, kinds in (("--clusterqueue", args.clusterqueue, ("Workload", "LocalQueue")),
                                   ("--localqueue", args.localqueue, ("Workload",)),
                                   ("--status", args.status, ("Workload",)),
                                   ("--active", args.active, ("ClusterQueue",))):
            if value and kind not in kinds:
                raise BadInput(f"{flag} applies to {' and '.join(k.lower() + 's' for k in kinds)} only")
        if args.all_namespaces and args.namespace:
            raise BadInput("-n/--namespace and -A/--all-namespaces do not go together: give one")
    if args.verb == "why":
        args.kind, args.name = why_target(args.target)
    if args.verb == "stop" and args.keep_already_running and STOPPABLE[args.resource] == "Workload":
        raise BadInput("--keep-already-running applies to localqueues and clusterqueues only")
    return args


def leading_flags(words: list[str]) -> tuple[list[str], int]:
    """kubectl's global flags at the start of `words`, and where the verb is (len(words): none);
    -h/--help/--version stop the scan like a verb. BadInput for another flag, or a value missing."""
    flags: list[str] = []
    at = 0
    while at < len(words) and words[at].startswith("-") and words[at] not in ("-h", "--help", "--version"):
        word = words[at]
        if word in GLOBAL_FLAGS:
            if at + 1 == len(words):
                raise BadInput(f"flag needs an argument: {word}")
            flags += words[at:at + 2]
            at += 2
            continue
        if not (word in GLOBAL_SWITCHES or word.split("=")[0] in GLOBAL_FLAGS
                or (word.startswith("-n") and not word.startswith("--"))):
            raise BadInput(f"unknown flag before the command: {word} (there: {', '.join(GLOBAL_FLAGS)}, -A; "
                           f"the others after the command)")
        flags.append(word)
        at += 1
    return flags, at


def verb_first(words: list[str]) -> list[str]:
    """The words with kubectl's global flags given before the verb moved right after it, where the
    verb's own parser takes them (`-n team list wl` -> `list -n team wl`)."""
    flags, at = leading_flags(words)
    if at == len(words):
        raise BadInput("no command after the flags: give one, e.g. list workloads")
    return [words[at], *flags, *words[at + 1:]]


def connection(args: argparse.Namespace) -> Connection:
    return Connection(args.kubeconfig, args.context, args.namespace, bool(getattr(args, "all_namespaces", False)))


def why_target(target: str) -> tuple[str, str]:
    """`KIND/NAME` as (kind, name)."""
    word, _, name = target.partition("/")
    kind = WHY_KINDS.get(word.lower())
    if not name or "/" in name:
        raise BadInput(f"{target!r} is not KIND/NAME: give e.g. job/train, appwrapper/sweep or workload/NAME")
    if kind is None:
        raise BadInput(f"batchgate queues no kind {word!r}: give one of {', '.join(sorted({*QUEUED, 'Workload'}))} "
                       f"(e.g. job/train)")
    return kind, name
