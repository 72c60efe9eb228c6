"""Protobuf bodies: what the real kubectl v1.32 sends decodes to exactly the JSON it would print."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localcluster.apiserver.protobuf import ProtobufError, decode
from localcluster.apiserver.protobuf.decoder import SCALARS, SCHEMA, WRAPPERS
from tests.localcluster.kubectl_capture import CaptureServer


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CaptureServer]:
    workdir = tmp_path_factory.mktemp("capture")
    with CaptureServer(workdir) as server:
        yield server


@pytest.fixture(scope="module")
def tls_pair(capture: CaptureServer) -> tuple[Path, Path]:
    pki = capture.workdir / "pki"
    return pki / "tls.crt", pki / "tls.key"


def sent_body(capture: CaptureServer, *args: str) -> bytes:
    before = len(capture.requests)
    result = capture.kubectl(*args)
    assert result.returncode == 0, result.stderr
    posts = [r for r in capture.protobuf_posts() if r in capture.requests[before:]]
    assert len(posts) == 1, [r.path for r in capture.requests[before:]]
    return posts[0].body


def printed_json(capture: CaptureServer, *args: str) -> dict:
    result = capture.kubectl(args[0], "--dry-run=client", "-o", "json", *args[1:])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


GENERATORS = [
    pytest.param(["create", "namespace", "team-a"], id="a namespace"),
    pytest.param(["create", "configmap", "cm", "--from-literal=a=b", "--from-literal=empty="],
                 id="a configmap with data including an empty value"),
    pytest.param(["create", "secret", "generic", "s", "--from-literal=k=caf\u00e9 \u2603", "--type=Opaque"],
                 id="a generic secret whose bytes come back as base64"),
    pytest.param(["create", "secret", "docker-registry", "r", "--docker-server=x", "--docker-username=u",
                  "--docker-password=p"], id="a docker registry secret"),
    pytest.param(["create", "serviceaccount", "sa"], id="a service account"),
    pytest.param(["create", "service", "clusterip", "svc", "--tcp=80:8080", "--tcp=443:https"],
                 id="a service with int and named target ports"),
    pytest.param(["create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30080"],
                 id="a node port service"),
    pytest.param(["create", "service", "clusterip", "headless", "--clusterip=None"], id="a headless service"),
    pytest.param(["create", "quota", "q", "--hard=cpu=1500m,memory=1Gi,pods=2", "--scopes=BestEffort"],
                 id="a resource quota whose quantities stay strings"),
    pytest.param(["create", "job", "j", "--image=busybox", "--", "sh", "-c", "echo hi"],
                 id="a job with a command"),
    pytest.param(["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--restart=OnFailure"],
                 id="a cron job"),
    pytest.param(["create", "deployment", "web", "--image=nginx", "--port=80", "--replicas=3"],
                 id="a deployment with a port and replicas"),
    pytest.param(["create", "deployment", "idle", "--image=nginx", "--replicas=0"],
                 id="a deployment keeps replicas zero because it is a pointer"),
    pytest.param(["create", "priorityclass", "high", "--value=1000", "--description=d",
                  "--preemption-policy=Never"], id="a priority class"),
    pytest.param(["create", "priorityclass", "zero", "--value=0", "--global-default"],
                 id="a priority class of value zero keeps the value"),
    pytest.param(["create", "poddisruptionbudget", "pdb", "--selector=app=x", "--min-available=50%"],
                 id="a disruption budget with a percentage"),
    pytest.param(["create", "rolebinding", "rb", "--clusterrole=view", "--user=alice",
                  "--serviceaccount=default:sa"], id="a role binding with subjects"),
    pytest.param(["create", "clusterrolebinding", "crb", "--clusterrole=view", "--group=g"],
                 id="a cluster role binding"),
]


@pytest.mark.parametrize("args", GENERATORS)
def test_kubectl_create_body_decodes_to_what_kubectl_prints(capture: CaptureServer, args: list[str]) -> None:
    assert decode(sent_body(capture, *args)) == printed_json(capture, *args)


def test_tls_secret_carries_the_pem_files_as_base64(capture: CaptureServer, tls_pair: tuple[Path, Path]) -> None:
    cert, key = tls_pair
    args = ["create", "secret", "tls", "t", f"--cert={cert}", f"--key={key}"]
    assert decode(sent_body(capture, *args)) == printed_json(capture, *args)


def test_auth_whoami_sends_an_empty_self_subject_review(capture: CaptureServer) -> None:
    before = len(capture.requests)
    capture.kubectl("auth", "whoami")
    (post,) = [r for r in capture.requests[before:] if r.method == "POST"]
    assert post.path == "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    assert decode(post.body) == {
        "kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None}, "status": {"userInfo": {}},
    }


def test_create_token_sends_a_token_request_with_its_bound_object(capture: CaptureServer) -> None:
    before = len(capture.requests)
    capture.kubectl("create", "token", "robot", "--duration=1h", "--audience=a", "--audience=b",
                    "--bound-object-kind=Pod", "--bound-object-name=p", "--bound-object-uid=u-1")
    (post,) = [r for r in capture.requests[before:] if r.method == "POST"]
    assert post.path.startswith("/api/v1/namespaces/default/serviceaccounts/robot/token")
    assert decode(post.body) == {
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": {"creationTimestamp": None},
        "spec": {"audiences": ["a", "b"], "expirationSeconds": 3600,
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u-1"}},
        "status": {"token": "", "expirationTimestamp": None},
    }


# A small encoder for the fields kubectl's generators never set (times, string IntOrStrings,
# negative numbers, packed lists, nested quantities).
def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tag_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def tag_int(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def envelope(api_version: str, kind: str, raw: bytes, encoding: str = "") -> bytes:
    type_meta = tag_bytes(1, api_version.encode()) + tag_bytes(2, kind.encode())
    return b"k8s\x00" + tag_bytes(1, type_meta) + tag_bytes(2, raw) + tag_bytes(3, encoding.encode())


def test_pod_fields_beyond_the_generators_decode_to_their_json_forms() -> None:
    meta = tag_bytes(1, b"p") + tag_bytes(9, tag_int(1, 1_700_000_000)) + tag_int(10, 0)
    probe = tag_bytes(1, tag_bytes(2, tag_bytes(1, b"/healthz") + tag_bytes(2, tag_int(1, 1) + tag_bytes(3, b"http"))))
    resources = tag_bytes(1, tag_bytes(1, b"nvidia.com/gpu") + tag_bytes(2, tag_bytes(1, b"8")))
    env = tag_bytes(1, b"RANK") + tag_bytes(3, tag_bytes(1, tag_bytes(2, b"metadata.annotations['rank']")))
    container = tag_bytes(1, b"c") + tag_bytes(7, env) + tag_bytes(8, resources) + tag_bytes(10, probe)
    security = tag_bytes(4, varint(1000) + varint(2000)) + tag_int(2, -1)
    toleration = tag_bytes(1, b"gpu") + tag_bytes(2, b"Exists") + tag_int(5, 0)
    spec = tag_bytes(2, container) + tag_bytes(14, security) + tag_bytes(22, toleration)
    body = envelope("v1", "Pod", tag_bytes(1, meta) + tag_bytes(2, spec))
    assert decode(body) == {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "p", "deletionTimestamp": "2023-11-14T22:13:20Z", "deletionGracePeriodSeconds": 0},
        "spec": {
            "containers": [{
                "name": "c",
                "env": [{"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['rank']"}}}],
                "resources": {"limits": {"nvidia.com/gpu": "8"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
            }],
            "securityContext": {"supplementalGroups": [1000, 2000], "runAsUser": -1},
            "tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 0}],
        },
    }


BAD_BODIES = [
    pytest.param(b'{"kind":"Namespace"}', "magic number", id="a JSON body is not protobuf"),
    pytest.param(b"k8s\x00\x0a\x05\x0a\x02v1", "past the end", id="a truncated envelope"),
    pytest.param(envelope("v1", "Node", b""), "Node in v1 are not supported", id="a kind we have no schema for"),
    pytest.param(envelope("example.com/v1", "Widget", b""), "not supported", id="a custom resource"),
    pytest.param(envelope("v1", "Namespace", b"", encoding="gzip"), "gzip", id="a compressed body"),
    pytest.param(envelope("v1", "ConfigMap", tag_bytes(99, b"x")), "field 99 of ConfigMap",
                 id="a field we do not know that carries data"),
    pytest.param(envelope("v1", "ConfigMap", tag_int(1, 5)), "should be length-delimited",
                 id="metadata sent as a number"),
    pytest.param(envelope("v1", "ConfigMap", tag_bytes(1, tag_bytes(1, b"\xff\xfe"))), "field 1 of ObjectMeta",
                 id="a name that is not UTF-8"),
    pytest.param(b"k8s\x00\x0f", "wire type 7", id="an invalid wire type"),
]


@pytest.mark.parametrize(("body", "message"), BAD_BODIES)
def test_bodies_we_cannot_read_raise_a_protobuf_error_that_says_why(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        decode(body)


def test_unknown_fields_that_carry_nothing_are_tolerated() -> None:
    body = envelope("v1", "ConfigMap", tag_bytes(1, tag_bytes(1, b"cm")) + tag_bytes(42, b"") + tag_int(43, 0))
    assert decode(body) == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm"}}


def test_every_message_the_schema_names_is_described() -> None:
    named = {spec.type for specs in SCHEMA.values() for spec in specs.values()}
    assert named - SCHEMA.keys() - SCALARS - WRAPPERS == set()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(["Namespace", "ConfigMap", "Secret", "Deployment", "Job", "Pod"]))
def test_arbitrary_bytes_decode_or_raise_protobuf_error_never_anything_else(raw: bytes, kind: str) -> None:
    api_version = {"Deployment": "apps/v1", "Job": "batch/v1"}.get(kind, "v1")
    try:
        result = decode(envelope(api_version, kind, raw))
    except ProtobufError:
        return
    assert result["kind"] == kind


WIRE_FIELDS = st.recursive(
    st.tuples(st.integers(1, 45), st.integers(0, 2**64 - 1)).map(lambda f: tag_int(*f))
    | st.tuples(st.integers(1, 45), st.binary(max_size=12)).map(lambda f: tag_bytes(*f)),
    lambda inner: st.tuples(st.integers(1, 45), st.lists(inner, max_size=5)).map(
        lambda f: tag_bytes(f[0], b"".join(f[1]))),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(WIRE_FIELDS, max_size=6),
       st.sampled_from([("v1", "Pod"), ("apps/v1", "Deployment"), ("batch/v1", "Job"), ("v1", "Service"),
                        ("v1", "Secret"), ("authentication.k8s.io/v1", "SelfSubjectReview")]))
def test_well_formed_wire_of_any_shape_decodes_or_raises_protobuf_error(raw: list[bytes],
                                                                         kind: tuple[str, str]) -> None:
    try:
        result = decode(envelope(kind[0], kind[1], b"".join(raw)))
    except ProtobufError:
        return
    json.dumps(result)  # always plain JSON
