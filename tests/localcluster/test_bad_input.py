"""Bad input over raw HTTPS gets the code and metav1.Status a real API server sends: never a
500, a traceback or a hung connection."""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localcluster.runner import LocalCluster
from tests.localcluster_fixtures import wait_until

TIMEOUT = 10


@pytest.fixture(scope="module")
def http(local_cluster: LocalCluster) -> Iterator[requests.Session]:
    session = requests.Session()
    session.trust_env = False  # REQUESTS_CA_BUNDLE would override the cluster CA
    session.verify = str(local_cluster.ca_file)
    session.headers["Authorization"] = f"Bearer {local_cluster.token('admin')}"
    yield session
    session.close()


def url(cluster: LocalCluster, path: str) -> str:
    return cluster.url + path


CM_PATH = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(("method", "path", "body", "content_type", "code", "reason"), [
    pytest.param("POST", CM_PATH, b"{not json", "application/json", 400, "BadRequest", id="malformed JSON"),
    pytest.param("POST", CM_PATH, b"a: [b", "application/yaml", 400, "BadRequest", id="malformed YAML"),
    pytest.param("POST", CM_PATH, b"\x0a\x0bgarbage", "application/vnd.kubernetes.protobuf", 400,
                 "BadRequest", id="protobuf that is not a Kubernetes object"),
    pytest.param("POST", CM_PATH, b"<x/>", "application/xml", 415, "UnsupportedMediaType", id="an unknown media type"),
    pytest.param("POST", CM_PATH, b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}', "application/json",
                 400, "BadRequest", id="the wrong kind for the resource"),
    pytest.param("POST", CM_PATH, b'{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}', "application/json",
                 400, "BadRequest", id="the wrong apiVersion"),
    pytest.param("POST", CM_PATH, b'[1,2]', "application/json", 400, "BadRequest", id="a JSON array instead of an object"),
    pytest.param("POST", CM_PATH, b'{"metadata":{"name":"x","resourceVersion":"5"}}', "application/json", 400,
                 "BadRequest", id="a create that carries a resourceVersion",
                 marks=pytest.mark.standin_only("kube-apiserver answers 500 without a reason; the stand-in a 400 "
                                                "(docs/localcluster-wire.md)")),
    pytest.param("POST", "/api/v1/namespaces/default/gizmos", b"{}", "application/json", 404, "NotFound",
                 id="an unknown resource"),
    pytest.param("GET", CM_PATH + "?watch=true&resourceVersion=abc", None, None, 400, "BadRequest",
                 id="a garbage watch resourceVersion",
                 marks=pytest.mark.standin_only("kube-apiserver answers a watch 500 without a reason (a list 400); "
                                                "the stand-in 400 for both (docs/localcluster-wire.md)")),
    pytest.param("GET", CM_PATH + "?labelSelector=a%20in%20b", None, None, 400, "BadRequest", id="a malformed label selector"),
    pytest.param("GET", CM_PATH + "?fieldSelector=spec.nodeName%3Dx", None, None, 400, "BadRequest",
                 id="a field selector the resource does not support"),
    pytest.param("GET", CM_PATH + "?limit=ten", None, None, 400, "BadRequest", id="a limit that is not a number"),
    pytest.param("PATCH", CM_PATH + "/missing", b"{}", "application/merge-patch+json", 404, "NotFound",
                 id="a patch of a missing object"),
    pytest.param("PUT", CM_PATH + "/missing", b'{"metadata":{"name":"missing"}}', "application/json", 404, "NotFound",
                 id="an update of a missing object"),
    pytest.param("DELETE", CM_PATH + "/missing", None, None, 404, "NotFound", id="a delete of a missing object"),
    pytest.param("PATCH", CM_PATH + "/fixture", b"{}", "text/plain", 415, "UnsupportedMediaType",
                 id="a patch in an unknown format"),
    pytest.param("PATCH", CM_PATH + "/fixture", b'[{"op":"nonsense","path":"/x"}]', "application/json-patch+json", 422,
                 "Invalid", id="a JSON patch with an unknown operation"),
    pytest.param("PUT", CM_PATH + "/fixture", b'{"metadata":{"name":"other"}}', "application/json", 400, "BadRequest",
                 id="an update whose name differs from the URL"),
    pytest.param("DELETE", CM_PATH + "/fixture", b'{"propagationPolicy":"Sometimes"}', "application/json", 422, "Invalid",
                 id="an unknown propagation policy"),
    pytest.param("DELETE", CM_PATH + "/fixture", b'{"preconditions":{"uid":"nope"}}', "application/json", 409, "Conflict",
                 id="a delete whose uid precondition fails"),
    pytest.param("DELETE", "/api/v1/namespaces/kube-system", None, None, 403, "Forbidden",
                 id="deleting a system namespace"),
])
def test_bad_requests_get_a_status(http: requests.Session, local_cluster: LocalCluster, method: str, path: str,
                                   body: bytes | None, content_type: str | None, code: int, reason: str) -> None:
    http.post(url(local_cluster, CM_PATH), json={"metadata": {"name": "fixture"}}, timeout=TIMEOUT)
    headers = {"Content-Type": content_type} if content_type else {}
    reply = http.request(method, url(local_cluster, path), data=body, headers=headers, timeout=TIMEOUT)
    status = reply.json()
    assert (reply.status_code, status["kind"], status["status"], status["reason"], status["code"]) == (
        code, "Status", "Failure", reason, code), status


