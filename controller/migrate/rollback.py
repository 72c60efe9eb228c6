"""`batchgate migrate rollback`, pure: back to the previous controllers, in the mirror order of apply.

batchgate's webhooks go first, then its managers stop (scaled to 0, pods gone), and only then may
the old controllers be installed again from their own release manifests, which bring back their
CRD versions, conversion webhooks, webhook configurations and managers. Re-adding a version to a
CRD is always accepted (objects stored in batchgate's version stay readable: it stays served), so
the reverse of apply's storage move needs no step here. Objects are untouched, as in apply: the old
Kueue finds admitted Workloads admitted and pending ones in their order.
"""

from __future__ import annotations

from controller.migrate.plan import (
    ClusterObjects, Finding, Plan, Ref, batchgate_managers, batchgate_webhooks, old_controllers,
)


def plan_rollback(objects: ClusterObjects) -> Plan:
    """`objects.deployments` must hold those in batchgate's namespace; blockers as the plan's."""
    old, _ = old_controllers(objects)
    webhooks, managers = batchgate_webhooks(objects), batchgate_managers(objects)
    blockers = []
    if not webhooks and not managers:
        blockers.append(Finding(Ref("cluster", "-"), "batchgate is not installed: nothing to roll back"))
    blockers += [Finding(r, "an old controller's webhook is already back beside batchgate's: delete it, "
                            "roll back, then install the old controllers again") for r in old if webhooks]
    return Plan(blockers=tuple(blockers), webhooks_to_remove=webhooks, managers_to_stop=managers)
