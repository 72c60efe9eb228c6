"""What OwnerReferencesPermissionEnforcement asks of a writer (kubernetes/kubernetes
plugin/pkg/admission/gc/gc_admission.go and its gc_admission_test.go cases)."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.rbac.owner_references import required
from localcluster.rbac.rules import Attributes

WRITE = Attributes("update", api_group="", resource="configmaps", namespace="ns", name="cm")
DELETE_IT = Attributes("delete", api_group="", resource="configmaps", namespace="ns", name="cm")


def finalize(group: str, plural: str, name: str) -> Attributes:
    return Attributes("update", api_group=group, resource=plural, subresource="finalizers", namespace="ns", name=name)


def ref(uid: str, block: bool | None = None, kind: str = "Job", api_version: str = "batch/v1") -> dict[str, Any]:
    made: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": f"owner-{uid}", "uid": uid}
    if block is not None:
        made["blockOwnerDeletion"] = block
    return made


def obj(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "cm", "namespace": "ns", "ownerReferences": list(refs)}}


def served(api_version: str, kind: str) -> list[tuple[str, str]]:
    return {("batch/v1", "Job"): [("batch", "jobs")]}.get((api_version, kind), [])


@pytest.mark.parametrize(("new", "old", "needs"), [
    pytest.param(obj(), None, [], id="a create without owners needs nothing"),
    pytest.param(obj(ref("a")), None, [DELETE_IT], id="a create with an owner needs delete on the object"),
    pytest.param(obj(ref("a", False)), obj(ref("a", False)), [], id="an update that keeps the owners needs nothing"),
    pytest.param(obj(ref("a", True)), None, [DELETE_IT, finalize("batch", "jobs", "owner-a")],
                 id="a blocking owner needs update on its finalizers, by name"),
    pytest.param(obj(ref("a", True)), obj(ref("a", False)), [DELETE_IT, finalize("batch", "jobs", "owner-a")],
                 id="flipping blockOwnerDeletion to true is a new blocking owner"),
    pytest.param(obj(ref("a", True), ref("b")), obj(ref("a", True)), [DELETE_IT],
                 id="an owner already blocking is not asked about again"),
    pytest.param(obj(), obj(ref("a", True)), [DELETE_IT], id="removing an owner needs delete on the object"),
])
def test_what_a_write_must_be_allowed(new: dict[str, Any], old: dict[str, Any] | None,
                                      needs: list[Attributes]) -> None:
    assert [attrs for attrs, _ in required(WRITE, new, old, served)] == needs


def test_an_owner_kind_the_server_does_not_serve_is_refused_whatever_one_holds() -> None:
    needs = required(WRITE, obj(ref("a", True, kind="Gadget", api_version="example.com/v1")), None, served)
    assert needs[-1] == (None, 'cannot set blockOwnerDeletion in this case because cannot find RESTMapping for '
                               'APIVersion example.com/v1 Kind Gadget: no matches for kind "Gadget"')


def test_pod_status_writes_are_exempt_as_upstream() -> None:
    status = Attributes("update", api_group="", resource="pods", subresource="status", namespace="ns", name="p")
    assert required(status, obj(ref("a", True)), None, served) == []
