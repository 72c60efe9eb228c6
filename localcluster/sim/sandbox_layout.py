"""Which bind mounts a process pod's container gets, and in what order.

A container sees its image's files and, on top, its volumes at their mountPaths. A process pod
has no image of its own: it runs the host's interpreter, virtualenv and checkout, which may lie
anywhere, /tmp included. An emptyDir at /tmp (right for a read-only root, as the shipped
Deployments have) would then hide the program itself. In a container the image's files are never
hidden by a volume mounted elsewhere, so each of the image's paths that a volume's mountPath lies
above is mounted back on top of that volume. A volume mounted at an image path itself, or inside
one, still hides what is below it, as it would an image directory. Mounts go parents first (fewest path parts), as container
runtimes order them, so a volume never hides one mounted below it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class BindMount:
    source: str  # a host path
    target: str  # the path the container sees
    read_only: bool


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in posixpath.normpath(path).split("/") if p)


def _above(outer: str, inner: str) -> bool:
    """`outer` is a proper ancestor of `inner`."""
    o, i = _parts(outer), _parts(inner)
    return len(o) < len(i) and i[:len(o)] == o


def layout(volumes: Sequence[BindMount], image: Sequence[str]) -> list[BindMount]:
    """The volume mounts plus, mounted back read-only from itself, each outermost image path that a
    volume's mountPath lies above (and none names); parents first."""
    paths = {posixpath.normpath(p) for p in image}
    outermost = sorted(p for p in paths if not any(_above(q, p) for q in paths))
    targets = {_parts(v.target) for v in volumes}
    kept = [BindMount(p, p, True) for p in outermost
            if _parts(p) not in targets and any(_above(v.target, p) for v in volumes)]
    return sorted([*volumes, *kept], key=lambda m: len(_parts(m.target)))
