"""The controller's roles let the AppWrapper lifecycle do its job with every default wrapped kind.

We test these aspects: create/get/delete on every kind of the policy's default
`allowedKinds.wrapped` in a team namespace (its ClusterRole with the team role onboarding binds
there; Secrets in the team role only, never cluster-wide) (read from the shipped manifests, resolved to REST resources as the
controller resolves them): a component is made, confirmed by name and deleted, never listed or
patched (tests/e2e/test_least_privilege.py measures that); forced pod deletion; watching
Nodes for the NoExecute check; and JobSets and LeaderWorkerSets, granted by the optional component
the refusals name (manifests/jobset-leaderworkerset) and by nothing else.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchgate import kinds
from batchgate.controller_rights import IN_OPTIONAL_COMPONENT, OPTIONAL_COMPONENT
from batchgate.policy import DEFAULT_POLICY
from controller.adapters.kube import RESOURCES
from demo.kubectl import KUBECTL

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE_VERBS = {"create", "get", "delete"}


def role_verbs(file: str, name: str) -> dict[tuple[str, str], set[str]]:
    docs = yaml.safe_load_all((ROOT / "manifests" / "rbac" / file).read_text())
    (role,) = [d for d in docs if d and d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    verbs: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs.setdefault((group, resource), set()).update(rule["verbs"])
    return verbs


def cluster_wide() -> dict[tuple[str, str], set[str]]:
    return role_verbs("controller.yaml", "batchgate-controller")


def granted() -> dict[tuple[str, str], set[str]]:
    """In a team namespace: the ClusterRole and the team role onboarding binds there (manifests/team/)."""
    verbs = cluster_wide()
    for key, more in role_verbs("controller-team.yaml", "batchgate-controller-team").items():
        verbs.setdefault(key, set()).update(more)
    return verbs


@pytest.mark.parametrize("kind", DEFAULT_POLICY.allowed_kinds.wrapped)
def test_the_controller_may_manage_every_default_wrapped_kind(kind: str) -> None:
    name, _, group = kind.partition(".")
    resource = RESOURCES[name]
    assert resource.group == group, f"{kind} resolves to the wrong group"
    missing = LIFECYCLE_VERBS - granted().get((group, resource.plural), set())
    assert not missing, f"controller roles lack {sorted(missing)} on {resource.plural}.{group} in a team namespace"


@pytest.mark.parametrize("kind", kinds.QUEUED.values(), ids=lambda k: k.qualified)
def test_the_controller_may_watch_and_suspend_every_queued_kind(kind: kinds.Kind) -> None:
    """A kind added to the registry (docs/kinds.md) needs its rights in the controller's role too:
    it is watched for its Workload, and un-suspended and suspended by update."""
    missing = {"list", "watch", "update"} - cluster_wide().get((kind.group, kind.plural), set())
    assert not missing, f"the controller's ClusterRole lacks {sorted(missing)} on {kind.plural}.{kind.group}"


def test_the_controller_holds_no_right_over_secrets_cluster_wide() -> None:
    assert ("", "secrets") not in cluster_wide(), "Secrets belong in batchgate-controller-team, bound per team"


@pytest.mark.parametrize("resource, verbs", [
    pytest.param("pods", {"delete", "list", "watch"}, id="pods may be listed, watched and force-deleted"),
    pytest.param("nodes", {"list", "watch"}, id="nodes may be watched for the NoExecute check"),
])
def test_the_controller_may_reach_pods_and_nodes(resource: str, verbs: set[str]) -> None:
    assert verbs <= granted().get(("", resource), set())


@pytest.mark.parametrize("group, resource, verbs", [
    pytest.param("", "pods/binding", {"create"}, id="the gang scheduler may bind pods"),
    pytest.param("", "pods/status", {"patch"}, id="the gang scheduler may mark pods Unschedulable"),
    pytest.param("", "pods", {"get", "list", "watch"}, id="the gang scheduler may read every pod"),
    pytest.param("scheduling.x-k8s.io", "podgroups", {"create", "patch", "list", "watch"},
                 id="the controller may create and resize PodGroups"),
    pytest.param("scheduling.x-k8s.io", "podgroups/status", {"patch"}, id="the controller may write PodGroup status"),
    pytest.param("", "events", {"create", "patch"}, id="the controller may record Scheduled and FailedScheduling"),
])
def test_the_gang_scheduler_may_do_its_job(group: str, resource: str, verbs: set[str]) -> None:
    assert verbs <= granted().get((group, resource), set())


OPTIONAL_KINDS = {("jobset.x-k8s.io", "jobsets"), ("leaderworkerset.x-k8s.io", "leaderworkersets")}
CONTROLLER_ACCOUNT = {"kind": "ServiceAccount", "name": "batchgate-controller", "namespace": "batchgate-system"}


def built(overlay: Path, tmp_path: Path, *components: str) -> list[dict[str, Any]]:
    """An admin's overlay of `overlay` with `components` added, as `kubectl kustomize` builds it."""
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": [os.path.relpath(overlay, tmp_path)],
                     "components": [os.path.relpath(ROOT / "manifests" / c, tmp_path) for c in components]}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    out = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def cluster_rights(docs: list[dict[str, Any]], subject: dict[str, str] | None = None,
                   role: str | None = None) -> dict[tuple[str, str], set[str]]:
    """Verbs per (group, resource) of the ClusterRoles bound to `subject` cluster-wide, or of `role`."""
    names = {role} if role else {b["roleRef"]["name"] for b in docs if b["kind"] == "ClusterRoleBinding"
                                 and subject in b.get("subjects", [])}
    verbs: dict[tuple[str, str], set[str]] = {}
    for doc in docs:
        if doc["kind"] == "ClusterRole" and doc["metadata"]["name"] in names:
            for rule in doc["rules"]:
                for key in ((g, r) for g in rule["apiGroups"] for r in rule["resources"]):
                    verbs.setdefault(key, set()).update(rule["verbs"])
    return verbs


def test_the_install_alone_grants_nothing_over_jobsets_and_leaderworkersets(tmp_path: Path) -> None:
    docs = built(ROOT / "manifests" / "default", tmp_path)
    assert not OPTIONAL_KINDS & set(cluster_rights(docs, CONTROLLER_ACCOUNT))
    assert not OPTIONAL_KINDS & set(cluster_rights(docs, role="batchgate-team"))


def test_the_optional_component_lets_the_controller_manage_and_teams_submit_jobsets_and_leaderworkersets(
        tmp_path: Path) -> None:
    """The component the refusals name (batchgate/controller_rights.py) grants exactly the lifecycle
    verbs: made, checked by name, deleted; never listed or watched."""
    assert OPTIONAL_COMPONENT.startswith("manifests/")
    docs = built(ROOT / "manifests" / "default", tmp_path, OPTIONAL_COMPONENT.removeprefix("manifests/"))
    controller = cluster_rights(docs, CONTROLLER_ACCOUNT)
    assert {key: controller.get(key) for key in OPTIONAL_KINDS} == {key: LIFECYCLE_VERBS for key in OPTIONAL_KINDS}
    team = cluster_rights(docs, role="batchgate-team")
    assert all("create" in team.get(key, set()) for key in OPTIONAL_KINDS)
    assert {(group, kind) for group, kind in IN_OPTIONAL_COMPONENT} == {
        ("jobset.x-k8s.io", "JobSet"), ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")}
