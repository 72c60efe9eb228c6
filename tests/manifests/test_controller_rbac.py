"""The controller's roles let the AppWrapper lifecycle do its job with every default wrapped kind.

We test these aspects: create/get/delete on every kind of the policy's default
`allowedKinds.wrapped` in a team namespace (its ClusterRole with the team role onboarding binds
there; Secrets in the team role only, never cluster-wide) (read from the shipped manifests, resolved to REST resources as the
controller resolves them): a component is made, confirmed by name and deleted, never listed or
patched (tests/e2e/test_least_privilege.py measures that); forced pod deletion; and watching
Nodes for the NoExecute check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from batchgate.policy import DEFAULT_POLICY
from controller.adapters.kube import RESOURCES

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
