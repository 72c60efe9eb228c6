"""We test what each volume kind holds for a process pod, its mounts, the FailedMount messages, and
the sandbox's bind mounts: volumes parents first, the image's own paths kept visible under them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localcluster.sim.container_env import PodFacts
from localcluster.sim.sandbox_layout import BindMount, layout
from localcluster.sim.volumes import (
    SERVICE_ACCOUNT_DIR,
    MountError,
    automounts_token,
    mounts,
    project,
)

FACTS = PodFacts("127.1.0.7", "10.0.0.1", {})
OBJECTS = {("ConfigMap", "team", "cfg"): {"a.yaml": b"a: 1", "b": b"2"},
           ("Secret", "team", "tls"): {"tls.crt": b"CERT", "tls.key": b"KEY"}}
POD = {"metadata": {"name": "p", "namespace": "team", "uid": "u-1", "labels": {"app": "x"}},
       "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1500m"}}}]}}


def files(volume):
    projection = project(POD, volume, FACTS, lambda kind, ns, name: OBJECTS.get((kind, ns, name)),
                         lambda audience, seconds: f"token-for-{audience or 'api'}-{seconds}")
    return {f.path: (f.data, oct(f.mode)) for f in projection.files}


@pytest.mark.parametrize(("volume", "expected"), [
    pytest.param({"secret": {"secretName": "tls"}}, {"tls.crt": (b"CERT", "0o644"), "tls.key": (b"KEY", "0o644")},
                 id="a secret's keys with the default mode"),
    pytest.param({"configMap": {"name": "cfg", "defaultMode": 0o600, "items": [{"key": "b", "path": "dir/b.txt"},
                                                                              {"key": "a.yaml", "path": "a", "mode": 0o400}]}},
                 {"dir/b.txt": (b"2", "0o600"), "a": (b"a: 1", "0o400")}, id="configmap items with modes"),
    pytest.param({"configMap": {"name": "gone", "optional": True}}, {}, id="an optional missing configmap is empty"),
    pytest.param({"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                                            {"path": "cpu", "resourceFieldRef": {"containerName": "c",
                                                                                 "resource": "limits.cpu",
                                                                                 "divisor": "1m"}}]}},
                 {"labels": (b'app="x"', "0o644"), "cpu": (b"1500", "0o644")}, id="downward API files"),
    pytest.param({"projected": {"sources": [{"serviceAccountToken": {"path": "token", "audience": "vault",
                                                                     "expirationSeconds": 900}},
                                            {"secret": {"name": "tls", "items": [{"key": "tls.crt", "path": "ca"}]}},
                                            {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {
                                                "fieldPath": "metadata.namespace"}}]}}]}},
                 {"token": (b"token-for-vault-900", "0o644"), "ca": (b"CERT", "0o644"), "ns": (b"team", "0o644")},
                 id="a projected volume of several sources"),
    pytest.param({"emptyDir": {}}, {}, id="an empty dir starts empty"),
])
def test_volume_contents(volume, expected):
    assert files({"name": "v", **volume}) == expected


@pytest.mark.parametrize(("volume", "message"), [
    pytest.param({"secret": {"secretName": "missing"}}, 'volume "v" : secret "missing" not found', id="a missing secret"),
    pytest.param({"configMap": {"name": "cfg", "items": [{"key": "zz", "path": "z"}]}},
                 "configmap references non-existent config key: zz", id="an item key the configmap lacks"),
    pytest.param({"configMap": {"name": "cfg", "items": [{"key": "b", "path": "../escape"}]}}, "may not contain",
                 id="a path leaving the volume"),
    pytest.param({"hostPath": {"path": "/"}}, "not supported", id="a kind the local kubelet does not mount"),
])
def test_volumes_that_cannot_be_set_up_fail_the_mount(volume, message):
    with pytest.raises(MountError, match=message):
        files({"name": "v", **volume})


def test_mounts_are_read_only_for_file_volumes_and_add_the_service_account_files():
    pod = {"spec": {"volumes": [{"name": "certs", "secret": {"secretName": "tls"}}, {"name": "scratch", "emptyDir": {}}]}}
    container = {"name": "c", "volumeMounts": [{"name": "certs", "mountPath": "/certs"},
                                               {"name": "scratch", "mountPath": "/tmp/x", "subPath": "sub"}]}
    got = [(m.volume, m.target, m.sub_path, m.read_only) for m in mounts(pod, container, True)]
    assert got == [("certs", "/certs", "", True), ("scratch", "/tmp/x", "sub", False),
                   ("kube-api-access", SERVICE_ACCOUNT_DIR, "", True)]


@pytest.mark.parametrize(("pod_says", "account_says", "expected"), [
    pytest.param(None, None, True, id="tokens are mounted by default"),
    pytest.param(None, False, False, id="the service account can turn it off"),
    pytest.param(True, False, True, id="the pod's word wins"),
])
def test_automount(pod_says, account_says, expected):
    pod = {"spec": {} if pod_says is None else {"automountServiceAccountToken": pod_says}}
    account = None if account_says is None else {"automountServiceAccountToken": account_says}
    assert automounts_token(pod, account) is expected


def volume(target, read_only=False):
    return BindMount(f"/kubelet/pods/u/volumes{target}", target, read_only)


def kept(path):
    return BindMount(path, path, True)


IMAGE = ("/tmp/x", "/tmp/x/.venv", "/tmp/x/.venv/bin", "/opt/python/3.11", "/opt/python/3.11/bin")


@pytest.mark.parametrize(("volumes", "expected"), [
    pytest.param([volume("/tmp")], [volume("/tmp"), kept("/tmp/x")],
                 id="an emptyDir at /tmp over a checkout under /tmp: the checkout is mounted back on top, once"),
    pytest.param([volume("/certs", True)], [volume("/certs", True)], id="a volume above no image path adds nothing"),
    pytest.param([volume("/tmp/x")], [volume("/tmp/x")],
                 id="a volume mounted at an image path itself hides it, as it would an image directory"),
    pytest.param([volume("/tmp/x/.venv")], [volume("/tmp/x/.venv")],
                 id="a volume inside the image hides what is below it, image paths included"),
    pytest.param([volume("/tmp/x/.venv/cache"), volume("/tmp")],
                 [volume("/tmp"), kept("/tmp/x"), volume("/tmp/x/.venv/cache")],
                 id="a volume inside the image is mounted after the image path mounted back above it"),
    pytest.param([volume("/tmp"), volume("/tmp/x/data"), volume("/tmp/x")],
                 [volume("/tmp"), volume("/tmp/x"), volume("/tmp/x/data")],
                 id="the image path a volume names is not mounted back, and parents go first"),
    pytest.param([volume("/opt")], [volume("/opt"), kept("/opt/python/3.11")],
                 id="the interpreter's install under a volume is mounted back"),
    pytest.param([volume("/tmp/"), volume("/var/run"), volume("/var/run/secrets/sa", True)],
                 [volume("/tmp/"), volume("/var/run"), kept("/tmp/x"), volume("/var/run/secrets/sa", True)],
                 id="paths are compared by their parts, trailing slashes aside"),
])
def test_the_sandbox_keeps_the_images_own_files_visible_under_volumes(volumes, expected):
    assert layout(volumes, IMAGE) == expected


@given(st.lists(st.sampled_from(["/tmp", "/tmp/x", "/tmp/x/.venv", "/tmp/x/y", "/opt", "/opt/python/3.11/lib",
                                 "/var/run", "/var/run/s"]), unique=True))
def test_every_mount_comes_after_the_mounts_above_it_and_every_volume_is_made(targets):
    got = layout([volume(t) for t in targets], IMAGE)
    assert [m for m in got if m.source != m.target] == sorted((volume(t) for t in targets),
                                                             key=lambda m: m.target.count("/"))
    for i, m in enumerate(got):
        assert not any(other.target.startswith(m.target.rstrip("/") + "/") for other in got[:i])
