"""Server-side apply and managedFields: ownership, removal, conflicts worded as kube-apiserver does."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.apiserver.patching.apply import LAST_APPLIED, ApplyConflict, ApplyError, apply, record_update
from localcluster.apiserver.patching.fieldsets import from_fields_v1, to_fields_v1

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def configmap(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
            "data": data}


def deployment(*containers: dict[str, Any], replicas: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": list(containers)}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": spec}


def managed(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


def test_applying_a_new_object_records_one_apply_entry() -> None:
    obj = apply(None, configmap(a="1"), "kubectl", False, T0, "v1/ConfigMap")
    assert obj["data"] == {"a": "1"}
    assert obj["metadata"]["managedFields"] == [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                                                 "time": T0, "fieldsType": "FieldsV1",
                                                 "fieldsV1": {"f:data": {"f:a": {}}}}]


def test_list_items_are_owned_by_their_keys_and_ports_default_their_protocol() -> None:
    config = deployment({"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]})
    obj = apply(None, config, "kubectl", False, T0, "apps/v1/Deployment")
    containers = managed(obj)[("kubectl", "Apply")]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"app"}': {
        ".": {}, "f:image": {}, "f:name": {},
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}


def test_applying_again_removes_what_the_applier_no_longer_sends() -> None:
    first = apply(None, configmap(a="1", b="2"), "kubectl", False, T0, "v1/ConfigMap")
    second = apply(first, configmap(a="1"), "kubectl", False, T1, "v1/ConfigMap")
    assert second["data"] == {"a": "1"}
    assert managed(second) == {("kubectl", "Apply"): {"f:data": {"f:a": {}}}}


def test_applying_fewer_containers_and_env_vars_removes_the_dropped_ones() -> None:
    first = apply(None, deployment({"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"},
                                                                              {"name": "B", "value": "2"}]},
                                   {"name": "sidecar", "image": "proxy:1"}), "kubectl", False, T0,
                  "apps/v1/Deployment")
    second = apply(first, deployment({"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}),
                   "kubectl", False, T1, "apps/v1/Deployment")
    assert second["spec"]["template"]["spec"]["containers"] == [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}]


def test_a_field_another_manager_also_owns_is_kept_when_the_applier_drops_it() -> None:
    first = apply(None, configmap(a="1", b="2"), "kubectl", False, T0, "v1/ConfigMap")
    shared = apply(first, configmap(b="2"), "other", False, T0, "v1/ConfigMap")
    dropped = apply(shared, configmap(a="1"), "kubectl", False, T1, "v1/ConfigMap")
    assert dropped["data"] == {"a": "1", "b": "2"}


def test_the_same_value_from_two_appliers_is_shared_without_conflict() -> None:
    first = apply(None, configmap(a="1"), "alice", False, T0, "v1/ConfigMap")
    both = apply(first, configmap(a="1"), "bob", False, T1, "v1/ConfigMap")
    assert managed(both) == {("alice", "Apply"): {"f:data": {"f:a": {}}}, ("bob", "Apply"): {"f:data": {"f:a": {}}}}


def test_changing_a_field_another_applier_owns_is_a_conflict() -> None:
    first = apply(None, configmap(a="1"), "alice", False, T0, "v1/ConfigMap")
    with pytest.raises(ApplyConflict) as caught:
        apply(first, configmap(a="2"), "bob", False, T1, "v1/ConfigMap")
    assert caught.value.conflicts == [(".data.a", "alice")]
    assert caught.value.status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Conflict", "code": 409,
        "message": 'Apply failed with 1 conflict: conflict with "alice": .data.a',
        "details": {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "alice"',
                                "field": ".data.a"}]}}


def test_a_conflict_with_an_update_names_its_api_version_not_its_time() -> None:
    created = record_update(None, deployment({"name": "app", "image": "app:1"}, replicas=1), "kubectl-create", T0,
                            "apps/v1/Deployment")
    with pytest.raises(ApplyConflict) as caught:
        apply(created, deployment({"name": "app", "image": "app:2"}, replicas=3), "kubectl", False, T1,
              "apps/v1/Deployment")
    assert caught.value.status["message"] == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-create" using apps/v1:\n'
        '- .spec.replicas\n- .spec.template.spec.containers[name="app"].image')


def test_forcing_takes_the_fields_from_their_owner() -> None:
    first = apply(None, configmap(a="1", b="1"), "alice", False, T0, "v1/ConfigMap")
    forced = apply(first, configmap(a="2"), "bob", True, T1, "v1/ConfigMap")
    assert forced["data"] == {"a": "2", "b": "1"}
    assert managed(forced) == {("alice", "Apply"): {"f:data": {"f:b": {}}}, ("bob", "Apply"): {"f:data": {"f:a": {}}}}


def test_an_update_takes_the_fields_it_changes_and_the_applier_then_conflicts() -> None:
    applied = apply(None, deployment({"name": "app", "image": "app:1"}, replicas=2), "kubectl", False, T0,
                    "apps/v1/Deployment")
    scaled = copy.deepcopy(applied)
    scaled["spec"]["replicas"] = 5
    scaled = record_update(applied, scaled, "autoscaler", T1, "apps/v1/Deployment")
    assert managed(scaled)[("autoscaler", "Update")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in managed(scaled)[("kubectl", "Apply")]["f:spec"]
    with pytest.raises(ApplyConflict, match=r'conflict with "autoscaler" using apps/v1: \.spec\.replicas'):
        apply(scaled, deployment({"name": "app", "image": "app:1"}, replicas=2), "kubectl", False, T2,
              "apps/v1/Deployment")


def test_containers_added_by_others_survive_an_apply_that_does_not_mention_them() -> None:
    applied = apply(None, deployment({"name": "app", "image": "app:1"}), "kubectl", False, T0, "apps/v1/Deployment")
    injected = copy.deepcopy(applied)
    injected["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "proxy:1"})
    injected = record_update(applied, injected, "injector", T1, "apps/v1/Deployment")
    again = apply(injected, deployment({"name": "app", "image": "app:2"}), "kubectl", False, T2,
                  "apps/v1/Deployment")
    assert [c["image"] for c in again["spec"]["template"]["spec"]["containers"]] == ["app:2", "proxy:1"]


def test_applying_the_same_configuration_again_changes_nothing() -> None:
    first = apply(None, configmap(a="1"), "kubectl", False, T0, "v1/ConfigMap")
    again = apply(first, configmap(a="1"), "kubectl", False, T1, "v1/ConfigMap")
    assert again == first


def test_applying_status_through_the_subresource_owns_only_status() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 1}}
    live = apply(None, job, "kubectl", False, T0, "batch/v1/Job")
    status = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"ignored": "x"}},
              "spec": {"parallelism": 9}, "status": {"active": 1, "conditions": [{"type": "Suspended",
                                                                                  "status": "False"}]}}
    result = apply(live, status, "controller", False, T1, "batch/v1/Job", subresource="status")
    assert (result["spec"], result["status"]["active"], "labels" in result["metadata"]) == ({"parallelism": 1}, 1,
                                                                                           False)
    entry = result["metadata"]["managedFields"][-1]
    assert (entry["manager"], entry["subresource"]) == ("controller", "status")
    assert entry["fieldsV1"] == {"f:status": {"f:active": {}, "f:conditions": {}}}  # Job conditions are atomic


def client_side_applied(data: dict[str, str]) -> dict[str, Any]:
    """A ConfigMap as `kubectl apply` (client side) leaves it: its Update entry and annotation."""
    config = configmap(**data)
    obj = copy.deepcopy(config)
    obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(config) + "\n"}
    return record_update(None, obj, "kubectl-client-side-apply", T0, "v1/ConfigMap")


def test_kubectl_takes_over_what_its_client_side_apply_configured_without_conflict() -> None:
    result = apply(client_side_applied({"a": "1"}), configmap(a="2"), "kubectl", False, T1, "v1/ConfigMap")
    assert result["data"] == {"a": "2"}
    assert json.loads(result["metadata"]["annotations"][LAST_APPLIED])["data"] == {"a": "2"}


@pytest.mark.parametrize(
    ("manager", "live"),
    [
        pytest.param("other", client_side_applied({"a": "1"}), id="a manager other than kubectl"),
        pytest.param("kubectl", record_update(None, configmap(a="1"), "kubectl-create", T0, "v1/ConfigMap"),
                     id="an object never applied client side"),
    ],
)
def test_the_client_side_upgrade_is_only_for_kubectl_on_client_side_applied_objects(manager: str,
                                                                                    live: dict) -> None:
    with pytest.raises(ApplyConflict):
        apply(live, configmap(a="2"), manager, False, T1, "v1/ConfigMap")


@pytest.mark.parametrize(("applied", "edit", "manager", "config", "conflict"), [
    pytest.param({"a": "1"}, {"b": "x"}, "kubectl-edit", configmap(a="2", b="y"), ".data.b",
                 id="a field outside the last-applied configuration"),
    pytest.param({"a": "1", "b": "2"}, {"a": "injected"}, "keeper", configmap(a="1", b="3"), ".data.a",
                 id="a last-applied field another manager changed since (a caBundle injected after a client-side "
                    "install), as kube-apiserver's lastAppliedManager keeps only unchanged ones"),
])
def test_what_another_manager_wrote_after_a_client_side_apply_still_conflicts(
        applied: dict[str, str], edit: dict[str, str], manager: str, config: dict, conflict: str) -> None:
    live = client_side_applied(applied)
    edited = copy.deepcopy(live)
    edited["data"].update(edit)
    edited = record_update(live, edited, manager, T1, "v1/ConfigMap")
    with pytest.raises(ApplyConflict) as caught:
        apply(edited, config, "kubectl", False, T2, "v1/ConfigMap")
    assert caught.value.conflicts == [(conflict, manager)]


def test_an_update_records_new_maps_as_members() -> None:
    created = record_update(None, configmap(a="1"), "kubectl-create", T0, "v1/ConfigMap")
    assert managed(created) == {("kubectl-create", "Update"): {"f:data": {".": {}, "f:a": {}}}}


def test_an_update_that_changes_nothing_keeps_its_time() -> None:
    created = record_update(None, configmap(a="1"), "kubectl-create", T0, "v1/ConfigMap")
    same = record_update(created, copy.deepcopy(created), "kubectl-create", T1, "v1/ConfigMap")
    assert same["metadata"]["managedFields"][0]["time"] == T0


def test_removed_fields_leave_every_manager() -> None:
    first = apply(None, configmap(a="1", b="2"), "alice", False, T0, "v1/ConfigMap")
    trimmed = copy.deepcopy(first)
    del trimmed["data"]["b"]
    trimmed = record_update(first, trimmed, "editor", T1, "v1/ConfigMap")
    assert managed(trimmed) == {("alice", "Apply"): {"f:data": {"f:a": {}}}}


def test_custom_resources_keep_lists_atomic_and_objects_as_members() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"sizes": [1, 2], "owner": {"team": "a"}}}
    created = record_update(None, widget, "client", T0, "example.com/v1/Widget")
    assert managed(created)[("client", "Update")] == {
        "f:spec": {".": {}, "f:owner": {".": {}, "f:team": {}}, "f:sizes": {}}}


def test_an_update_whose_lists_cannot_be_keyed_keeps_the_old_managed_fields() -> None:
    created = record_update(None, deployment({"name": "app", "image": "app:1"}), "kubectl-create", T0,
                            "apps/v1/Deployment")
    broken = record_update(created, deployment({"image": "nameless"}), "editor", T1, "apps/v1/Deployment")
    assert broken["metadata"]["managedFields"] == created["metadata"]["managedFields"]
    assert broken["spec"]["template"]["spec"]["containers"] == [{"image": "nameless"}]


QUEUE_SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "flavors": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                           "quota": {"type": "integer"}}}},
    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    "order": {"type": "array", "items": {"type": "string"}}}}}}


def queue(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Queue", "metadata": {"name": "q"}, "spec": spec}


def test_job_conditions_are_atomic_for_apply_though_strategic_merge_keys_them() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    updated = record_update(None, job, "job-controller", T0, "batch/v1/Job", "status")
    assert managed(updated)[("job-controller", "Update")]["f:status"] == {"f:conditions": {}}


def test_custom_resource_lists_follow_their_schema_list_types() -> None:
    obj = apply(None, queue(flavors=[{"name": "gpu", "quota": 8}], tags=["a"], order=["x"]), "alice", False, T0,
                "example.com/v1/Queue", schema=QUEUE_SCHEMA)
    assert managed(obj)[("alice", "Apply")]["f:spec"] == {
        "f:flavors": {'k:{"name":"gpu"}': {".": {}, "f:name": {}, "f:quota": {}}},
        "f:tags": {'v:"a"': {}}, "f:order": {}}
    both = apply(obj, queue(flavors=[{"name": "cpu", "quota": 64}], tags=["b"]), "bob", False, T1,
                 "example.com/v1/Queue", schema=QUEUE_SCHEMA)
    assert both["spec"]["flavors"] == [{"name": "gpu", "quota": 8}, {"name": "cpu", "quota": 64}]
    assert both["spec"]["tags"] == ["a", "b"]
    with pytest.raises(ApplyConflict, match=r'\.spec\.flavors\[name="gpu"\]\.quota'):
        apply(both, queue(flavors=[{"name": "gpu", "quota": 4}]), "bob", False, T2, "example.com/v1/Queue",
              schema=QUEUE_SCHEMA)


def test_custom_resource_status_conditions_are_owned_by_type_for_updates() -> None:
    schema = {"type": "object", "properties": {"status": {"type": "object", "properties": {"conditions": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
        "items": {"type": "object"}}}}}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    updated = record_update(None, widget, "controller", T0, "example.com/v1/Widget", "status", schema)
    assert managed(updated)[("controller", "Update")]["f:status"]["f:conditions"] == {
        'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(deployment({"image": "x"}), 'omits key field "name"', id="a container without a name"),
        pytest.param(deployment({"name": "a"}, {"name": "a"}), "duplicate entries", id="two containers of one name"),
        pytest.param(deployment("app"), "expected an object", id="a container that is a string"),
    ],
)
def test_configurations_that_cannot_be_keyed_are_refused(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ApplyError, match=message):
        apply(None, config, "kubectl", False, T0, "apps/v1/Deployment")


def test_finalizers_are_a_set_owned_by_value() -> None:
    config = configmap(a="1")
    config["metadata"]["finalizers"] = ["example.com/keep"]
    obj = apply(None, config, "kubectl", False, T0, "v1/ConfigMap")
    assert managed(obj)[("kubectl", "Apply")]["f:metadata"] == {"f:finalizers": {'v:"example.com/keep"': {}}}


TOKENS = st.sampled_from(["f:a", "f:b", "f:c", 'k:{"name":"x"}', 'v:"y"'])


@given(st.sets(st.lists(TOKENS, min_size=1, max_size=4).map(tuple), max_size=8))
def test_fields_v1_round_trips_any_set_of_paths(paths: set[tuple[str, ...]]) -> None:
    assert from_fields_v1(to_fields_v1(paths)) == paths


KEYS = st.sampled_from(["containers", "name", "image", "env", "ports", "containerPort", "finalizers", "value"])
VALUES = st.recursive(st.none() | st.integers(0, 3) | st.sampled_from(["a", "b"]),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=15)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=3), st.dictionaries(KEYS, VALUES, max_size=3))
def test_any_pod_spec_applies_or_is_refused_with_apply_error(first: dict, second: dict) -> None:
    def pod(spec: dict) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}

    updated = record_update(None, pod(second), "b", T0, "v1/Pod")  # never raises
    try:
        live = apply(updated, pod(first), "a", True, T1, "v1/Pod")
    except ApplyError:
        return
    assert record_update(live, pod(second), "b", T2, "v1/Pod")["spec"] == pod(second)["spec"]


NAMES = st.sampled_from(["app", "sidecar", "init", "proxy"])
CONTAINERS = st.lists(st.fixed_dictionaries({"name": NAMES, "image": st.sampled_from(["a:1", "b:2"])},
                                            optional={"env": st.lists(st.fixed_dictionaries(
                                                {"name": st.sampled_from(["X", "Y"]), "value": st.sampled_from(
                                                    ["1", "2"])}), unique_by=lambda e: e["name"], max_size=2)}),
                      unique_by=lambda c: c["name"], min_size=1, max_size=3)


@settings(max_examples=100, deadline=None)
@given(CONTAINERS, CONTAINERS, CONTAINERS)
def test_what_an_applier_sends_is_what_it_gets_and_reapplying_changes_nothing(live: list, other: list,
                                                                             mine: list) -> None:
    start = apply(None, deployment(*live), "first", False, T0, "apps/v1/Deployment")
    start = apply(start, deployment(*other), "second", True, T1, "apps/v1/Deployment")
    result = apply(start, deployment(*mine), "mine", True, T2, "apps/v1/Deployment")
    by_name = {c["name"]: c for c in result["spec"]["template"]["spec"]["containers"]}
    for container in mine:
        got = by_name[container["name"]]
        assert got["image"] == container["image"]
        for env in container.get("env", []):
            assert env in got["env"]
    assert apply(result, deployment(*mine), "mine", False, T2, "apps/v1/Deployment") == result
