"""`batchgate migrate plan|apply`: reads the cluster, hands it to plan.py and steps.py, and carries
the steps out. The only I/O of a migration; every choice is made in the pure modules."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from batchgate.command_line import ArgumentParser, BadInput
from controller.adapters.cluster_reader import ClusterReadError, connect, list_objects
from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource
from controller.migrate.plan import (
    TAKEN_GROUPS, ClusterObjects, Finding, Handover, Plan, Ref, StorageMove, controller_namespaces, plan_migration,
    storage_version_hash,
)
from controller.migrate.rollback import plan_rollback
from controller.migrate.steps import (
    Blocked, HandOverCrd, MoveStorage, RemoveWebhook, Step, StopManager, describe, steps,
)

CRDS = Resource("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
WEBHOOKS = tuple(Resource(kind, "admissionregistration.k8s.io", "v1", plural, namespaced=False)
                 for kind, plural in (("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
                                      ("ValidatingWebhookConfiguration", "validatingwebhookconfigurations")))
DEPLOYMENTS = Resource("Deployment", "apps", "v1", "deployments")
PODS = Resource("Pod", "", "v1", "pods")
# every CRD batchgate serves, and the one version it serves
SERVED = {f"{r.plural}.{r.group}": r.version for r in RESOURCES.values() if r.group in TAKEN_GROUPS}
STOP_SECONDS = 120.0
NEXT = {"apply": "the old controllers are stopped: now install batchgate "
                 "(kubectl apply --server-side --force-conflicts -k manifests/default)",
        "rollback": "batchgate is stopped: now install Kueue and the AppWrapper controller again from their "
                    "release manifests (kubectl apply --server-side --force-conflicts -f ...)"}
PAGE = 500  # objects per list while rewriting: bounded memory on a large cluster


class MigrateError(Exception):
    """A step failed; one line naming the step and why."""


def read(kube: KubeClient) -> ClusterObjects:
    """What the plan needs; a kind the cluster does not serve is read as none of it."""
    def listed(res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
        try:
            return list_objects(kube, res, namespace)
        except ClusterReadError:
            if _served(kube, res):
                raise
            return []

    webhooks = [o for res in WEBHOOKS for o in listed(res)]
    namespaces = controller_namespaces(ClusterObjects(webhooks=webhooks))
    return ClusterObjects(
        crds=[c for c in listed(CRDS) if c["spec"]["group"] in TAKEN_GROUPS], webhooks=webhooks,
        deployments=[d for ns in sorted(namespaces) for d in listed(DEPLOYMENTS, ns)],
        cluster_queues=listed(RESOURCES["ClusterQueue"]), local_queues=listed(RESOURCES["LocalQueue"]),
        resource_flavors=listed(RESOURCES["ResourceFlavor"]), workloads=listed(RESOURCES["Workload"]),
        appwrappers=listed(RESOURCES["AppWrapper"]))


def _served(kube: KubeClient, res: Resource) -> bool:
    try:
        kube.request("GET", f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}")
    except ApiError as exc:
        if exc.not_found:
            return False
        raise
    return True


def render(plan: Plan) -> str:
    def section(title: str, items: tuple[Finding, ...]) -> list[str]:
        return [f"{title}:", *(f"  {f.ref}: {f.reason}" for f in items)] if items else [f"{title}: none"]
    lines = [*section("takes over", plan.take_over), *section("cannot take over as it is", plan.cannot),
             *section("blocks", plan.blockers)]
    if plan.ready:
        lines += ["apply will:", *(f"  {i + 1}. {describe(s)}" for i, s in enumerate(steps(plan)))]
    return "\n".join(lines) + "\n"


class Migration:
    """Carries out steps. `stop` stops one old manager and returns once it is gone (the default
    scales its Deployment to 0 and waits for its pods); a test bed without pods passes its own."""

    def __init__(self, kube: KubeClient, stop: Callable[[Ref], None] | None = None,
                 say: Callable[[str], None] = print) -> None:
        self.kube = kube
        self.stop = stop or self.scale_down
        self.say = say

    def run(self, plan: Plan) -> None:
        for step in steps(plan):
            self.say(describe(step))
            try:
                self.do(step)
            except ApiError as exc:
                raise MigrateError(f"{describe(step)}: {exc.status} {exc.reason}: {exc.message.splitlines()[0]}"
                                   ) from None

    def do(self, step: Step) -> None:
        match step:
            case MoveStorage(move):
                self.move_storage(move)
            case RemoveWebhook(ref):
                res = next(r for r in WEBHOOKS if r.kind == ref.kind)
                try:
                    self.kube.delete(res, ref.name)
                except ApiError as exc:
                    if not exc.not_found:
                        raise
            case StopManager(ref):
                self.stop(ref)
            case HandOverCrd(handover):
                self.hand_over(handover)

    def move_storage(self, move: StorageMove) -> None:
        """Storage version to `move.to`, every object written back (stored again in it), then
        storedVersions trimmed: the one order kube-apiserver accepts."""
        crd = self.kube.get(CRDS, move.crd)
        versions = crd["spec"]["versions"]
        if not all(any(v["name"] == name and v.get("served") for v in versions) for name in (move.to, move.via)):
            raise MigrateError(f"CustomResourceDefinition {move.crd} does not serve both {move.via} and {move.to}: "
                               f"its objects cannot be rewritten; install a release of the old controller that "
                               "serves both first")
        for version in versions:
            version["storage"] = version["name"] == move.to
        self.kube.replace(CRDS, crd)
        names = crd["spec"]["names"]
        res = Resource(names["kind"], crd["spec"]["group"], move.via, names["plural"],
                       namespaced=crd["spec"].get("scope") == "Namespaced")
        self._await_storage(res, storage_version_hash(res.group, move.to, res.kind))
        for obj in self._every(res):
            self._rewrite(res, obj)
        crd = self.kube.get(CRDS, move.crd)
        crd["status"]["storedVersions"] = [move.to]
        self.kube.replace(CRDS, crd, subresource="status")

    def hand_over(self, handover: Handover) -> None:
        """kube-apiserver accepts dropping a version only once storedVersions no longer names it."""
        crd = self.kube.get(CRDS, handover.crd)
        kept = [v for v in crd["spec"]["versions"] if v["name"] == handover.keep]
        if not kept:
            raise MigrateError(f"CustomResourceDefinition {handover.crd} does not serve {handover.keep}: "
                               "install a release of the old controller that serves it first")
        crd["spec"]["versions"] = [{**kept[0], "served": True, "storage": True}]
        crd["spec"]["conversion"] = {"strategy": "None"}
        self.kube.replace(CRDS, crd)

    def _await_storage(self, res: Resource, expected: str) -> None:
        """kube-apiserver switches a CRD's storage version a moment after the update returns; a
        write before that is stored in the old one. Its discovery shows when it has switched."""
        deadline = time.monotonic() + STOP_SECONDS
        while True:
            listed = self.kube.request("GET", f"/apis/{res.group}/{res.version}").get("resources") or []
            if any(r.get("name") == res.plural and r.get("storageVersionHash") == expected for r in listed):
                return
            if time.monotonic() > deadline:
                raise MigrateError(f"kube-apiserver did not switch {res.plural}.{res.group} to its new storage version "
                                   f"within {STOP_SECONDS:.0f} s: run apply again")
            time.sleep(0.2)

    def _every(self, res: Resource) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            page = self.kube.list(res, None, limit=PAGE, **({"continue": token} if token else {}))
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def _rewrite(self, res: Resource, obj: dict[str, Any]) -> None:
        """Write the object back unchanged: kube-apiserver stores it again, in the storage version."""
        meta = obj["metadata"]
        for _ in range(5):
            try:
                self.kube.replace(res, obj)
                return
            except ApiError as exc:
                if exc.not_found:
                    return
                if not exc.conflict:
                    raise
            obj = self.kube.get(res, meta["name"], meta.get("namespace"))
        raise MigrateError(f"{res.kind} {meta.get('namespace', '')}/{meta['name']} kept changing while being "
                           "rewritten: run apply again")

    def scale_down(self, ref: Ref) -> None:
        deployment = self.kube.patch(DEPLOYMENTS, ref.name, ref.namespace, {"spec": {"replicas": 0}})
        labels = (deployment["spec"].get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        deadline = time.monotonic() + STOP_SECONDS
        while self.kube.list(PODS, ref.namespace, labelSelector=selector).get("items"):
            if time.monotonic() > deadline:
                raise MigrateError(f"{ref} still has pods {STOP_SECONDS:.0f} s after scaling to 0: "
                                   f"kubectl get pods -n {ref.namespace} -l {selector}")
            time.sleep(1.0)


def parser() -> ArgumentParser:
    top = ArgumentParser(prog="batchgate migrate",
                         description="take a cluster over from Kueue and the AppWrapper controller (docs/install.md)")
    verbs = top.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, text in (("plan", "what batchgate will take over, what it cannot, what blocks it"),
                       ("apply", "stop the old controllers and hand their objects over, in an order that never "
                                 "leaves two admission controllers on the same objects"),
                       ("rollback", "remove batchgate's webhooks and stop its managers, so that the old "
                                    "controllers can be installed again")):
        sub = verbs.add_parser(verb, help=text)
        sub.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
        sub.add_argument("--context", help="kubeconfig context (default: the current one)")
    return top


def main(argv: list[str] | None = None) -> int:
    try:
        args: argparse.Namespace = parser().parse_args(sys.argv[1:] if argv is None else argv)
        kube = connect(args.kubeconfig, args.context)
        objects = read(kube)
        plan = plan_rollback(objects) if args.verb == "rollback" else plan_migration(objects, SERVED)
        if args.verb == "plan":
            sys.stdout.write(render(plan))
            return 0 if plan.ready else 1
        Migration(kube).run(plan)
    except (BadInput, ClusterReadError, Blocked, MigrateError) as exc:
        print(f"batchgate migrate: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, BadInput) else 1
    except ApiError as exc:
        print(f"batchgate migrate: {exc.status} {exc.reason}: {exc.message.splitlines()[0]}", file=sys.stderr)
        return 1
    print(NEXT[args.verb])
    return 0
