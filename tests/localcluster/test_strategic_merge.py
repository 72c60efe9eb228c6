"""Strategic merge patch, checked against the real kubectl's own implementation (`kubectl patch --local`)."""

from __future__ import annotations

import copy
import json
import re
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo.kubectl import KUBECTL
from localcluster.apiserver.patching.strategic import PatchError, strategic_merge



def kubectl_patch(tmp_path: Path, original: dict[str, Any], patch: dict[str, Any], check: bool = True) -> Any:
    """kubectl's own merge result as a server would store it, or (check=False) its error text."""
    source = tmp_path / "object.json"
    source.write_text(json.dumps(original))
    result = subprocess.run(
        [KUBECTL, "patch", "--local", "-f", str(source), "--type", "strategic", "-p", json.dumps(patch), "-o", "json"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "KUBECONFIG": "/dev/null"})
    if result.returncode != 0 and not check:
        return result.stderr
    assert result.returncode == 0, result.stderr
    return stored(json.loads(result.stdout))


def stored(value: Any) -> Any:
    """What a real server keeps of kubectl's merge result once decoded into its typed object:
    null fields and leftover directives are gone."""
    if isinstance(value, dict):
        return {k: stored(v) for k, v in value.items() if v is not None and not k.startswith("$")}
    if isinstance(value, list):
        return [stored(item) for item in value]
    return value


def container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": f"{name}:1", **fields}


def deployment(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    pod_spec = {"containers": list(containers), **spec}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"},
                         "finalizers": ["a.example.com/x", "b.example.com/y"]},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec}}}


def template(**pod_spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": pod_spec}}}


BASE = deployment(
    container("app", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
              ports=[{"containerPort": 80, "name": "http"}], volumeMounts=[{"name": "data", "mountPath": "/data"}]),
    container("sidecar"),
    volumes=[{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cfg"}}],
    tolerations=[{"key": "gpu", "operator": "Exists"}],
    imagePullSecrets=[{"name": "reg"}],
    nodeSelector={"pool": "gpu"},
)

DEPLOYMENT_CASES = [
    pytest.param(template(containers=[container("new")]), id="a new container is added by name"),
    pytest.param(template(containers=[{"name": "app", "env": [{"name": "C", "value": "3"}]}]),
                 id="an env var is merged into an existing container"),
    pytest.param(template(containers=[{"name": "app", "env": [{"name": "A", "value": "changed"}]}]),
                 id="an env var with the same name is updated in place"),
    pytest.param(template(containers=[{"name": "sidecar", "$patch": "delete"}]), id="a container is deleted"),
    pytest.param(template(containers=[{"$patch": "replace"}, container("only")]),
                 id="the container list is replaced"),
    pytest.param(template(containers=[{"name": "app", "env": [{"name": "B", "$patch": "delete"}]}]),
                 id="an env var is deleted by name"),
    pytest.param(template(containers=[{"name": "app", "ports": [{"containerPort": 9090, "name": "metrics"}]}]),
                 id="ports merge by container port"),
    pytest.param(template(containers=[{"name": "app", "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]}]),
                 id="volume mounts merge by mount path"),
    pytest.param(template(tolerations=[{"key": "spot", "operator": "Exists"}]),
                 id="tolerations have no merge key and are replaced"),
    pytest.param(template(imagePullSecrets=[{"name": "other"}]), id="image pull secrets merge by name"),
    pytest.param(template(volumes=[{"name": "data", "$retainKeys": ["name", "configMap"], "configMap": {"name": "x"}}]),
                 id="a volume switches source with retain keys"),
    pytest.param(template(nodeSelector={"$patch": "delete"}), id="a map is deleted by directive"),
    pytest.param(template(nodeSelector={"$patch": "replace", "zone": "a"}), id="a map is replaced by directive"),
    pytest.param(template(nodeSelector={"pool": None, "zone": "a"}), id="null deletes one key of a map"),
    pytest.param({"metadata": {"labels": {"tier": None, "team": "a"}}}, id="labels are merged and nulls remove them"),
    pytest.param({"metadata": {"finalizers": ["c.example.com/z", "a.example.com/x"]}},
                 id="finalizers merge as a set"),
    pytest.param({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/x"]}},
                 id="a finalizer is removed from the primitive list"),
    pytest.param({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
                 id="retain keys clears rolling update when the strategy becomes recreate"),
    pytest.param(template(**{"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
                             "containers": [{"name": "app", "image": "app:2"}]}),
                 id="set element order reorders the containers"),
    pytest.param(template(**{"$setElementOrder/containers": [{"name": "app"}, {"name": "new"}],
                             "containers": [container("new")]}),
                 id="set element order places a new container and keeps a live only one"),
    pytest.param({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u1"}]}},
                 id="owner references merge by uid"),
    pytest.param({"spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "v": "2"}}}},
                 id="plain fields are set and maps merge"),
    pytest.param({"spec": {"template": {"spec": {"containers": [{"name": "app", "command": ["a", "b"]}]}}}},
                 id="a list without merge strategy inside a container is set"),
    pytest.param({"metadata": {"labels": None}}, id="a whole map is removed by null"),
    pytest.param(template(volumes=[{"$retainKeys": ["name", "emptyDir"], "name": "scratch", "emptyDir": {}}]),
                 id="a new volume sent with retain keys is added without the directive"),
    pytest.param(template(containers=[{"name": "new", "image": None, "env": [{"name": "X", "value": None}]}]),
                 id="nulls inside a new container are dropped"),
    pytest.param(template(containers=[{"name": "app", "image": None}]), id="null removes a field of a container"),
    pytest.param(template(tolerations=[{"key": "spot", "value": None}]), id="nulls inside a replaced list are dropped"),
]


@pytest.mark.parametrize("patch", DEPLOYMENT_CASES)
def test_deployment_patches_match_kubectl(tmp_path: Path, patch: dict[str, Any]) -> None:
    assert strategic_merge(BASE, patch, "apps/v1/Deployment") == kubectl_patch(tmp_path, BASE, patch)


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [container("c")], "initContainers": [container("init")]},
       "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"},
                                                     {"type": "Ready", "status": "False"}]}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": 8080, "name": "http"}]}}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
       "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container("w", env=[
           {"name": "RANK", "value": "0"}])]}}}}
