"""Every pod template of an object, where it sits, for the mutations that touch pod templates
(scheduler, gang label). Where each kind keeps its templates is the kind's own (batchgate/kinds);
AppWrapper components count at their podSet paths, and a Pod is its own template.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple

from batchgate.api.paths import Location, format_steps, get_at
from batchgate.kinds import kind_of


class TemplateAt(NamedTuple):
    """A pod template and where it sits in the object (steps from the object's root)."""

    location: Location
    template: dict[str, Any]

    @property
    def path(self) -> str:
        """The location as a field path, e.g. `spec.components[0].template.spec.template`."""
        return format_steps(self.location)


def pod_template_locations(obj: Any) -> list[TemplateAt]:
    """Every pod template of a registered kind, AppWrapper components included.

    Tolerant: parts that are malformed (templates that are not mappings, bad counts or podSet
    paths) are skipped here, because validation reports them with their field paths.
    """
    kind = kind_of(obj)
    out: list[TemplateAt] = []
    for location in kind.template_locations(obj) if kind is not None else ():
        template = get_at(obj, location) if location else obj
        if isinstance(template, dict):
            out.append(TemplateAt(location, template))
    return out


def find_pod_templates(obj: Any, at: Location = ()) -> Iterator[Location]:
    """Where an object of any kind holds pod templates (mappings whose `spec` lists `containers`)."""
    if isinstance(obj, dict):
        if isinstance(obj.get("spec"), dict) and isinstance(obj["spec"].get("containers"), list):
            yield at
        for key, value in obj.items():
            yield from find_pod_templates(value, at + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from find_pod_templates(value, at + (i,))
