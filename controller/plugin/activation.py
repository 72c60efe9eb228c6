"""`stop` and `resume`: the merge patch each one sends, with kueuectl's semantics.

A Workload is stopped by `spec.active: false` (Kueue evicts it if admitted and admits it no more);
a queue by `spec.stopPolicy`: HoldAndDrain (evict what runs) or, with --keep-already-running, Hold
(admit nothing new, leave what runs). Resuming sets `active: true` or `stopPolicy: None`.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

Verb = Literal["stop", "resume"]


def activation_patch(kind: str, verb: Verb, keep_already_running: bool = False) -> dict[str, Any]:
    if kind == "Workload":
        return {"spec": {"active": verb == "resume"}}
    if kind in ("LocalQueue", "ClusterQueue"):
        if verb == "resume":
            return {"spec": {"stopPolicy": "None"}}
        return {"spec": {"stopPolicy": "Hold" if keep_already_running else "HoldAndDrain"}}
    raise ValueError(f"{kind} cannot be stopped or resumed")


def patched(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the patch would leave it (`--dry-run=client`: nothing is sent); the patches
    above set fields of `spec` only."""
    return {**obj, "spec": {**(obj.get("spec") or {}), **patch["spec"]}}


def done_line(kind: str, group: str, name: str, verb: Verb, dry_run: str = "none") -> str:
    """What kubectl prints after a change: `workload.kueue.x-k8s.io/train stopped`, with
    ` (server dry run)` or ` (client dry run)` when nothing was kept."""
    suffix = "" if dry_run == "none" else f" ({dry_run} dry run)"
    return f"{kind.lower()}.{group}/{name} {'stopped' if verb == 'stop' else 'resumed'}{suffix}"
