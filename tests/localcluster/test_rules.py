"""Pure rules of the stand-in API server: selectors, names, lifecycle strategy, CRD schemas, tables."""

from __future__ import annotations

import datetime as dt
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localcluster import crd_rules, crd_schema, lifecycle
from localcluster.apiserver import shapes, tables
from localcluster.apiserver.codec import parse_bool
from localcluster.errors import ApiError
from localcluster.apiserver.patches import merge_patch
from localcluster.resources import Registry, ResourceType
from localcluster.apiserver.selectors import parse_field_selector, parse_label_selector
from localcluster.store import HISTORY_PER_RESOURCE, Store, TooOld

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
REGISTRY = Registry()


def rt(group: str, version: str, plural: str) -> ResourceType:
    found = REGISTRY.lookup(group, version, plural)
    assert found is not None
    return found


CONFIGMAPS, JOBS, PODS, NAMESPACES = (rt("", "v1", "configmaps"), rt("batch", "v1", "jobs"), rt("", "v1", "pods"),
                                      rt("", "v1", "namespaces"))


def labelled(**labels: str) -> dict:
    return {"metadata": {"name": "x", "labels": labels}}


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    pytest.param("app=web", {"app": "web"}, True, id="equality matches the same value"),
    pytest.param("app==web", {"app": "db"}, False, id="double equals rejects another value"),
    pytest.param("app!=web", {}, True, id="inequality matches a missing label"),
    pytest.param("tier in (a,b)", {"tier": "b"}, True, id="set membership matches a listed value"),
    pytest.param("tier notin (a,b)", {"tier": "a"}, False, id="set exclusion rejects a listed value"),
    pytest.param("app", {"app": ""}, True, id="existence matches an empty value"),
    pytest.param("!app", {"app": "x"}, False, id="non-existence rejects a present label"),
    pytest.param("app=web,tier=db", {"app": "web", "tier": "db"}, True, id="all requirements must hold"),
    pytest.param("app=web,tier=db", {"app": "web"}, False, id="one failing requirement rejects"),
])
def test_label_selectors_match_as_kubectl_means_them(selector: str, labels: dict, expected: bool) -> None:
    match = parse_label_selector(selector)
    assert match is not None and match(labelled(**labels)) is expected


@pytest.mark.parametrize("selector", [
    pytest.param("app in a", id="a set without parentheses"),
    pytest.param("app=web,", id="a trailing comma"),
    pytest.param("app=we b", id="a value with a space"),
    pytest.param("app=-bad-", id="a value that is not a label value"),
])
def test_malformed_label_selectors_are_bad_requests(selector: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_label_selector(selector)
    assert err.value.code == 400


def test_field_selectors_read_pod_fields_and_reject_unknown_ones() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    match = parse_field_selector("spec.nodeName=n1,status.phase!=Pending,metadata.namespace=ns", "", "pods")
    assert match is not None and match(pod)
    with pytest.raises(ApiError) as err:
        parse_field_selector("spec.nodeName=n1", "", "configmaps")
    assert err.value.code == 400 and "not a known field selector" in err.value.message


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("true", True, id="true"), pytest.param("1", True, id="one"), pytest.param("True", True, id="title true"),
    pytest.param("0", False, id="zero"), pytest.param("False", False, id="title false"),
    pytest.param("FALSE", False, id="false in capitals"), pytest.param(None, False, id="absent"),
    pytest.param("", True, id="present without a value"), pytest.param("maybe", True, id="any other word"),
    pytest.param("f", True, id="f, which Go's ParseBool would take for false"),
])
def test_query_booleans_convert_as_apimachinery_does(text: str | None, expected: bool) -> None:
    assert parse_bool(text) is expected


def created(resource: ResourceType, obj: dict) -> dict:
    return lifecycle.prepare_create(resource, lifecycle.check_type(resource, obj), NOW)


@pytest.mark.parametrize(("resource", "name", "field"), [
    pytest.param(CONFIGMAPS, "Bad_Name", "metadata.name", id="a configmap name must be a DNS subdomain"),
    pytest.param(NAMESPACES, "a.b", "metadata.name", id="a namespace name must be a DNS label"),
    pytest.param(CONFIGMAPS, "x" * 254, "metadata.name", id="a subdomain is at most 253 characters"),
])
def test_names_are_validated_per_kind(resource: ResourceType, name: str, field: str) -> None:
    obj = {"metadata": {"name": name, "namespace": "default"}}
    with pytest.raises(ApiError) as err:
        created(resource, obj)
    assert err.value.code == 422 and err.value.details["causes"][0]["field"] == field


