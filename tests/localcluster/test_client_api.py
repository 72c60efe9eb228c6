"""The real `kubernetes` client against the local cluster: typed APIs, errors, watches, leases,
bindings, custom resources (CustomObjectsApi and DynamicClient), and garbage collection."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException

from localcluster.runner import LocalCluster
from tests.localcluster_fixtures import wait_until

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                         {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1}, "color": {"type": "string", "default": "red"}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}},
        }],
    },
}


def established(ext: client.ApiextensionsV1Api, name: str) -> bool:
    """kube-apiserver serves a CRD's objects once it is Established, a moment after the create."""
    conditions = ext.read_custom_resource_definition(name).status.conditions or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def status_of(err: ApiException) -> dict:
    return json.loads(err.body)


@pytest.fixture(scope="module")
def core(kube_api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api)


@pytest.fixture(scope="module")
def widgets(kube_api: client.ApiClient) -> str:
    ext = client.ApiextensionsV1Api(kube_api)
    try:
        ext.create_custom_resource_definition(WIDGET_CRD)
    except ApiException as err:
        assert err.status == 409
    wait_until(lambda: established(ext, "widgets.example.com"))
    return "widgets"


def test_create_read_replace_and_a_stale_replace_is_a_conflict(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}, "data": {"x": "1"}})
    assert cm.metadata.uid and cm.metadata.creation_timestamp
    cm.data["x"] = "2"
    newer = core.replace_namespaced_config_map("a", namespace, cm)
    assert int(newer.metadata.resource_version) > int(cm.metadata.resource_version)
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("a", namespace, cm)
    assert (err.value.status, status_of(err.value)["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status_of(err.value)["message"]


@pytest.mark.parametrize(("body", "target_ns", "code", "reason"), [
    pytest.param({"metadata": {"name": "dup"}}, None, 409, "AlreadyExists", id="a second create of a name already exists"),
    pytest.param({"metadata": {"name": "x"}}, "no-such-namespace", 404, "NotFound", id="a create in a missing namespace"),
    pytest.param({"metadata": {"name": "Bad_Name"}}, None, 422, "Invalid", id="a name that is not a DNS subdomain"),
    pytest.param({"metadata": {}}, None, 422, "Invalid", id="neither name nor generateName"),
])
def test_create_errors_carry_the_status_a_real_server_sends(core: client.CoreV1Api, namespace: str, body: dict,
                                                            target_ns: str | None, code: int, reason: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "dup"}})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(target_ns or namespace, body)
    status = status_of(err.value)
    assert (err.value.status, status["reason"], status["code"], status["kind"]) == (code, reason, code, "Status")


def test_generate_name_gives_five_random_characters(core: client.CoreV1Api, namespace: str) -> None:
    made = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "job-"}})
    assert made.metadata.name.startswith("job-") and len(made.metadata.name) == 9


def test_watch_sees_changes_after_a_list(core: client.CoreV1Api, namespace: str) -> None:
    listed = core.list_namespaced_config_map(namespace)
    seen: list[tuple[str, str]] = []

    def follow() -> None:
        for event in watch.Watch().stream(core.list_namespaced_config_map, namespace,
                                          resource_version=listed.metadata.resource_version, timeout_seconds=2):
            seen.append((event["type"], event["object"].metadata.name))

    thread = threading.Thread(target=follow)
    thread.start()
    time.sleep(0.2)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "w"}})
    core.patch_namespaced_config_map("w", namespace, {"data": {"a": "b"}})
    core.delete_namespaced_config_map("w", namespace)
    thread.join(timeout=10)
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


@pytest.mark.standin_only("the suite's stand-in keeps only the last 1,000 events (watch_history=0); kube-apiserver's "
                          "watch cache, like the stand-in's default, keeps at least 75 s of them, so 1,001 quick writes "
                          "evict nothing (test_bad_input's too-old watch holds on both)")
