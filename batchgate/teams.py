"""The controller's per-team rights: what onboarding a team binds, and the fix users are told.

The controller's rights over wrapped Secrets are not cluster-wide: each team namespace binds the
ClusterRole below at onboarding (manifests/team/, docs/install.md "Teams"). Both the gateway
(refusing at submission) and the controller (refused by the API server) name the same fix.
"""

from __future__ import annotations

TEAM_ROLE = "batchgate-controller-team"  # manifests/rbac/controller-team.yaml
BOUND_PER_TEAM = frozenset({("v1", "Secret")})
"""(apiVersion, kind) of the components the controller may manage only where a team binds TEAM_ROLE."""


def team_binding_fix(api_version: str, kind: str, namespace: str) -> str | None:
    """The admin's fix when the controller may not manage a component of this kind here, if binding
    the team role is it (other kinds are in the controller's ClusterRole: an install problem)."""
    if (api_version, kind) not in BOUND_PER_TEAM:
        return None
    return f"bind ClusterRole {TEAM_ROLE} in namespace {namespace}: see docs/install.md#teams"
