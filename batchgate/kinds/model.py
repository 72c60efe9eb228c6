"""What batchgate knows about a kind: where the API serves it and where its pods come from.

A kind's pod sets are read once, by one function per kind, in two modes: strictly, where a bad
count or list is a FieldError naming the field (quota, gangs, AppWrapper validation), and
leniently, where it is taken as its default (mutations that run before validation reports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import quote

from batchgate.api.errors import FieldError, type_name
from batchgate.api.objects import Named, api_version_kind
from batchgate.api.paths import Location, format_steps, get_at
from batchgate.frozen import frozen


@dataclass(frozen=True)
class Resource(Named):
    """A kind as the API serves it: its group/version, plural and scope."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if subresource:
            base += f"/{subresource}"
        return base


@frozen
class PodSet:
    """Pods made from one template: where it is (relative to the object) and how many.

    `name` is Kueue's podSet name for the kind (`main`, `master`, `head`, a worker group...);
    `default` is the template the kind's controller uses when the object has none at `location`
    (a RayJob's submitter)."""

    location: Location
    replicas: int
    name: str = ""
    default: Mapping[str, Any] | None = None

    @property
    def path(self) -> str:
        """The AppWrapper podSet path: `template` + the location inside the component."""
        return format_steps(("template",) + self.location)


def _join(where: str, steps: Location) -> str:
    inner = format_steps(steps)
    return f"{where}.{inner}" if where and inner and not inner.startswith("[") else f"{where}{inner}"


class Reader:
    """Reads counts, lists and names out of an object, strictly or leniently (see module doc)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict

    def _bad(self, steps: Location, where: str, message: str) -> None:
        if self.strict:
            raise FieldError(_join(where, steps), message)

    def count(self, obj: Any, steps: Location, where: str, default: int = 1) -> int:
        value = get_at(obj, steps)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self._bad(steps, where, f"must be a non-negative integer, got {value!r}")
            return default
        return value

    def items(self, obj: Any, steps: Location, where: str) -> list[Any]:
        value = get_at(obj, steps)
        if value is None:
            return []
        if not isinstance(value, list):
            self._bad(steps, where, f"must be a list, got {type_name(value)}")
            return []
        return value

    def name(self, obj: Any, steps: Location, where: str) -> str:
        value = get_at(obj, steps)
        if not isinstance(value, str) or not value:
            self._bad(steps, where, "required")
            return ""
        return value


STRICT = Reader(strict=True)
LENIENT = Reader(strict=False)

PodSetsOf = Callable[[Any, str, Reader], Iterator[PodSet]]
"""A kind's pod sets: (object, field path of the object for messages, reader)."""

Outcome = tuple[str, str]
"""(Succeeded|Failed, message) of a finished job."""


def never_finishes(obj: Mapping[str, Any]) -> Outcome | None:
    return None


def never_active(obj: Mapping[str, Any]) -> bool:
    return False


@dataclass(frozen=True, kw_only=True)
class Kind(Resource):
    """One kind batchgate knows: its API coordinates and how to find its pods.

    `suspend_path` is set (non-empty) for the kinds batchgate queues (they get a Workload, a gang,
    a suspend); `upstream_infers` says whether the AppWrapper controller infers a wrapped object's podSets (else
    an AppWrapper must declare them); `queued_pod_sets` gives Kueue's podSets where they differ
    from the templates' (a RayJob's submitter); `finished` and `active` are Kueue's Finished and
    IsActive for a queued kind: the job's outcome once done, and whether its pods may still hold
    the quota."""

    read_pod_sets: PodSetsOf
    pods_at: Location
    """The field holding the kind's pod templates, named when it holds none."""
    suspend_path: Location = ()
    upstream_infers: bool = True
    queued_pod_sets: PodSetsOf | None = None
    finished: Callable[[Mapping[str, Any]], Outcome | None] = never_finishes
    active: Callable[[Mapping[str, Any]], bool] = never_active

    @property
    def queued(self) -> bool:
        return bool(self.suspend_path)

    def is_kind_of(self, obj: Any) -> bool:
        return api_version_kind(obj) == (self.api_version, self.kind)

    def pod_sets(self, obj: Any, where: str = "", reader: Reader = STRICT) -> tuple[PodSet, ...]:
        """The pods its controller makes from the object's templates; FieldError on bad shapes."""
        return tuple(self.read_pod_sets(obj, where, reader))

    def workload_pod_sets(self, obj: Any) -> tuple[PodSet, ...]:
        """Kueue's podSets for a queued object of this kind, in Kueue's order."""
        return tuple((self.queued_pod_sets or self.read_pod_sets)(obj, "", STRICT))

    def template_locations(self, obj: Any) -> tuple[Location, ...]:
        """Where the object's pod templates are, whatever its counts say (lenient)."""
        return tuple(ps.location for ps in self.read_pod_sets(obj, "", LENIENT))

    def is_suspended(self, obj: Any) -> bool:
        return self.queued and get_at(obj, self.suspend_path) is True
