"""Where the controller's rights over a wrapped kind come from, and the fix users are told.

Most kinds are in the controller's ClusterRole (manifests/rbac/controller.yaml). Two sets are not:
- Secrets: each team namespace binds the ClusterRole TEAM_ROLE at onboarding (manifests/team/,
  docs/install.md "Teams"), so the controller reads no Secret outside the namespaces that queue work;
- JobSet and LeaderWorkerSet: the optional kustomize component OPTIONAL_COMPONENT grants them, for
  clusters that run those operators and list the kinds in `allowedKinds.wrapped`.
The gateway (refusing at submission) and the controller (refused by the API server) name the same fix.
"""

from __future__ import annotations

TEAM_ROLE = "batchgate-controller-team"  # manifests/rbac/controller-team.yaml
BOUND_PER_TEAM = frozenset({("v1", "Secret")})
"""(apiVersion, kind) of the components the controller may manage only where a team binds TEAM_ROLE."""
OPTIONAL_COMPONENT = "manifests/jobset-leaderworkerset"
IN_OPTIONAL_COMPONENT = frozenset({("jobset.x-k8s.io", "JobSet"), ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")})
"""(API group, kind) of the components the controller may manage only with OPTIONAL_COMPONENT installed."""


def rights_fix(api_version: str, kind: str, namespace: str) -> str | None:
    """The admin's fix when the controller may not manage a component of this kind here, if the
    product ships it (other kinds are in the controller's ClusterRole: an install problem)."""
    if (api_version, kind) in BOUND_PER_TEAM:
        return f"bind ClusterRole {TEAM_ROLE} in namespace {namespace}: see docs/install.md#teams"
    if (api_version.rpartition("/")[0], kind) in IN_OPTIONAL_COMPONENT:
        return (f"install the controller's rights over {kind}: add the kustomize component {OPTIONAL_COMPONENT} "
                "to the install overlay, see docs/install.md#jobset-and-leaderworkerset")
    return None