@pytest.mark.parametrize("path", ["/apis/nope.example.com/v1", "/apis/nope.example.com/v1/namespaces/default/things"])
def test_a_path_of_an_unknown_group_is_go_s_plain_not_found(http: requests.Session, local_cluster: LocalCluster,
                                                            path: str) -> None:
    """No handler claims it: kube-apiserver's mux answers as net/http does, not with a Status."""
    reply = http.get(url(local_cluster, path), timeout=TIMEOUT)
    assert (reply.status_code, reply.headers["Content-Type"], reply.text) == (
        404, "text/plain; charset=utf-8", "404 page not found\n")


ANONYMOUS = ("kube-apiserver's default --anonymous-auth=true makes a request without credentials system:anonymous, "
             "refused with 403; the stand-in refuses it with 401 (docs/localcluster-wire.md)")


@pytest.mark.parametrize(("token", "code"), [
    pytest.param(None, 401, id="no token", marks=pytest.mark.standin_only(ANONYMOUS)),
    pytest.param("Bearer wrong", 401, id="a token nobody has"),
    pytest.param("Basic YWRtaW46YWRtaW4=", 401, id="basic auth", marks=pytest.mark.standin_only(ANONYMOUS)),
])
def test_unauthenticated_requests_are_401(local_cluster: LocalCluster, token: str | None, code: int) -> None:
    headers = {"Authorization": token} if token else {}
    reply = requests.get(url(local_cluster, CM_PATH), headers=headers, verify=str(local_cluster.ca_file), timeout=TIMEOUT)
    assert (reply.status_code, reply.json()["reason"]) == (code, "Unauthorized")


def test_version_is_public_and_within_one_minor_of_kubectl(local_cluster: LocalCluster, kubectl: Any) -> None:
    reply = requests.get(url(local_cluster, "/version"), verify=str(local_cluster.ca_file), timeout=TIMEOUT)
    client = json.loads(kubectl("version", "--client", "-o", "json").stdout)["clientVersion"]
    assert reply.json()["major"] == client["major"] == "1"
    assert abs(int(reply.json()["minor"]) - int(client["minor"].rstrip("+"))) <= 1  # a vendor's build says "32+"


