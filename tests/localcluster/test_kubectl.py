"""The real kubectl against the local cluster, the way users drive a real one (the user's kubectl, v1.32, on the
stand-in; the kubectl of its own release on Kubernetes' API server: tests/localcluster_fixtures.py)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from demo.samples_scene import SAMPLES
from tests.localcluster.test_client_api import WIDGET_CRD
from tests.upstream_corpus import CORPUS, corpus_rows

Kubectl = Callable[..., subprocess.CompletedProcess]

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"""

JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: trainer
spec:
  suspend: true  # no pods: on a real control plane, kube-controller-manager's Job controller would make them
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
"""


def appwrapper_files() -> list:
    """The demo's AppWrapper samples, then upstream's (marked, skipped where the corpus is absent)."""
    ours = [pytest.param(p, id=f"demo/samples/{p.parent.name}/{p.name}") for p in sorted(SAMPLES.glob("*/*.yaml"))
            if yaml.safe_load(p.read_text())["kind"] == "AppWrapper"]
    theirs = sorted((CORPUS / "appwrapper").glob("*.yaml")) if CORPUS else []
    return ours + corpus_rows(((f"appwrapper/{p.name}", (p,)) for p in theirs), 1)


@pytest.fixture(scope="module")
def widgets(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=json.dumps(WIDGET_CRD))
    kubectl("wait", "--for=condition=established", "crd/widgets.example.com", "--timeout=10s")


def test_create_then_apply_twice_keeps_one_object_and_updates_it(kubectl: Kubectl, namespace: str) -> None:
    assert "configmap/settings created" in kubectl("-n", namespace, "apply", "-f", "-", input=CONFIGMAP).stdout
    assert "unchanged" in kubectl("-n", namespace, "apply", "-f", "-", input=CONFIGMAP).stdout
    assert "configured" in kubectl("-n", namespace, "apply", "-f", "-", input=CONFIGMAP.replace("fast", "slow")).stdout
    got = json.loads(kubectl("-n", namespace, "get", "configmap", "settings", "-o", "json").stdout)
    assert got["data"] == {"mode": "slow"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]


def test_create_generators_send_protobuf_that_the_server_decodes(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "create", "configmap", "gen", "--from-literal=a=b")
    kubectl("-n", namespace, "create", "job", "gen-job", "--image=busybox")
    kubectl("-n", namespace, "create", "deployment", "gen-deploy", "--image=nginx", "--replicas=2")
    kubectl("-n", namespace, "create", "secret", "generic", "gen-secret", "--from-literal=k=v")
    out = kubectl("-n", namespace, "get", "configmap/gen", "job/gen-job", "deployment/gen-deploy",
                  "-o", "jsonpath={.items[*].metadata.name}").stdout
    assert out.split() == ["gen", "gen-job", "gen-deploy"]


def test_get_prints_the_columns_of_a_real_cluster(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", input=JOB)
    header = kubectl("-n", namespace, "get", "jobs", "-o", "wide").stdout.splitlines()[0].split()
    assert header == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert kubectl("get", "namespaces").stdout.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    yaml_out = yaml.safe_load(kubectl("-n", namespace, "get", "job", "trainer", "-o", "yaml").stdout)
    assert yaml_out["spec"]["template"]["metadata"]["labels"]["job-name"] == "trainer"


def test_label_annotate_and_patch_in_every_format(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", input=CONFIGMAP)
    kubectl("-n", namespace, "label", "configmap", "settings", "team=a")
    kubectl("-n", namespace, "annotate", "configmap", "settings", "note=hi")
    kubectl("-n", namespace, "patch", "configmap", "settings", "--type", "merge", "-p", '{"data":{"b":"2"}}')
    kubectl("-n", namespace, "patch", "configmap", "settings", "--type", "json", "-p",
            '[{"op":"add","path":"/data/c","value":"3"}]')
    kubectl("-n", namespace, "patch", "configmap", "settings", "--type", "strategic", "-p", '{"data":{"d":"4"}}')
    got = json.loads(kubectl("-n", namespace, "get", "configmaps", "-l", "team=a", "-o", "json").stdout)
    item = got["items"][0]
    assert item["data"] == {"mode": "fast", "b": "2", "c": "3", "d": "4"}
    assert item["metadata"]["annotations"]["note"] == "hi"


def test_a_patch_that_does_not_apply_is_refused(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", input=CONFIGMAP)
    result = kubectl("-n", namespace, "patch", "configmap", "settings", "--type", "json", "-p",
                     '[{"op":"replace","path":"/data/missing/deeper","value":"x"}]', check=False)
    assert result.returncode == 1 and result.stderr.startswith("The request is invalid")


def test_describe_shows_the_object_and_its_events(kubectl: Kubectl, namespace: str, kube_api) -> None:
    from kubernetes import client

    kubectl("-n", namespace, "apply", "-f", "-", input=JOB)
    job = client.BatchV1Api(kube_api).read_namespaced_job("trainer", namespace)
    client.CoreV1Api(kube_api).create_namespaced_event(namespace, {
        "metadata": {"name": "trainer.1"}, "reason": "Suspended", "message": "waiting for quota", "type": "Normal",
        "involvedObject": {"kind": "Job", "name": "trainer", "namespace": namespace, "uid": job.metadata.uid},
        "source": {"component": "batchgate"}})
    out = kubectl("-n", namespace, "describe", "job", "trainer").stdout
    assert "Completion Mode:  NonIndexed" in out and "waiting for quota" in out


def test_get_watch_prints_changes_as_they_happen(kubectl: Kubectl, namespace: str) -> None:
    cmd = [*kubectl.command, "-n", namespace, "get", "configmaps", "-w", "--request-timeout=2s"]
    watcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    kubectl("-n", namespace, "create", "configmap", "watched")
    try:
        out, _ = watcher.communicate(timeout=15)
    finally:
        watcher.kill()
    assert "watched" in out


def test_wait_for_a_condition_set_through_the_status_subresource(kubectl: Kubectl, namespace: str, kube_api) -> None:
    from kubernetes import client

    kubectl("-n", namespace, "apply", "-f", "-", input=JOB)
    batch = client.BatchV1Api(kube_api)
    waiter = subprocess.Popen([*kubectl.command, "-n", namespace, "wait", "--for=condition=Reviewed", "job/trainer",
                               "--timeout=10s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    # A condition of the user's own: kube-apiserver refuses a Complete one without the status that goes
    # with it (completionTime, SuccessCriteriaMet), and the Job controller manages the others.
    batch.patch_namespaced_job_status("trainer", namespace, {"status": {"conditions": [
        {"type": "Reviewed", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    out, err = waiter.communicate(timeout=15)
    assert waiter.returncode == 0, err
    assert "condition met" in out


@pytest.mark.parametrize(("cascade", "left"), [
    pytest.param("background", "", id="background cascade removes the pods"),
    pytest.param("foreground", "", id="foreground cascade removes the pods first"),
    pytest.param("orphan", "orphan-pod", id="orphan cascade keeps the pods"),
])
def test_delete_cascade_modes(kubectl: Kubectl, namespace: str, kube_api, cascade: str, left: str) -> None:
    from kubernetes import client

    kubectl("-n", namespace, "apply", "-f", "-", input=JOB)
    job = client.BatchV1Api(kube_api).read_namespaced_job("trainer", namespace)
    client.CoreV1Api(kube_api).create_namespaced_pod(namespace, {"metadata": {"name": "orphan-pod", "ownerReferences": [{
        "apiVersion": "batch/v1", "kind": "Job", "name": "trainer", "uid": job.metadata.uid, "controller": True,
        "blockOwnerDeletion": True}]}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    kubectl("-n", namespace, "delete", "job", "trainer", f"--cascade={cascade}", "--timeout=10s")
    deadline = time.monotonic() + 5
    while True:
        pods = kubectl("-n", namespace, "get", "pods", "-o", "jsonpath={.items[*].metadata.name}").stdout.strip()
        if pods == left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert pods == left
    assert kubectl("-n", namespace, "get", "job", "trainer", check=False).returncode == 1


def test_users_impersonation_and_whoami(kubectl: Kubectl) -> None:
    assert "system:masters" in kubectl("auth", "whoami").stdout
    alice = kubectl("--context", "alice", "auth", "whoami", "-o", "json").stdout
    assert json.loads(alice)["status"]["userInfo"] == {"username": "alice", "uid": "1001",
                                                       "groups": ["system:authenticated"]}
    as_bob = json.loads(kubectl("--as", "bob", "--as-group", "ml", "auth", "whoami", "-o", "json").stdout)
    assert as_bob["status"]["userInfo"]["groups"] == ["ml", "system:authenticated"]
    # A service account impersonated without groups gets its own, as from kube-apiserver.
    as_account = json.loads(kubectl("--as", "system:serviceaccount:team-a:trainer", "auth", "whoami", "-o",
                                    "json").stdout)
    assert as_account["status"]["userInfo"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team-a",
                                                          "system:authenticated"]
    # With no discovery cached, kubectl's own discovery as bob is refused first, and client-go shows
    # that refusal as "Forbidden: unknown" (it does on any cluster). The cache directory is the
    # session's, so whether another test filled it must not matter: fill it here, as admin.
    kubectl("get", "configmaps", "-n", "default")
    refused = kubectl("--context", "alice", "--as", "bob", "get", "configmaps", check=False)
    assert refused.returncode == 1
    assert 'User "alice" cannot impersonate resource "users"' in refused.stderr


def test_api_resources_lists_short_names_and_crds(kubectl: Kubectl, widgets: None) -> None:
    out = kubectl("api-resources").stdout
    # By name and API version: other tests' CRDs may serve a `widgets` of their own group (one still
    # terminating, say), and api-resources lists every group's.
    rows = {(cols[0], cols[-3]): cols for cols in map(str.split, out.splitlines()[1:])}
    assert rows["pods", "v1"][1] == "po" and ("jobs", "batch/v1") in rows
    assert rows["widgets", "example.com/v1"][1:] == ["wd", "example.com/v1", "true", "Widget"]
    assert ("leases", "coordination.k8s.io/v1") in rows
    assert ("customresourcedefinitions", "apiextensions.k8s.io/v1") in rows


def test_custom_resources_print_their_columns_and_explain_their_schema(kubectl: Kubectl, widgets: None,
                                                                         namespace: str) -> None:
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n"
    kubectl("-n", namespace, "apply", "-f", "-", input=widget)
    kubectl("-n", namespace, "apply", "-f", "-", input=widget)
    out = kubectl("-n", namespace, "get", "wd").stdout.splitlines()
    assert out[0].split() == ["NAME", "SIZE", "PHASE"] and out[1].split() == ["w", "3"]
    explained = [line.split() for line in
                 kubectl("explain", "widgets.spec", "--api-version=example.com/v1").stdout.splitlines()]
    assert ["size", "<integer>", "-required-"] in explained and ["color", "<string>"] in explained
    bad = kubectl("-n", namespace, "apply", "-f", "-", input=widget.replace("size: 3", "size: 0"), check=False)
    assert bad.returncode == 1 and "spec.size: Invalid value: 0" in bad.stderr


def test_apply_kustomize_directory(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(CONFIGMAP)
    (tmp_path / "job.yaml").write_text(JOB)
    (tmp_path / "kustomization.yaml").write_text(f"namespace: {namespace}\nresources: [cm.yaml, job.yaml]\n"
                                                 "commonLabels:\n  app: kustomized\n")
    kubectl("apply", "-k", str(tmp_path))
    names = kubectl("-n", namespace, "get", "configmaps,jobs", "-l", "app=kustomized", "-o", "name").stdout.split()
    assert names == ["configmap/settings", "job.batch/trainer"]


# AppWrapper's shape as its CRD declares it: components hold embedded resources of any kind.
APPWRAPPER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "appwrappers.workload.codeflare.dev"},
    "spec": {"group": "workload.codeflare.dev", "scope": "Namespaced",
             "names": {"plural": "appwrappers", "singular": "appwrapper", "kind": "AppWrapper", "shortNames": ["aw"]},
             "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "required": ["components"], "properties": {
                                   "suspend": {"type": "boolean"},
                                   "components": {"type": "array", "items": {"type": "object", "properties": {
                                       "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                                       "podSets": {"type": "array", "items": {"type": "object",
                                                                              "x-kubernetes-preserve-unknown-fields": True}},
                                       "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                                                    "x-kubernetes-preserve-unknown-fields": True}}}}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}


@pytest.mark.parametrize("path", appwrapper_files())
def test_appwrappers_apply_twice_and_keep_their_wrapped_objects(kubectl: Kubectl, namespace: str, path: Path) -> None:
    kubectl("apply", "-f", "-", input=json.dumps(APPWRAPPER_CRD))
    kubectl("-n", namespace, "apply", "-f", str(path))
    assert "unchanged" in kubectl("-n", namespace, "apply", "-f", str(path)).stdout
    sent = yaml.safe_load(path.read_text())
    stored = json.loads(kubectl("-n", namespace, "get", "aw", sent["metadata"]["name"], "-o", "json").stdout)
    assert [c["template"] for c in stored["spec"]["components"]] == [c["template"] for c in sent["spec"]["components"]]


def test_server_side_apply_owns_fields_and_conflicts_with_other_managers(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "create", "configmap", "owned", "--from-literal=mode=fast")
    assert "serverside-applied" in kubectl("-n", namespace, "apply", "--server-side", "-f", "-",
                                           input=CONFIGMAP.replace("settings", "ssa")).stdout
    conflict = kubectl("-n", namespace, "apply", "--server-side", "-f", "-",
                       input=CONFIGMAP.replace("settings", "owned").replace("fast", "slow"), check=False)
    assert conflict.returncode == 1 and 'conflict with "kubectl-create"' in conflict.stderr and ".data.mode" in conflict.stderr
    kubectl("-n", namespace, "apply", "--server-side", "--force-conflicts", "-f", "-",
            input=CONFIGMAP.replace("settings", "owned").replace("fast", "slow"))
    got = json.loads(kubectl("-n", namespace, "get", "configmap", "owned", "-o", "json", "--show-managed-fields").stdout)
    assert got["data"] == {"mode": "slow"}
    assert "kubectl" in [m["manager"] for m in got["metadata"]["managedFields"]]


def test_kubectl_scale_goes_through_the_scale_subresource(kubectl: Kubectl, namespace: str) -> None:
    kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx", "--replicas=1")
    kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=4")
    assert kubectl("-n", namespace, "get", "deployment", "web", "-o", "jsonpath={.spec.replicas}").stdout == "4"
    refused = kubectl("-n", namespace, "scale", "deployment", "web", "--replicas=2", "--current-replicas=3", check=False)
    assert refused.returncode == 1 and "Expected replicas to be 3, was 4" in refused.stderr
    scale = json.loads(kubectl("-n", namespace, "get", "--raw",
                               f"/apis/apps/v1/namespaces/{namespace}/deployments/web/scale").stdout)
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 4} and scale["status"]["selector"] == "app=web"


@pytest.mark.parametrize(("context", "question", "answer"), [
    pytest.param("admin", ["create", "pods"], "yes", id="admin may create pods"),
    pytest.param("alice", ["delete", "jobs.batch"], "no", id="an ordinary user holds nothing where no binding grants it"),
    pytest.param("alice", ["create", "selfsubjectaccessreviews.authorization.k8s.io"], "yes",
                 id="every authenticated user may ask what they may do"),
    pytest.param("alice", ["impersonate", "users"], "no", id="an ordinary user may not impersonate"),
    pytest.param("admin", ["impersonate", "users"], "yes", id="admin may impersonate"),
])
def test_auth_can_i_answers_through_self_subject_access_reviews(kubectl: Kubectl, context: str, question: list[str],
                                                                 answer: str) -> None:
    result = kubectl("--context", context, "auth", "can-i", *question, check=False)
    assert result.stdout.strip() == answer, result.stderr


def test_server_side_dry_run_stores_nothing(kubectl: Kubectl, namespace: str) -> None:
    assert kubectl("-n", namespace, "create", "configmap", "dry", "--dry-run=server", "-o", "name").stdout == "configmap/dry\n"
    assert kubectl("-n", namespace, "get", "configmap", "dry", check=False).returncode == 1