def test_a_watch_from_an_evicted_version_ends_in_410_expired(core: client.CoreV1Api, namespace: str,
                                                             local_cluster: LocalCluster) -> None:
    first = core.create_namespaced_config_map(namespace, {"metadata": {"name": "old"}})
    for i in range(1001):
        core.patch_namespaced_config_map("old", namespace, {"data": {"n": str(i)}})
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, namespace,
                                      resource_version=first.metadata.resource_version, timeout_seconds=2):
            pass
    assert err.value.status == 410 and "too old resource version" in err.value.reason


def test_label_selected_watch_turns_matching_changes_into_added_and_deleted(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "s"}})
    rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"team": "a"}}})
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"team": "b"}}})
    events = [e["type"] for e in watch.Watch().stream(core.list_namespaced_config_map, namespace, label_selector="team=a",
                                                     resource_version=rv, timeout_seconds=1)]
    assert events == ["ADDED", "DELETED"]


def test_leases_support_leader_election_with_optimistic_concurrency(kube_api: client.ApiClient, namespace: str) -> None:
    leases = client.CoordinationV1Api(kube_api)
    body = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                                                     "renewTime": "2026-01-01T00:00:00.000004Z"}}
    lease = leases.create_namespaced_lease(namespace, body)
    assert lease.spec.renew_time.microsecond == 4
    lease.spec.holder_identity = "b"
    leases.replace_namespaced_lease("leader", namespace, lease)
    with pytest.raises(ApiException) as err:
        leases.replace_namespaced_lease("leader", namespace, lease)
    assert err.value.status == 409


def test_binding_a_pod_sets_its_node_and_a_second_binding_conflicts(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    binding = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node-1"}}
    reply = core.create_namespaced_pod_binding("p", namespace, binding, _preload_content=False)
    assert reply.status == 201 and json.loads(reply.data)["status"] == "Success"
    pod = core.read_namespaced_pod("p", namespace)
    assert pod.spec.node_name == "node-1"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    assert [p.metadata.name for p in core.list_namespaced_pod(namespace, field_selector="spec.nodeName=node-1").items] == ["p"]
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding("p", namespace, binding, _preload_content=False)
    assert err.value.status == 409 and "already assigned" in status_of(err.value)["message"]


def test_events_written_with_events_v1_are_read_as_core_events(kube_api: client.ApiClient, core: client.CoreV1Api,
                                                               namespace: str) -> None:
    events = client.EventsV1Api(kube_api)
    events.create_namespaced_event(namespace, {
        "metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.123456Z", "reportingController": "batchgate",
        "reportingInstance": "batchgate-0", "action": "Admit", "reason": "Admitted", "type": "Normal",
        "note": "admitted by cq-a", "regarding": {"kind": "Job", "name": "j", "namespace": namespace, "uid": "u1"}})
    core_events = core.list_namespaced_event(namespace, field_selector="involvedObject.uid=u1").items
    assert [(e.reason, e.message, e.involved_object.name) for e in core_events] == [("Admitted", "admitted by cq-a", "j")]
    with pytest.raises(ApiException) as err:
        events.create_namespaced_event(namespace, {"metadata": {"name": "e2"}, "eventTime": "2026-01-01T00:00:00.123456Z",
                                                   "regarding": {"kind": "Job"}})
    assert err.value.status == 422


def test_custom_resources_through_custom_objects_api(kube_api: client.ApiClient, widgets: str, namespace: str) -> None:
    api = client.CustomObjectsApi(kube_api)
    made = api.create_namespaced_custom_object("example.com", "v1", namespace, widgets, {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"size": 3}, "status": {"phase": "ignored"}})
    assert made["spec"] == {"size": 3, "color": "red"} and "status" not in made
    made["status"] = {"phase": "Ready"}
    made["spec"]["size"] = 9
    after = api.replace_namespaced_custom_object_status("example.com", "v1", namespace, widgets, "w1", made)
    assert after["status"] == {"phase": "Ready"} and after["spec"]["size"] == 3
    with pytest.raises(ApiException) as err:
        api.create_namespaced_custom_object("example.com", "v1", namespace, widgets, {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"size": 0}})
    assert err.value.status == 422 and status_of(err.value)["details"]["causes"][0]["field"] == "spec.size"
    no_rv = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 4}}
    with pytest.raises(ApiException) as err:
        api.replace_namespaced_custom_object("example.com", "v1", namespace, widgets, "w1", no_rv)
    assert err.value.status == 422 and "must be specified for an update" in status_of(err.value)["message"]


