"""`kubectl batchgate VERB` (the `kubectl-batchgate` program; also `batchgate VERB`): the I/O edge.

It reads the cluster through the `check` reader's client and lists, hands the objects to the pure
parts (tables, activation, why), and prints as kubectl does: output on stdout, `error: ...` on
stderr with exit status 1, `No resources found ...` on stderr for an empty table.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Mapping

import urllib3
import yaml

from batchgate import keys
from batchgate.api.objects import metadata
from batchgate.cli import COMMANDS
from batchgate.clock import Clock, SystemClock
from batchgate.command_line import BadInput
from batchgate.policy import FairSharing
from controller.adapters.cluster_reader import (
    ClusterReadError, api_error_line, connect, kubeconfig_namespace, list_objects, read_objects,
)
from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource
from controller.check.inventory import build_inventory
from controller.check.report import Report, check
from controller.decisions.leader_election import LEASE_NAME, LEASE_NAMESPACE, lease_expired
from controller.plugin import args as cli_args
from controller.plugin import tables
from controller.plugin.activation import activation_patch, done_line, patched
from controller.plugin.completion import Names, answer, completable, script
from controller.plugin.completion import complete as completion_of
from controller.plugin.why import render_text, why
from dashboard.views.queues import pending_rows


COMPLETION_TIMEOUT = 2.0  # seconds: a <TAB> must not hang on a cluster that does not answer
COMPLETION_LIMIT = 100  # names per list, as kueuectl asks


class PluginError(Exception):
    """What stops a verb, in one line (printed after `error: `)."""


def main(argv: list[str] | None = None, clock: Clock | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    try:
        text = _run(cli_args.parse(words), clock or SystemClock())
    except (BadInput, ClusterReadError, PluginError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


def complete(argv: list[str]) -> int:
    """`__complete WORDS`: the candidates for the last word, one a line, then cobra's directive;
    never an error line (the shell would print it over the command line)."""
    wanted = completion_of(cli_args.parser(), COMMANDS, argv)
    sys.stdout.write(answer(wanted, _names(wanted.names) if wanted.names is not None else []))
    return 0


def _names(wanted: Names) -> list[str]:
    """The object names to offer, from one bounded list call; none when the cluster cannot tell."""
    logging.disable(logging.CRITICAL)  # urllib3 warns of a retry on stderr
    res = RESOURCES[wanted.kind]
    conn = wanted.connection
    try:
        kube = connect(conn.kubeconfig, conn.context)
    except ClusterReadError:
        return []
    namespace = (conn.namespace or kubeconfig_namespace(conn.kubeconfig, conn.context)) if res.namespaced else None
    try:
        listing = kube.with_timeout(COMPLETION_TIMEOUT).list(res, namespace, limit=COMPLETION_LIMIT)
    except (ApiError, urllib3.exceptions.HTTPError, OSError):
        return []
    finally:
        kube.close()
    return completable(wanted, [item for item in listing.get("items") or [] if isinstance(item, dict)])


def kubectl_complete() -> int:
    """`kubectl_complete-batchgate WORDS`: kubectl's own completion asks a plugin this way (kubectl 1.26+)."""
    return complete(sys.argv[1:])


def list_(argv: list[str]) -> int:
    return main(["list", *argv])


def stop(argv: list[str]) -> int:
    return main(["stop", *argv])


def resume(argv: list[str]) -> int:
    return main(["resume", *argv])


def why_(argv: list[str]) -> int:
    return main(["why", *argv])


def completion(argv: list[str]) -> int:
    return main(["completion", *argv])


def _run(args: argparse.Namespace, clock: Clock) -> str:
    if args.verb == "completion":
        return script(args.shell)
    conn = cli_args.connection(args)
    namespace = conn.namespace or kubeconfig_namespace(conn.kubeconfig, conn.context)
    kube = connect(conn.kubeconfig, conn.context)
    try:
        if args.verb == "list":
            return _list(kube, args, None if conn.all_namespaces else namespace, clock)
        if args.verb == "why":
            return _why(kube, args, namespace, clock)
        return _activate(kube, args, namespace)
    finally:
        kube.close()


def _report(objects: list[dict[str, Any]], clock: Clock, fair_sharing: bool = False) -> Report:
    return check(build_inventory(objects), clock.now(), FairSharing(enable=fair_sharing))