def test_a_chunked_body_without_content_length_is_read(http: requests.Session, local_cluster: LocalCluster) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"metadata":{"name":"chunked"},'
        yield b'"data":{"a":"b"}}'

    reply = http.post(url(local_cluster, CM_PATH), data=chunks(), timeout=TIMEOUT)
    assert reply.status_code == 201 and reply.json()["data"] == {"a": "b"}


def test_a_body_over_3_mib_is_413(http: requests.Session, local_cluster: LocalCluster) -> None:
    big = json.dumps({"metadata": {"name": "big"}, "data": {"a": "x" * (3 * 1024 * 1024)}})
    reply = http.post(url(local_cluster, CM_PATH), data=big, timeout=TIMEOUT)
    assert (reply.status_code, reply.json()["reason"]) == (413, "RequestEntityTooLarge")


def test_a_too_old_watch_is_a_200_stream_with_one_expired_error_event(http: requests.Session, local_cluster: LocalCluster,
                                                                      namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    http.post(url(local_cluster, path), json={"metadata": {"name": "churn"}}, timeout=TIMEOUT)
    for i in range(1001):
        http.patch(url(local_cluster, f"{path}/churn"), data=json.dumps({"data": {"i": str(i)}}),
                   headers={"Content-Type": "application/merge-patch+json"}, timeout=TIMEOUT)
    reply = http.get(url(local_cluster, f"{path}?watch=1&resourceVersion=2"), timeout=TIMEOUT)
    assert reply.status_code == 200 and reply.text.endswith("\n")
    lines = reply.text.splitlines()
    event = json.loads(lines[0])
    assert len(lines) == 1 and event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
    assert event["object"]["message"].startswith("too old resource version: 2 (")


@pytest.mark.standin_only("kube-apiserver v1.35 holds such a watch open until the version is reached "
                          "(its 504 Too large answers a list); docs/localcluster-wire.md")
def test_a_watch_from_a_version_the_server_never_reached_is_told_it_is_too_large(
        http: requests.Session, local_cluster: LocalCluster) -> None:
    reply = http.get(url(local_cluster, f"{CM_PATH}?watch=true&resourceVersion=999999999"), timeout=TIMEOUT)
    event = json.loads(reply.text)
    assert reply.status_code == 200 and event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (504, "Timeout")
    assert event["object"]["message"].startswith("Too large resource version: 999999999, current: ")


@pytest.mark.parametrize(("seconds", "elsewhere", "expected"), [
    pytest.param(4, True, [], id="a short watch ends without a closing bookmark though the version moved"),
    pytest.param(4, False, [], id="a short watch ends without a closing bookmark"),
])
def test_watch_bookmarks_and_timeouts(http: requests.Session, local_cluster: LocalCluster, namespace: str,
                                      seconds: int, elsewhere: bool, expected: list[str]) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    listed = http.get(url(local_cluster, path), timeout=TIMEOUT).json()
    if elsewhere:  # a write the watch does not see moves the version a bookmark carries
        http.post(url(local_cluster, CM_PATH), json={"metadata": {"generateName": "elsewhere-"}}, timeout=TIMEOUT)
    reply = http.get(url(local_cluster, f"{path}?watch=true&allowWatchBookmarks=true&timeoutSeconds={seconds}"
                                        f"&resourceVersion={listed['metadata']['resourceVersion']}"), timeout=TIMEOUT)
    events = [json.loads(line) for line in reply.text.splitlines()]
    assert [e["type"] for e in events] == expected
    assert all(e["object"]["kind"] == "ConfigMap" and int(e["object"]["metadata"]["resourceVersion"]) >
               int(listed["metadata"]["resourceVersion"]) for e in events)


def test_a_watch_on_one_object_is_a_field_selected_watch_and_watch_on_its_url_is_a_get(
        http: requests.Session, local_cluster: LocalCluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("one", "other"):
        http.post(url(local_cluster, path), json={"metadata": {"name": name}}, timeout=TIMEOUT)
    reply = http.get(url(local_cluster, f"{path}?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Done"),
                     timeout=TIMEOUT)
    assert [(json.loads(line)["type"], json.loads(line)["object"]["metadata"]["name"])
            for line in reply.text.splitlines()] == [("ADDED", "one")]
    got = http.get(url(local_cluster, f"{path}/one?watch=true"), timeout=TIMEOUT).json()
    assert (got["kind"], got["metadata"]["name"]) == ("ConfigMap", "one")


def test_any_watch_flag_but_false_or_0_starts_a_watch(http: requests.Session, local_cluster: LocalCluster) -> None:
    """Query booleans convert as apimachinery's do: `watch=maybe` is a watch, not a bad request."""
    watched = http.get(url(local_cluster, f"{CM_PATH}?watch=maybe&timeoutSeconds=1"), timeout=TIMEOUT)
    assert watched.status_code == 200 and all(json.loads(line)["type"] == "ADDED" for line in watched.text.splitlines())
    listed = http.get(url(local_cluster, f"{CM_PATH}?watch=False"), timeout=TIMEOUT).json()
    assert listed["kind"] == "ConfigMapList"


def test_lists_page_with_limit_and_continue(http: requests.Session, local_cluster: LocalCluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for i in range(5):  # labelled: a real cluster's namespace also holds kube-root-ca.crt
        http.post(url(local_cluster, path), json={"metadata": {"name": f"page-{i}", "labels": {"set": "pages"}}},
                  timeout=TIMEOUT)
    names, token, pages = [], "", 0
    while True:
        page = http.get(url(local_cluster, f"{path}?labelSelector=set%3Dpages&limit=2&continue={token}"),
                        timeout=TIMEOUT).json()
        names += [item["metadata"]["name"] for item in page["items"]]
        pages += 1
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == [f"page-{i}" for i in range(5)] and pages == 3
    empty = http.get(url(local_cluster, f"{path}?labelSelector=none%3Dhere"), timeout=TIMEOUT).json()
    assert empty["items"] == [] and empty["kind"] == "ConfigMapList"


def test_a_slow_watcher_does_not_stall_writes(local_cluster: LocalCluster, http: requests.Session, namespace: str) -> None:
    """A watch whose client never reads: writes and other requests still complete promptly."""
    context = ssl.create_default_context(cafile=str(local_cluster.ca_file))
    raw = context.wrap_socket(socket.create_connection(("127.0.0.1", local_cluster.port), timeout=TIMEOUT),
                              server_hostname="127.0.0.1")
    raw.sendall((f"GET /api/v1/namespaces/{namespace}/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n"
                 f"Authorization: Bearer {local_cluster.token('admin')}\r\n\r\n").encode())
    try:
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        payload = "x" * 100_000
        for i in range(80):
            reply = http.post(url(local_cluster, path), json={"metadata": {"name": f"fat-{i}"}, "data": {"p": payload}},
                              timeout=TIMEOUT)
            assert reply.status_code == 201
    finally:
        raw.close()


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.sampled_from(["metadata", "spec", "name", "labels", "data", "x", "template",
                                                              "containers", "status", "apiVersion", "kind"]) | st.text(max_size=5),
                                             inner, max_size=4), max_leaves=12)
paths = st.sampled_from([CM_PATH, CM_PATH + "/fixture", "/api/v1/namespaces/default/pods",
                         "/apis/batch/v1/namespaces/default/jobs", "/apis/batch/v1/namespaces/default/jobs/fixture",
                         "/api/v1/namespaces", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                         "/apis/coordination.k8s.io/v1/namespaces/default/leases", "/api/v1/nodes/x/status"])
content_types = st.sampled_from(["application/json", "application/yaml", "application/merge-patch+json",
                                 "application/json-patch+json", "application/strategic-merge-patch+json",
                                 "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf", ""])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["POST", "PUT", "PATCH", "DELETE", "GET"]), path=paths, content_type=content_types,
       body=json_values, query=st.sampled_from(["", "?dryRun=All", "?watch=1&timeoutSeconds=1", "?fieldManager=fuzz",
                                                "?fieldValidation=Strict", "?limit=1"]))
