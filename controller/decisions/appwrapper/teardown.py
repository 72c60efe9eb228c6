"""The deletion protocol (docs/appwrapper.md, "Deletion"): how an AppWrapper takes its components down.

Every phase that removes components (Suspending, Resetting, Failed, Succeeded after its TTL, and
the deletion of the AppWrapper itself) takes the same steps: mark DeletingResources, delete what
is still there in the background, wait; once forcefulDeletionGracePeriod has passed since the
deletion began, force-delete the pods first and then the components. It is done when neither a
component nor a labelled pod is left.
"""

from __future__ import annotations

import datetime as _dt

from batchgate import keys
from batchgate.api.appwrapper_status import AppWrapperState
from batchgate.api.conditions import Condition
from controller.decisions.appwrapper.timing import Timing
from controller.decisions.appwrapper.transition import Action, DeleteComponents, DeletePods, Observed, Teardown

POLL_WHILE_DELETING = _dt.timedelta(seconds=5)
"""How soon to look again while components or pods are still going (upstream polls every 5 s)."""
MIN_POLL = _dt.timedelta(milliseconds=100)
"""The shortest wait between looks, so a grace period about to expire does not spin the queue."""


def maybe_present(aw: AppWrapperState) -> list[int]:
    """Components that may exist: created, or being created under a known name."""
    return [index for index, component in enumerate(aw.components)
            if component.deployed == "True" or (component.deployed == "Unknown" and component.name)]


def teardown(aw: AppWrapperState, observed: Observed, timing: Timing, now: _dt.datetime) -> Teardown:
    """The next deletion step, from what the last look at the cluster showed."""
    started = aw.since(keys.COND_DELETING_RESOURCES, "True", now)
    deleting = Condition(keys.COND_DELETING_RESOURCES, "True", keys.REASON_DELETION_INITIATED)
    components = list(aw.components)
    remaining: list[int] = []
    for index in maybe_present(aw):
        state = observed.components.get(index)
        if state is not None and not state.exists:
            components[index] = components[index].with_deployed("False", keys.REASON_COMPONENT_DELETED, now)
        else:
            remaining.append(index)
    expired = now > started + timing.forceful_deletion_grace
    if not remaining and observed.pods.present == 0:
        done = Condition(keys.COND_DELETING_RESOURCES, "False", keys.REASON_DELETION_COMPLETE)
        return Teardown(True, (done,), tuple(components))
    actions: list[Action] = []
    if expired and observed.pods.present:
        actions = [DeleteComponents(tuple(remaining))] if remaining else []
        actions.append(DeletePods())
    elif remaining:
        actions = [DeleteComponents(tuple(remaining), forced=expired)]
    wait = POLL_WHILE_DELETING if expired else min(POLL_WHILE_DELETING, started + timing.forceful_deletion_grace - now)
    return Teardown(False, (deleting,), tuple(components), tuple(actions), max(wait, MIN_POLL))
