"""Ordinary resources as the components of one AppWrapper (MLBatch's appwrapper-packager, done
with a parser): each document a component, in order; podSets declared for the kinds that hold
pods upstream does not infer, none for the kinds it does.

Pure. What the policy refuses is the gateway's to say (`batchgate wrap` asks its validation);
here only what stops an AppWrapper from being written at all, each error at its document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.api.errors import FieldError
from batchgate.api.objects import metadata
from batchgate.api.paths import format_steps
from batchgate.api.pod_templates import find_pod_templates
from batchgate.kinds.wrapped import pod_sets_to_declare


@dataclass(frozen=True)
class DocumentError:
    """What is wrong with document `index` (0-based) at `path` inside it."""

    index: int
    error: FieldError


@dataclass(frozen=True)
class Wrapping:
    name: str
    namespace: str | None
    queue: str


def wrap(documents: Sequence[Any], how: Wrapping) -> tuple[dict[str, Any] | None, list[DocumentError]]:
    """The AppWrapper holding `documents`, or the errors that stop it (one per document at most)."""
    components: list[dict[str, Any]] = []
    errors: list[DocumentError] = []
    for index, document in enumerate(documents):
        try:
            components.append(component(document))
        except FieldError as exc:
            errors.append(DocumentError(index, exc))
    if errors:
        return None, errors
    meta: dict[str, Any] = {"name": how.name}
    if how.namespace:
        meta["namespace"] = how.namespace
    if how.queue:
        meta["labels"] = {keys.QUEUE_NAME_LABEL: how.queue}
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "metadata": meta,
            "spec": {"components": components}}, []


def component(document: Any) -> dict[str, Any]:
    """One document as a component; FieldError (path inside the document) when it cannot be one."""
    if not (isinstance(document, dict) and isinstance(document.get("apiVersion"), str)
            and isinstance(document.get("kind"), str) and document["apiVersion"] and document["kind"]):
        raise FieldError("", "is not a Kubernetes object (it needs apiVersion and kind)")
    pod_sets = pod_sets_to_declare(document)
    if pod_sets is None:
        found = [format_steps(at) for at in find_pod_templates(document)]
        if found:
            raise FieldError(found[0], f"a {document['kind']} holds pods here, but wrap does not know how many it "
                                       "runs: write its AppWrapper component with podSets (path and replicas) by hand")
        pod_sets = ()
    out: dict[str, Any] = {"template": document}
    if pod_sets:
        out["podSets"] = [{"path": p.path, "replicas": p.replicas} for p in pod_sets]
    return out


def default_name(documents: Sequence[Any]) -> str:
    """The first document's name, for an AppWrapper the user did not name ("" when it has none)."""
    name = metadata(documents[0]).get("name") if documents else None
    return name if isinstance(name, str) else ""


def stated_namespace(documents: Sequence[Any]) -> str | None:
    """The first namespace a document names: where the user means the AppWrapper to go."""
    for document in documents:
        namespace = metadata(document).get("namespace")
        if isinstance(namespace, str) and namespace:
            return namespace
    return None