def test_no_request_is_answered_with_a_server_error(http: requests.Session, local_cluster: LocalCluster, method: str,
                                                    path: str, content_type: str, body: object, query: str) -> None:
    data = json.dumps(body).encode()
    headers = {"Content-Type": content_type} if content_type else {}
    reply = http.request(method, url(local_cluster, path + query), data=data, headers=headers, timeout=TIMEOUT)
    assert reply.status_code < 500, reply.text
    if reply.status_code >= 400:
        assert reply.json()["kind"] == "Status"


CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


printer_columns = st.lists(st.fixed_dictionaries({
    "name": st.text(min_size=1, max_size=5), "type": st.sampled_from(["string", "integer", "number", "boolean", "date"]),
    "jsonPath": st.text(max_size=12) | st.sampled_from([".spec", ".spec.a[0]", ".spec.a[*]", "{.spec}", ".[", "..a",
                                                        '.status.conditions[?(@.type=="x")].status', ".metadata.name"])}),
    max_size=3)
subresource_sets = st.sampled_from([None, {}, {"status": {}}, {"status": {}, "scale": {
    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}])
schema_bodies = st.just({"type": "object", "x-kubernetes-preserve-unknown-fields": True}) | json_values


@pytest.mark.standin_only("kube-apiserver itself answers 500 to the scale subresource of a custom resource whose "
                          "spec is not an object (`value cannot be set because .spec is not a map[string]interface{}`)")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema=schema_bodies, columns=printer_columns, subresources=subresource_sets, instance=json_values)