def test_dynamic_client_discovers_crds_and_custom_resources_refuse_strategic_merge(
        kube_api: client.ApiClient, widgets: str, namespace: str, tmp_path) -> None:
    dyn = dynamic.DynamicClient(kube_api, cache_file=str(tmp_path / "discovery.json"))
    resource = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    resource.create(body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "d1"},
                          "spec": {"size": 1}}, namespace=namespace)
    patched = resource.patch(name="d1", namespace=namespace, body={"spec": {"size": 2}},
                             content_type="application/merge-patch+json")
    assert patched.spec.size == 2
    with pytest.raises(dynamic.exceptions.DynamicApiError) as err:
        resource.patch(name="d1", namespace=namespace, body={"spec": {"size": 5}})
    assert err.value.status == 415


def owned(core: client.CoreV1Api, namespace: str, owner, name: str, block: bool = False) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name, "uid": owner.metadata.uid,
        "blockOwnerDeletion": block}]}})


ROOT_CA = "kube-root-ca.crt"  # kube-controller-manager's root-CA publisher puts it in every namespace


def names(core: client.CoreV1Api, namespace: str) -> set[str]:
    return {c.metadata.name for c in core.list_namespaced_config_map(namespace).items} - {ROOT_CA}


@pytest.mark.parametrize(("policy", "left"), [
    pytest.param("Background", set(), id="background deletion removes the dependents after the owner"),
    pytest.param("Foreground", set(), id="foreground deletion removes the dependents before the owner"),
    pytest.param("Orphan", {"child"}, id="orphan deletion keeps the dependents without the owner reference"),
])
def test_garbage_collection_follows_the_propagation_policy(core: client.CoreV1Api, namespace: str,
                                                           policy: str, left: set[str]) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    owned(core, namespace, owner, "child", block=True)
    core.delete_namespaced_config_map("owner", namespace, body={"propagationPolicy": policy})
    wait_until(lambda: names(core, namespace) == left)
    if left:
        assert core.read_namespaced_config_map("child", namespace).metadata.owner_references is None


def test_foreground_deletion_waits_for_a_blocking_dependent_held_by_a_finalizer(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "held", "finalizers": ["example.com/hold"],
                                                               "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                                                    "name": "owner", "uid": owner.metadata.uid,
                                                                                    "blockOwnerDeletion": True}]}})
    core.delete_namespaced_config_map("owner", namespace, body={"propagationPolicy": "Foreground"})
    wait_until(lambda: core.read_namespaced_config_map("held", namespace).metadata.deletion_timestamp is not None)
    waiting = core.read_namespaced_config_map("owner", namespace)
    assert waiting.metadata.finalizers == ["foregroundDeletion"] and waiting.metadata.deletion_timestamp
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    wait_until(lambda: names(core, namespace) == set())