CRONJOB = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
           "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
               "restartPolicy": "Never", "containers": [container("w")]}}}}}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}}
WEBHOOKS = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "m"}, "webhooks": [{"name": "a.example.com", "sideEffects": "None"},
                                                    {"name": "b.example.com", "sideEffects": "None"}]}

OTHER_KINDS = [
    pytest.param(POD, "v1/Pod", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                 id="pod conditions merge by type"),
    pytest.param(POD, "v1/Pod", {"spec": {"initContainers": [{"name": "init", "image": "init:2"}]}},
                 id="init containers merge by name"),
    pytest.param(SERVICE, "v1/Service", {"spec": {"ports": [{"port": 443, "targetPort": 8443, "name": "https"}]}},
                 id="service ports merge by port"),
    pytest.param(JOB, "batch/v1/Job", {"spec": {"template": {"spec": {"containers": [
        {"name": "w", "env": [{"name": "WORLD", "value": "4"}]}]}}}}, id="a job template env merges"),
    pytest.param(CRONJOB, "batch/v1/CronJob", {"spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "containers": [container("extra")]}}}}}}, id="a cron job template container is added"),
    pytest.param(CONFIGMAP, "v1/ConfigMap", {"data": {"a": None, "c": "3"}}, id="configmap data merges"),
    pytest.param(JOB | {"status": {"conditions": [{"type": "Suspended", "status": "True"}]}}, "batch/v1/Job",
                 {"status": {"conditions": [{"type": "Complete", "status": "True"}]}},
                 id="job conditions merge by type"),
    pytest.param(WEBHOOKS, "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration",
                 {"webhooks": [{"name": "b.example.com", "timeoutSeconds": 3}]}, id="webhooks merge by name"),
]


@pytest.mark.parametrize(("original", "kind_key", "patch"), OTHER_KINDS)
def test_other_kinds_match_kubectl(tmp_path: Path, original: dict, kind_key: str, patch: dict) -> None:
    assert strategic_merge(original, patch, kind_key) == kubectl_patch(tmp_path, original, patch)


BAD_PATCHES = [
    pytest.param(template(containers=[{"image": "x"}]), "does not contain declared merge key: name",
                 id="a container without a name"),
    pytest.param(template(containers=["app"]), "expected an object with merge key", id="a container that is a string"),
    pytest.param({"metadata": {"$patch": "explode"}}, "unknown patch type", id="an unknown directive"),
    pytest.param({"metadata": {"$patch": "merge"}}, "unknown patch type: 'merge' in map",
                 id="a merge directive in a map as the apiserver refuses it"),
    pytest.param(template(containers=[{"name": "app", "$patch": "merge"}]), "merging lists cannot yet be specified",
                 id="a merge directive in a list"),
    pytest.param({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}, "not listed in $retainKeys",
                 id="a field missing from retain keys"),
    pytest.param({"spec": {"strategy": {"$retainKeys": "type"}}}, "must be a list", id="retain keys not a list"),
    pytest.param({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}, "must be a list",
                 id="a delete list that is not a list"),
    pytest.param({"metadata": {"finalizers": [{"a": 1}]}}, "must hold plain values",
                 id="objects in a list that merges plain values"),
    pytest.param({"$patch": "delete"}, "deletes the whole object", id="deleting the object itself"),
    pytest.param(template(containers=[{"$patch": []}]), "must be a string", id="a list directive that is a list"),
    pytest.param(template(**{"$setElementOrder/containers": [{"name": "app"}], "containers": [{"name": "new"}]}),
                 "doesn't match the $setElementOrder list", id="a patch item missing from the element order"),
]


@pytest.mark.parametrize(("patch", "message"), BAD_PATCHES)
def test_patches_that_cannot_apply_raise_patch_error(patch: dict, message: str) -> None:
    with pytest.raises(PatchError, match=re.escape(message)):
        strategic_merge(BASE, patch, "apps/v1/Deployment")


def test_a_patch_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(PatchError, match="must be a JSON object"):
        strategic_merge(BASE, ["op"], "apps/v1/Deployment")  # type: ignore[arg-type]


def test_the_original_is_not_modified() -> None:
    before = copy.deepcopy(BASE)
    strategic_merge(BASE, template(containers=[{"name": "app", "image": "x"}]), "apps/v1/Deployment")
    assert BASE == before


KEYS = st.text("abc", max_size=3)
SCALARS = st.booleans() | st.integers() | st.text(max_size=5)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=10)
PATCHES = st.recursive(st.none() | VALUES, lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=10)
PLAIN = st.dictionaries(KEYS, VALUES, max_size=4)
PLAIN_PATCH = st.dictionaries(KEYS, PATCHES, max_size=4)


@settings(max_examples=200)
@given(PLAIN, PLAIN_PATCH)
def test_without_directives_or_merge_keys_it_is_a_json_merge_patch(original: dict, patch: dict) -> None:
    def merge_patch(target: Any, change: Any) -> Any:
        if not isinstance(change, dict):
            return change
        result = dict(target) if isinstance(target, dict) else {}
        for key, value in change.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = merge_patch(result.get(key), value)
        return result

    assert strategic_merge(original, patch, "v1/ConfigMap") == merge_patch(original, patch)


@settings(max_examples=200)
@given(st.lists(st.sampled_from("abcde"), max_size=5, unique=True), st.lists(st.sampled_from("abcdef"), max_size=5))
def test_a_merged_finalizer_list_holds_each_value_once_and_loses_none(live: list[str], added: list[str]) -> None:
    result = strategic_merge({"metadata": {"finalizers": live}}, {"metadata": {"finalizers": added}}, "v1/Pod")
    merged = result["metadata"]["finalizers"]
    assert sorted(merged) == sorted(set(live) | set(added))


DIRECTIVE_KEYS = st.sampled_from(["$patch", "$retainKeys", "$setElementOrder/containers",
                                  "$deleteFromPrimitiveList/finalizers", "containers", "name", "env", "image",
                                  "finalizers", "metadata", "spec", "template", "labels"])
DIRECTIVE_VALUES = st.sampled_from(["replace", "delete", "merge", "app", "sidecar", "x"]) | st.none() | st.integers()
HOSTILE = st.recursive(DIRECTIVE_VALUES, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(DIRECTIVE_KEYS, inner, max_size=4), max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(DIRECTIVE_KEYS, HOSTILE, max_size=4), st.booleans())
def test_hostile_patches_merge_or_raise_patch_error_never_anything_else(pod_spec: dict, nested: bool) -> None:
    patch = template(**pod_spec) if nested else pod_spec
    try:
        result = strategic_merge(BASE, patch, "apps/v1/Deployment")
    except PatchError:
        return
    assert isinstance(result, dict)


CONTAINER_NAMES = st.sampled_from(["app", "sidecar", "proxy"])
ENV = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C"]), "value": st.sampled_from(["1", "2"])}),
               unique_by=lambda e: e["name"], max_size=3)
