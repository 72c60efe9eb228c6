"""The layout of a distributed job: which pods play which role under which host name.

The workload phase computes it once and writes it as JSON on every pod template; the pod phase
reads it back from the pod, so a pod's env depends only on the pod (and never on a policy that
changed in between). Pods are grouped in slots: a run of pod indexes under one host prefix that
play one role (a single Indexed Job has two slots under one prefix: index 0 the master, the rest
workers).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from batchgate import keys

from .errors import FrameworkError
from .roles import ROLES, check_counts

LAYOUT_PATH = f"metadata.annotations[{keys.FRAMEWORK_LAYOUT_ANNOTATION}]"


@dataclass(frozen=True)
class Slot:
    """Pods `prefix<start>` .. `prefix<start+count-1>` in `subdomain`, all of one role."""

    role: str
    prefix: str
    start: int
    count: int
    subdomain: str

    def hostname(self, offset: int) -> str:
        return f"{self.prefix}{self.start + offset}"

    def host(self, offset: int) -> str:
        """The address peers use: `<hostname>.<subdomain>`, resolved through the pod's search path."""
        return f"{self.hostname(offset)}.{self.subdomain}"


@dataclass(frozen=True)
class Layout:
    """Everything the pod phase needs; slots are in rank order (role order, then workload order)."""

    framework: str
    service: str
    """The workload's headless Service (and the stem of its MPI hostfile ConfigMap)."""
    port: int | None
    nproc_per_node: str
    hostfile_path: str
    slots_per_host: int
    wait_image: str
    wait_timeout_seconds: int
    slots: tuple[Slot, ...]

    def count(self, role: str) -> int:
        return sum(s.count for s in self.slots if s.role == role)

    def hosts(self, role: str) -> list[str]:
        return [s.host(i) for s in self.slots if s.role == role for i in range(s.count)]

    @property
    def world_size(self) -> int:
        return sum(s.count for s in self.slots)

    def locate(self, prefix: str, index: int) -> "Place | None":
        """Where the pod with this host prefix and index sits, or None if the layout has no such pod."""
        rank = 0
        role_index: dict[str, int] = {}
        for slot in self.slots:
            before = role_index.get(slot.role, 0)
            if slot.prefix == prefix and slot.start <= index < slot.start + slot.count:
                offset = index - slot.start
                return Place(slot, offset, rank + offset, before + offset)
            rank += slot.count
            role_index[slot.role] = before + slot.count
        return None

    def to_json(self) -> str:
        doc = asdict(self)
        doc["slots"] = [asdict(s) for s in self.slots]
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class Place:
    """One pod's position: its slot, its offset in it, its global rank and its index in its role."""

    slot: Slot
    offset: int
    rank: int
    role_index: int

    @property
    def role(self) -> str:
        return self.slot.role

    @property
    def host(self) -> str:
        return self.slot.host(self.offset)


def parse_layout(raw: str) -> Layout:
    """Read the annotation back; anything malformed is an error, never a guessed rank."""
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as err:
        raise FrameworkError(LAYOUT_PATH, f"not valid JSON ({err.msg})") from None
    try:
        layout = _build(doc)
    except (KeyError, TypeError, ValueError) as err:
        raise FrameworkError(LAYOUT_PATH, f"malformed layout ({err})") from None
    if layout.framework not in ROLES:
        raise FrameworkError(LAYOUT_PATH, f"unknown framework {layout.framework!r}")
    for slot in layout.slots:
        if slot.role not in ROLES[layout.framework] or slot.count < 1 or slot.start < 0:
            raise FrameworkError(LAYOUT_PATH, f"malformed slot {asdict(slot)}")
    roles = ROLES[layout.framework]
    check_counts(layout.framework, {role: layout.count(role) for role in roles}, {r: r for r in roles}, LAYOUT_PATH)
    return layout


def _typed(value: Any, kind: type, name: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{name} must be {kind.__name__}")
    return value


def _build(doc: Any) -> Layout:
    if not isinstance(doc, dict):
        raise TypeError("layout must be an object")
    slots = tuple(
        Slot(
            role=_typed(s["role"], str, "role"),
            prefix=_typed(s["prefix"], str, "prefix"),
            start=_typed(s["start"], int, "start"),
            count=_typed(s["count"], int, "count"),
            subdomain=_typed(s["subdomain"], str, "subdomain"),
        )
        for s in _typed(doc["slots"], list, "slots")
    )
    port = doc["port"]
    return Layout(
        framework=_typed(doc["framework"], str, "framework"),
        service=_typed(doc["service"], str, "service"),
        port=None if port is None else _typed(port, int, "port"),
        nproc_per_node=_typed(doc["nproc_per_node"], str, "nproc_per_node"),
        hostfile_path=_typed(doc["hostfile_path"], str, "hostfile_path"),
        slots_per_host=_typed(doc["slots_per_host"], int, "slots_per_host"),
        wait_image=_typed(doc["wait_image"], str, "wait_image"),
        wait_timeout_seconds=_typed(doc["wait_timeout_seconds"], int, "wait_timeout_seconds"),
        slots=slots,
    )