def test_a_terminating_namespace_refuses_new_content_and_then_disappears(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert err.value.status == 403 and "being terminated" in status_of(err.value)["message"]
    core.patch_namespaced_config_map("held", "doomed", {"metadata": {"finalizers": None}})
    wait_until(lambda: "doomed" not in {n.metadata.name for n in core.list_namespace().items})


def test_concurrent_read_modify_write_loses_no_update(local_cluster: LocalCluster, namespace: str) -> None:
    """Four clients increment one counter with GET + PUT, retrying on 409: every increment lands."""
    from tests.localcluster_fixtures import api_client

    threads, per_thread = 4, 10
    with api_client(local_cluster) as setup:
        client.CoreV1Api(setup).create_namespaced_config_map(namespace, {"metadata": {"name": "counter"},
                                                                         "data": {"n": "0"}})

    def increment() -> None:
        with api_client(local_cluster) as own:
            api = client.CoreV1Api(own)
            for _ in range(per_thread):
                while True:
                    cm = api.read_namespaced_config_map("counter", namespace)
                    cm.data["n"] = str(int(cm.data["n"]) + 1)
                    try:
                        api.replace_namespaced_config_map("counter", namespace, cm)
                        break
                    except ApiException as err:
                        assert err.status == 409

    workers = [threading.Thread(target=increment) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    with api_client(local_cluster) as check:
        final = client.CoreV1Api(check).read_namespaced_config_map("counter", namespace)
    assert int(final.data["n"]) == threads * per_thread


@pytest.mark.parametrize(("change", "field"), [
    pytest.param({"names": {"plural": "widgets", "kind": "Thing"}}, "metadata.name",
                 id="a name that is not plural.group"),
    pytest.param({"versions": [{"name": "v1", "served": True, "storage": True,
                                "schema": {"openAPIV3Schema": {"type": "object"}},
                                "additionalPrinterColumns": [{"name": "Size", "type": "color", "jsonPath": ".spec.size"}]}]},
                 # columns every version shares are checked as one top-level list, so the error names it there
                 "spec.additionalPrinterColumns[0].type", id="a printer column of an unknown type"),
    pytest.param({"versions": [{"name": "v1", "served": True, "storage": False,
                                "schema": {"openAPIV3Schema": {"type": "object"}}}]},
                 "spec.versions", id="no storage version"),
    pytest.param({"scope": "Galaxy"}, "spec.scope", id="an unknown scope"),
])
def test_malformed_crds_are_invalid(kube_api: client.ApiClient, change: dict, field: str) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "things.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "things", "kind": "Thing"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    crd["spec"].update(change)
    with pytest.raises(ApiException) as err:
        client.ApiextensionsV1Api(kube_api).create_custom_resource_definition(crd, _preload_content=False)
    assert err.value.status == 422 and field in [c["field"] for c in status_of(err.value)["details"]["causes"]]


@pytest.mark.standin_only("kube-controller-manager's garbage collector left the dependent of a custom resource "
                          "deleted with its CRD in place for over 4 minutes (docs/localcluster-wire.md)")
def test_deleting_a_crd_deletes_its_objects_and_their_dependents(kube_api: client.ApiClient, core: client.CoreV1Api,
                                                                namespace: str) -> None:
    crd = json.loads(json.dumps(WIDGET_CRD).replace("widgets", "doomeds").replace("Widget", "Doomed")
                     .replace('"wd"', '"dd"'))
    ext = client.ApiextensionsV1Api(kube_api)
    ext.create_custom_resource_definition(crd)
    wait_until(lambda: established(ext, "doomeds.example.com"))
    custom = client.CustomObjectsApi(kube_api)
    owner = custom.create_namespaced_custom_object("example.com", "v1", namespace, "doomeds", {
        "apiVersion": "example.com/v1", "kind": "Doomed", "metadata": {"name": "d1"}, "spec": {"size": 1}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "child", "ownerReferences": [{
        "apiVersion": "example.com/v1", "kind": "Doomed", "name": "d1", "uid": owner["metadata"]["uid"]}]}})
    ext.delete_custom_resource_definition("doomeds.example.com")
    wait_until(lambda: "child" not in names(core, namespace))
    with pytest.raises(ApiException) as err:
        custom.list_namespaced_custom_object("example.com", "v1", namespace, "doomeds")
    assert err.value.status == 404
