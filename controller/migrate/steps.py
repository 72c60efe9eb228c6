"""The order `batchgate migrate apply` works in, pure: a plan -> its steps.

Storage moves first, because only the old conversion webhook can read objects stored in a version
batchgate does not serve; then the old webhook configurations go, so nothing the old controllers
serve admits or mutates another object; then their managers stop, so no old reconciler writes
Workloads or AppWrappers; only then are the CRDs handed over (conversion off: the one version left
needs none) and batchgate installed. Objects are never recreated: an admitted Workload keeps its
admission and its pods, a pending one its creation time, hence its place in its queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.migrate.plan import Handover, Plan, Ref, StorageMove


@dataclass(frozen=True)
class MoveStorage:
    move: StorageMove


@dataclass(frozen=True)
class RemoveWebhook:
    ref: Ref


@dataclass(frozen=True)
class StopManager:
    ref: Ref


@dataclass(frozen=True)
class HandOverCrd:
    """Only batchgate's version left, conversion None: the install's CRD then applies cleanly."""

    handover: Handover


Step = MoveStorage | RemoveWebhook | StopManager | HandOverCrd


class Blocked(Exception):
    """apply refuses to start; the message names every blocker in one line."""


def steps(plan: Plan) -> list[Step]:
    if not plan.ready:
        raise Blocked(plan.blocked_line())
    return [*(MoveStorage(m) for m in plan.storage),
            *(RemoveWebhook(r) for r in plan.webhooks_to_remove),
            *(StopManager(r) for r in plan.managers_to_stop),
            *(HandOverCrd(h) for h in plan.handover)]


def describe(step: Step) -> str:
    """One line per step, as apply prints it before doing it."""
    match step:  # every Step case, so mypy checks the match is exhaustive
        case MoveStorage(move):
            return f"store every {move.crd} object in {move.to} (stored now: {', '.join(move.stored)})"
        case RemoveWebhook(ref):
            return f"remove {ref}"
        case StopManager(ref):
            return f"stop {ref} (scale to 0, wait for its pods to go)"
        case HandOverCrd(handover):
            return (f"hand CustomResourceDefinition {handover.crd} over to batchgate "
                    f"(only {handover.keep} served and stored, conversion None)")