@pytest.mark.parametrize(("job", "field"), [
    pytest.param({"spec": {}}, "spec.template.spec.containers", id="a job without a template"),
    pytest.param({"spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "i"}]}}}},
                 "spec.template.spec.restartPolicy", id="a job whose pods restart always"),
    pytest.param({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}}},
                 "spec.template.spec.containers[0].image", id="a container without an image"),
    pytest.param({"spec": {"completionMode": "Indexed", "parallelism": 2,
                           "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}},
                 "spec.completions", id="an indexed job without completions"),
])
def test_invalid_jobs_are_rejected_with_the_field_path(job: dict, field: str) -> None:
    job["metadata"] = {"name": "j", "namespace": "default"}
    with pytest.raises(ApiError) as err:
        created(JOBS, job)
    assert err.value.code == 422
    assert field in [c["field"] for c in err.value.details["causes"]]


def test_a_created_job_gets_defaults_and_its_controller_uid_selector() -> None:
    job = created(JOBS, {"metadata": {"name": "j", "namespace": "default"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "j"
    assert (job["spec"]["parallelism"], job["spec"]["completions"], job["spec"]["backoffLimit"]) == (1, 1, 6)
    assert job["metadata"]["generation"] == 1 and job["status"] == {}


def pod_template(restart: str) -> dict:
    return {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": restart,
                                                         "containers": [{"name": "c", "image": "i"}]}}


REPORTED = {"replicas": 3, "capacity": {"cpu": "4"}}


@pytest.mark.parametrize(("resource", "spec", "kept"), [
    pytest.param(rt("apps", "v1", "deployments"), {"selector": {"matchLabels": {"a": "b"}}, "template": pod_template("Always")},
                 False, id="a deployment's status is the controller's to write"),
    pytest.param(JOBS, {"template": pod_template("Never")}, False, id="a job starts with an empty status"),
    pytest.param(rt("", "v1", "nodes"), {}, True, id="a node keeps the status its kubelet registers"),
])
def test_create_drops_status_unless_the_creator_owns_it(resource: ResourceType, spec: dict, kept: bool) -> None:
    obj = {"metadata": {"name": "x", "namespace": "default"}, "spec": spec, "status": dict(REPORTED)}
    stored = created(resource, obj)
    assert (stored.get("status") == REPORTED) is kept


def test_generation_moves_on_spec_changes_only() -> None:
    job = created(JOBS, {"metadata": {"name": "j", "namespace": "default"}, "spec": {"suspend": True, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    job["metadata"]["resourceVersion"] = "5"
    relabelled = {**job, "metadata": {**job["metadata"], "labels": {"a": "b"}}}
    assert lifecycle.prepare_update(JOBS, job, relabelled)["metadata"]["generation"] == 1
    resumed = {**job, "spec": {**job["spec"], "suspend": False}}
    assert lifecycle.prepare_update(JOBS, job, resumed)["metadata"]["generation"] == 2


def test_a_status_write_changes_nothing_but_status() -> None:
    job = created(JOBS, {"metadata": {"name": "j", "namespace": "default"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    job["metadata"]["resourceVersion"] = "5"
    sent = {**job, "metadata": {**job["metadata"], "labels": {"sneaky": "x"}}, "spec": {}, "status": {"active": 1}}
    stored = lifecycle.prepare_update(JOBS, job, sent, "status")
    assert stored["status"] == {"active": 1} and stored["spec"] == job["spec"] and "labels" not in stored["metadata"]


def test_a_stale_resource_version_is_a_conflict() -> None:
    cm = created(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "default"}})
    cm["metadata"]["resourceVersion"] = "7"
    stale = {**cm, "metadata": {**cm["metadata"], "resourceVersion": "6"}}
    with pytest.raises(ApiError) as err:
        lifecycle.prepare_update(CONFIGMAPS, cm, stale)
    assert (err.value.code, err.value.reason) == (409, "Conflict")


@pytest.mark.parametrize(("policy", "finalizers", "removed"), [
    pytest.param("Background", [], True, id="background deletion removes at once"),
    pytest.param("Orphan", [], False, id="orphan deletion holds the object with the orphan finalizer"),
    pytest.param("Foreground", [], False, id="foreground deletion holds the object for its dependents"),
    pytest.param("Background", ["example.com/keep"], False, id="a finalizer holds the object"),
])
def test_delete_plans(policy: str, finalizers: list[str], removed: bool) -> None:
    cm = created(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "default", "finalizers": finalizers}})
    plan = lifecycle.plan_delete(CONFIGMAPS, cm, {"propagationPolicy": policy}, NOW)
    assert plan.remove is removed
    if not removed:
        assert plan.obj["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"


def test_jobs_deleted_without_a_policy_orphan_their_pods_like_the_batch_v1_api() -> None:
    job = created(JOBS, {"metadata": {"name": "j", "namespace": "default"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    plan = lifecycle.plan_delete(JOBS, job, {}, NOW)
    assert plan.obj["metadata"]["finalizers"] == ["orphan"]


WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string", "pattern": "^[a-z]+$"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "port": {"x-kubernetes-int-or-string": True},
        }},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}
WIDGETS = ResourceType("example.com", "v1", "widgets", "Widget", True, builtin=False, subresources=("status",),
                       schema=WIDGET_SCHEMA, storage_version="v1")


@pytest.mark.parametrize(("spec", "field", "message"), [
    pytest.param({}, "spec.size", "Required value", id="a missing required field"),
    pytest.param({"size": "big"}, "spec.size", 'must be of type integer: "string"', id="a wrong type"),
    pytest.param({"size": 11}, "spec.size", "less than or equal to 10", id="a value above the maximum"),
    pytest.param({"size": 1, "color": "green"}, "spec.color", 'supported values: "red", "blue"', id="a value outside the enum"),
    pytest.param({"size": 1, "items": [{"n": "ok"}, {"n": "NO"}]}, "spec.items[1].n", "should match", id="a list item failing its pattern"),
    pytest.param({"size": 1, "port": 1.5}, "spec.port", "integer,string", id="an int-or-string that is neither"),
])
def test_custom_resources_are_validated_with_precise_paths(spec: dict, field: str, message: str) -> None:
    errors = crd_schema.validate_custom(WIDGETS, {"spec": spec}, None)
    assert any(e.field == field and message in e.message() for e in errors), [str(e) for e in errors]


def test_custom_resources_get_defaults_and_lose_undeclared_fields() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": {"size": 2, "bogus": 1, "free": {"anything": {"goes": True}}}, "extra": 1}
    pruned = crd_schema.decode_custom(WIDGETS, obj)
    assert sorted(pruned) == ["extra", "spec.bogus"]
    assert obj["spec"] == {"size": 2, "color": "red", "free": {"anything": {"goes": True}}}
    assert obj["metadata"] == {"name": "w"}


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(5, "5s", id="seconds under two minutes"), pytest.param(150, "2m30s", id="minutes and seconds"),
    pytest.param(3600, "60m", id="minutes under three hours"), pytest.param(5 * 3600 + 60, "5h1m", id="hours and minutes"),
    pytest.param(30 * 3600, "30h", id="hours under two days"), pytest.param(3 * 86400, "3d", id="days"),
])
def test_ages_print_like_kubectl(seconds: int, text: str) -> None:
    assert tables.human_duration(seconds) == text


def test_printer_column_json_paths_follow_filters() -> None:
    obj = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}}
    assert tables.json_path(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert tables.json_path(obj, ".status.conditions[0].type") == ["A"]
    assert tables.json_path(obj, ".spec.missing") == []


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(string.ascii_lowercase, max_size=3), inner, max_size=3),
                           max_leaves=10)
json_objects = st.dictionaries(st.text(string.ascii_lowercase, max_size=3), json_values, max_size=4)


@given(json_objects, json_objects)
def test_merge_patch_is_idempotent(target: dict, patch: dict) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


@given(st.lists(st.sampled_from(["put", "remove"]), min_size=1, max_size=60))
def test_resource_versions_only_grow_and_history_replays_exactly(ops: list[str]) -> None:
    store, seen = Store(), []
    for i, op in enumerate(ops):
        if op == "put":
            seen.append(store.put(("", "configmaps"), {"metadata": {"name": f"c{i % 3}", "namespace": "d"}}).rv)
        elif store.remove(("", "configmaps"), "d", f"c{(i + 1) % 3}") is not None:
            seen.append(store.rv)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    assert [e.rv for e in store.since(("", "configmaps"), 0)] == seen


class Ticking:
    """A monotonic time source the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def put_many(store: Store, count: int, prefix: str = "c") -> None:
    for i in range(count):
        store.put(("", "configmaps"), {"metadata": {"name": f"{prefix}{i}", "namespace": "d"}})


def test_history_keeps_the_last_75_seconds_of_events_then_older_versions_are_too_old() -> None:
    """As kube-apiserver's watch cache: at least 75 s of history, so a client that took a minute
    to list a busy collection can watch on from the list's version."""
    clock = Ticking()
    store = Store(clock)
    put_many(store, HISTORY_PER_RESOURCE + 500)  # within 75 s: nothing evicted, however many
    assert len(store.since(("", "configmaps"), 1)) == HISTORY_PER_RESOURCE + 500
    clock.now = 76.0
    put_many(store, 1, "late")  # older than 75 s beyond the last HISTORY_PER_RESOURCE: evicted
    with pytest.raises(TooOld):
        store.since(("", "configmaps"), 3)
    assert len(store.since(("", "configmaps"), store.rv - HISTORY_PER_RESOURCE)) == HISTORY_PER_RESOURCE


def test_history_without_a_time_window_keeps_the_last_events_only() -> None:
    store = Store(Ticking(), history_seconds=0.0)
    put_many(store, HISTORY_PER_RESOURCE + 5)
    with pytest.raises(TooOld):
        store.since(("", "configmaps"), 3)
    assert len(store.since(("", "configmaps"), store.rv - 10)) == 10


def test_stored_entries_serve_managed_fields_but_keep_them_out_of_the_working_copy() -> None:
    store = Store()
    entry = store.put(("", "configmaps"), {"metadata": {"name": "c", "namespace": "d", "managedFields": [
        {"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]}})
    assert "managedFields" not in entry.obj["metadata"]
    assert entry.copy()["metadata"]["managedFields"][0]["manager"] == "kubectl"


schemas = st.recursive(
    st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "weird"]) | st.integers(),
        "minimum": json_values, "maximum": json_values, "maxLength": json_values, "minItems": json_values,
        "pattern": json_values, "enum": json_values, "required": json_values, "nullable": st.booleans(),
        "x-kubernetes-int-or-string": st.booleans(), "x-kubernetes-preserve-unknown-fields": st.booleans(),
        "x-kubernetes-embedded-resource": st.booleans(), "properties": json_values, "items": json_values,
        "additionalProperties": json_values, "default": json_values,
        "x-kubernetes-validations": json_values | st.lists(st.fixed_dictionaries({"rule": st.sampled_from(
            ["self == oldSelf", "self.a > 1", "size(self) < 2", "self.all(x, x != 'a')", "self.a.b", "1 / 0 == 1",
             "self ==="])}, optional={"message": json_values, "fieldPath": json_values, "reason": json_values}),
            max_size=2)}),
    lambda inner: st.fixed_dictionaries({}, optional={
        "type": st.just("object"), "properties": st.dictionaries(st.sampled_from(["a", "b", "spec"]), inner, max_size=3),
        "additionalProperties": inner | st.booleans(), "items": inner, "anyOf": st.lists(inner, max_size=2)}),
    max_leaves=8)


@given(schemas, json_objects)
def test_any_schema_and_object_validate_to_field_errors_never_exceptions(schema: dict, obj: dict) -> None:
    resource = ResourceType("example.com", "v1", "things", "Thing", True, builtin=False, schema=schema,
                            storage_version="v1", rules=crd_rules.compile_schema(schema))
    crd_schema.decode_custom(resource, obj)
    old = {**obj, "spec": None}
    for error in crd_schema.validate_custom(resource, obj, None) + crd_schema.validate_custom(resource, obj, old):
        assert str(error)


@pytest.mark.parametrize(("resource", "body", "field"), [
    pytest.param(PODS, {"spec": {"containers": "nginx"}}, "Pod.spec.containers", id="containers as a string"),
    pytest.param(JOBS, {"spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}}},
                 "Job.spec.template.spec.containers.ports.containerPort", id="a port number as a string"),
    pytest.param(NAMESPACES, {"spec": True}, "Namespace.spec", id="a spec that is not an object"),
    pytest.param(rt("", "v1", "events"), {"involvedObject": ["job"]}, "Event.involvedObject", id="a reference as a list"),
])
def test_fields_of_the_wrong_json_type_are_bad_requests_like_the_go_decoder(resource: ResourceType, body: dict,
                                                                           field: str) -> None:
    with pytest.raises(ApiError) as err:
        shapes.check(resource, body)
    assert err.value.code == 400 and f"Go struct field {field} " in err.value.message


def test_nulls_and_undeclared_fields_pass_the_shape_check() -> None:
    shapes.check(PODS, {"spec": {"containers": None, "anything": {"else": [1, "x"]}}, "status": None})