def test_odd_crds_and_their_objects_never_cause_a_server_error(http: requests.Session, local_cluster: LocalCluster,
                                                               schema: object, columns: object, subresources: object,
                                                               instance: object) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "oddities.fuzz.example.com"},
           "spec": {"group": "fuzz.example.com", "scope": "Namespaced",
                    "names": {"plural": "oddities", "kind": "Oddity"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema if isinstance(schema, dict) else {"type": "object"}},
                                  "additionalPrinterColumns": columns, "subresources": subresources}]}}
    if subresources is None:
        del crd["spec"]["versions"][0]["subresources"]
    replies = [http.post(url(local_cluster, CRD_PATH), json=crd, timeout=TIMEOUT)]
    crd_url = url(local_cluster, f"{CRD_PATH}/oddities.fuzz.example.com")
    if replies[0].status_code == 201:  # kube-apiserver serves the objects once the CRD is Established
        wait_until(lambda: any(c["type"] == "Established" and c["status"] == "True" for c in
                               http.get(crd_url, timeout=TIMEOUT).json()["status"].get("conditions") or []))
    path = "/apis/fuzz.example.com/v1/namespaces/default/oddities"
    body = {"apiVersion": "fuzz.example.com/v1", "kind": "Oddity", "metadata": {"name": "o1"}, "spec": instance}
    replies.append(http.post(url(local_cluster, path), json=body, timeout=TIMEOUT))
    replies.append(http.get(url(local_cluster, path), headers={"Accept": TABLE}, timeout=TIMEOUT))
    replies.append(http.get(url(local_cluster, f"{path}/o1/scale"), timeout=TIMEOUT))
    replies.append(http.patch(url(local_cluster, f"{path}/o1/scale"), data='{"spec":{"replicas":2}}',
                              headers={"Content-Type": "application/merge-patch+json"}, timeout=TIMEOUT))
    replies.append(http.get(url(local_cluster, "/openapi/v3/apis/fuzz.example.com/v1"), timeout=TIMEOUT))
    replies.append(http.delete(crd_url, timeout=TIMEOUT))
    assert all(reply.status_code < 500 for reply in replies), [r.text for r in replies if r.status_code >= 500]
    wait_until(lambda: http.get(crd_url, timeout=TIMEOUT).status_code == 404)  # gone before the next example


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(resource=st.sampled_from([("/api/v1", "pods", {"containers": [{"name": "c", "image": "i"}]}),
                                 ("/apis/batch/v1", "jobs", {"template": {"spec": {"restartPolicy": "Never",
                                                                                    "containers": [{"name": "c", "image": "i"}]}}}),
                                 ("/apis/apps/v1", "deployments", {"selector": {"matchLabels": {"a": "b"}}, "template": {
                                     "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}})]),
       status=json_values)
def test_any_status_still_prints_as_a_table(http: requests.Session, local_cluster: LocalCluster,
                                            resource: tuple[str, str, dict], status: object) -> None:
    root, plural, spec = resource
    path = f"{root}/namespaces/default/{plural}"
    http.post(url(local_cluster, path), json={"metadata": {"name": "odd-status"}, "spec": spec}, timeout=TIMEOUT)
    http.patch(url(local_cluster, f"{path}/odd-status/status"), data=json.dumps({"status": status}),
               headers={"Content-Type": "application/merge-patch+json"}, timeout=TIMEOUT)
    reply = http.get(url(local_cluster, path), headers={"Accept": TABLE}, timeout=TIMEOUT)
    assert reply.status_code == 200 and reply.json()["kind"] == "Table"


shaped = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["containers", "initContainers", "template", "spec", "metadata", "labels", "name", "image",
                     "ports", "selector", "matchLabels", "restartPolicy", "webhooks", "rules", "clientConfig",
                     "service", "finalizers", "completions", "parallelism", "completionMode", "replicas",
                     "resources", "requests", "data", "involvedObject", "type", "x"]), inner, max_size=5), max_leaves=25)
ANY_KIND = ["/api/v1/namespaces/default/pods", "/apis/batch/v1/namespaces/default/jobs",
            "/apis/apps/v1/namespaces/default/deployments", "/api/v1/namespaces/default/services",
            "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/events", "/api/v1/namespaces",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            "/apis/events.k8s.io/v1/namespaces/default/events", "/apis/scheduling.k8s.io/v1/priorityclasses"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(ANY_KIND), spec=shaped, metadata=shaped, extra=shaped)
def test_objects_of_any_shape_are_refused_or_stored_never_a_server_error(
        http: requests.Session, local_cluster: LocalCluster, path: str, spec: object, metadata: object, extra: object) -> None:
    meta = metadata if isinstance(metadata, dict) else {}
    body = {"metadata": {**meta, "name": "shaped"}, "spec": spec, "webhooks": extra, "data": extra}
    created = http.post(url(local_cluster, path), json=body, timeout=TIMEOUT)
    updated = http.put(url(local_cluster, f"{path}/shaped"), json={**body, "spec": extra}, timeout=TIMEOUT)
    merged = http.patch(url(local_cluster, f"{path}/shaped"), data=json.dumps({"spec": spec, "metadata": metadata}),
                        headers={"Content-Type": "application/merge-patch+json"}, timeout=TIMEOUT)
    strategic = http.patch(url(local_cluster, f"{path}/shaped"), data=json.dumps({"spec": extra}),
                           headers={"Content-Type": "application/strategic-merge-patch+json"}, timeout=TIMEOUT)
    status = http.put(url(local_cluster, f"{path}/shaped/status"), json={**body, "status": extra}, timeout=TIMEOUT)
    listed = http.get(url(local_cluster, path), headers={"Accept": TABLE}, timeout=TIMEOUT)
    deleted = http.delete(url(local_cluster, f"{path}/shaped"), timeout=TIMEOUT)
    for reply in (created, updated, merged, strategic, status, listed, deleted):
        assert reply.status_code < 500, reply.text
