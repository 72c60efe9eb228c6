"""`@frozen`: a dataclass the type checker holds immutable, built at run time as a plain one.

A `dataclass(frozen=True)` sets each field in its generated `__init__` through
`object.__setattr__`, three to four times the cost of a plain assignment (2.8 against 0.6-0.9 µs
for seven fields on the 2-core machine of docs/controller.md). The controller builds the values
of its hot paths by the hundred thousand in a run: a Requeue per head per cycle, a flavor
assignment per nomination, a Condition, a PodSet and a WorkloadInfo per Workload event. For
those classes immutability is a contract checked where it costs nothing: mypy (run by
`make test`) refuses an assignment to a field of a `@frozen` class (PEP 681's `frozen_default`),
and instances compare and hash by their fields, as frozen dataclasses do (`unsafe_hash`).
Classes whose immutability must also hold at run time against code outside the repository (the
policy, read by hooks) stay `dataclass(frozen=True)`.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def frozen(cls: type[T], /) -> type[T]:
    return dataclasses.dataclass(cls, unsafe_hash=True)