LIVE_CONTAINERS = st.lists(st.fixed_dictionaries({"name": CONTAINER_NAMES, "image": st.sampled_from(["x:1", "y:1"]),
                                                  "env": ENV}), unique_by=lambda c: c["name"], min_size=1, max_size=3)
PATCH_ENV = st.lists(st.one_of(
    st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C"]), "value": st.sampled_from(["1", "9"])}),
    st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C"]), "$patch": st.just("delete")})),
    unique_by=lambda e: e["name"], max_size=2)
PATCH_CONTAINERS = st.lists(st.one_of(
    st.fixed_dictionaries({"name": CONTAINER_NAMES}, optional={"image": st.sampled_from(["z:2"]) | st.none(),
                                                              "env": PATCH_ENV}),
    st.fixed_dictionaries({"name": CONTAINER_NAMES, "$patch": st.just("delete")})),
    unique_by=lambda c: c["name"], max_size=3)
PATCH_LABELS = st.dictionaries(st.sampled_from(["app", "tier", "team"]), st.none() | st.sampled_from(["a", "b"]),
                               max_size=2)


FINALIZERS = st.lists(st.sampled_from(["a.io/x", "b.io/y", "a.example.com/x"]), unique=True, max_size=3)


@settings(max_examples=30, deadline=None)
@given(LIVE_CONTAINERS, PATCH_CONTAINERS, PATCH_LABELS, st.booleans(), FINALIZERS, FINALIZERS)
def test_random_container_patches_match_kubectl(tmp_path_factory: pytest.TempPathFactory, live: list, patch: list,
                                                labels: dict, ordered: bool, added: list, dropped: list) -> None:
    original = deployment(*live)
    pod_spec: dict[str, Any] = {"containers": patch}
    if ordered:
        pod_spec["$setElementOrder/containers"] = [{"name": c["name"]} for c in reversed(live)]
    metadata: dict[str, Any] = {"labels": labels}
    if added:
        metadata["finalizers"] = added
    dropped = [value for value in dropped if value not in added]  # both at once: Go map order decides
    if dropped:
        metadata["$deleteFromPrimitiveList/finalizers"] = dropped
    change = {"metadata": metadata, **template(**pod_spec)}
    expected = kubectl_patch(tmp_path_factory.mktemp("patch"), original, change, check=False)
    if isinstance(expected, str):  # kubectl refused the patch: so must we
        with pytest.raises(PatchError):
            strategic_merge(original, change, "apps/v1/Deployment")
    else:
        assert strategic_merge(original, change, "apps/v1/Deployment") == expected