def _list(kube: KubeClient, args: argparse.Namespace, namespace: str | None, clock: Clock) -> str:
    kind = cli_args.LIST_RESOURCES[args.resource]
    res = RESOURCES[kind]
    objects: list[Mapping[str, Any]] = list(list_objects(kube, res, namespace if res.namespaced else None, args.selector))
    now = clock.now()
    if kind == "Workload":
        objects = tables.filter_workloads(objects, args.localqueue, args.clusterqueue, frozenset(args.status))
    elif kind == "LocalQueue" and args.clusterqueue:
        objects = [lq for lq in objects if (lq.get("spec") or {}).get("clusterQueue") == args.clusterqueue]
    elif kind == "ClusterQueue" and args.active:
        objects = [cq for cq in objects if tables.cluster_queue_active(cq) == (args.active == "true")]
    if args.output in ("json", "yaml"):
        return tables.as_list(objects, args.output)
    if not objects:
        where = f" in {namespace} namespace" if res.namespaced and namespace else ""
        print(f"No resources found{where}.", file=sys.stderr)
        return ""
    if args.output == "name":
        return tables.names(objects, res.group)
    if kind == "Workload":
        everything = read_objects(kube)
        report = _report(everything, clock)
        pending = {row.name: row for row in pending_rows(report.pending)}
        table = tables.workload_table(objects, _local_queue_targets(everything), pending, now)
    elif kind == "LocalQueue":
        table = tables.local_queue_table(objects, now)
    elif kind == "ClusterQueue":
        table = tables.cluster_queue_table(objects, now)
    else:
        table = tables.resource_flavor_table(objects, now)
    spaces = [str(metadata(o).get("namespace", "")) for o in objects] if namespace is None and res.namespaced else None
    return tables.render(table, args.output == "wide", spaces)


def _no_controller(kube: KubeClient, clock: Clock) -> str:
    """Why no batchgate controller admits now, read off its Lease; "" when one holds it, or when
    the Lease cannot be read (a user may not read batchgate-system)."""
    where = f"Lease {LEASE_NAMESPACE}/{LEASE_NAME}"
    try:
        lease = kube.get(RESOURCES["Lease"], LEASE_NAME, LEASE_NAMESPACE)
    except ApiError as exc:
        return f"none has run here (no {where})" if exc.not_found else ""
    if lease_expired(lease.get("spec") or {}, clock.now()):
        return f"none holds its {where} now (it expired: the controller is down)"
    return ""


def _local_queue_targets(objects: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) -> the ClusterQueue it points at."""
    return {(str(metadata(lq).get("namespace")), str(metadata(lq).get("name"))):
            str((lq.get("spec") or {}).get("clusterQueue") or "") for lq in objects if lq["kind"] == "LocalQueue"}


def _server_error(exc: ApiError, res: Resource) -> PluginError:
    """kubectl's words for an answer from the server; an unserved kind says what is not installed."""
    if exc.not_found and exc.reason != "NotFound":  # the path itself is unknown: no such CRD
        return PluginError(api_error_line(exc, res))
    return PluginError(exc.message if exc.not_found else f"{exc.message} ({exc.status} {exc.reason})")


def _activate(kube: KubeClient, args: argparse.Namespace, namespace: str) -> str:
    kind = cli_args.STOPPABLE[args.resource]
    res = RESOURCES[kind]
    patch = activation_patch(kind, args.verb, getattr(args, "keep_already_running", False))
    where = namespace if res.namespaced else None
    try:  # as kueuectl: --dry-run=client reads the object and changes it here, server has it checked
        if args.dry_run == "client":
            changed = patched(kube.get(res, args.name, where), patch)
        else:
            changed = kube.patch(res, args.name, where, patch, dry_run=args.dry_run == "server")
    except ApiError as exc:
        raise _server_error(exc, res) from None
    if args.output == "name":
        return tables.names([{"kind": kind, **changed}], res.group)
    if args.output in ("json", "yaml"):
        return tables.as_object(changed, args.output)
    return done_line(kind, res.group, args.name, args.verb, args.dry_run) + "\n"


def _why(kube: KubeClient, args: argparse.Namespace, namespace: str, clock: Clock) -> str:
    kind, name = args.kind, args.name
    everything = read_objects(kube)  # first: on a cluster without batchgate this says so
    workloads = [o for o in everything if o["kind"] == "Workload" and metadata(o).get("namespace") == namespace]
    owner = ""
    if kind == "Workload":
        found = next((w for w in workloads if metadata(w).get("name") == name), None)
        if found is None:
            raise PluginError(f'workloads.{keys.KUEUE_GROUP} "{name}" not found in namespace {namespace}')
    else:
        res = RESOURCES[kind]
        try:
            uid = metadata(kube.get(res, name, namespace)).get("uid")
        except ApiError as exc:
            raise _server_error(exc, res) from None
        owner = f"{kind.lower()}/{name}"
        found = next((w for w in workloads if any(isinstance(r, Mapping) and r.get("uid") == uid
                                                  for r in metadata(w).get("ownerReferences") or [])), None)
        if found is None:
            raise PluginError(f"{owner} in namespace {namespace} has no Workload: it is not queued (no "
                              f"{keys.QUEUE_NAME_LABEL} label), or no batchgate controller runs to make one")
    report = _report(everything, clock, args.fair_sharing)
    spec = found.get("spec") or {}
    cluster_queue = (tables.admitted_cluster_queue(found)
                     or _local_queue_targets(everything).get((namespace, str(spec.get("queueName") or "")), ""))
    answer = why(report, f"{namespace}/{metadata(found).get('name')}", spec,
                 tables.workload_status(found).upper(), cluster_queue, owner, _no_controller(kube, clock))
    if args.output == "json":
        return json.dumps(answer.to_json(), indent=2) + "\n"
    if args.output == "yaml":
        return yaml.safe_dump(answer.to_json(), sort_keys=False)
    return render_text(answer)
