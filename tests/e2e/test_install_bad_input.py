"""Bad input at install and while running, on the local cluster through the manifests: each gives
a clear status (a pod condition, an Event, a probe message naming the cause) and heals when the
input is put right (issue 13, "Bad input"). One install is shared by the tests in this file.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
from collections.abc import Iterator

import pytest

from batchgate.keys import BREAK_GLASS_ANNOTATION
from certs.authority import CA_CERT, issue_secret_data
from demo.kubectl import Kubectl
from demo.stack import SYSTEM_NAMESPACE, product_status
from tests.e2e.test_install import eventually, installed

GATEWAY = "app.kubernetes.io/name=batchgate-webhook"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with installed(tmp_path_factory.mktemp("bad-input")) as (made, _):
        yield made


def gateway_pods(kubectl: Kubectl) -> list[dict]:
    return kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l", GATEWAY)["items"]


def ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def unhealthy_messages(kubectl: Kubectl) -> list[str]:
    events = kubectl.get_json("events", "-n", SYSTEM_NAMESPACE, "--field-selector", "reason=Unhealthy")["items"]
    return [e.get("message", "") for e in events]


def set_keeper_verbs(kubectl: Kubectl, verbs: list[str]) -> None:
    role = kubectl.get_json("clusterrole", "batchgate-webhook-certs")
    for rule in role["rules"]:
        rule["verbs"] = verbs
    kubectl.run("replace", "-f", "-", stdin=json.dumps(role))


def test_a_cabundle_of_another_ca_the_keeper_cannot_fix_makes_the_gateway_unready_naming_the_cause(
        kubectl: Kubectl) -> None:
    eventually(lambda: product_status(kubectl)[0], "the product Ready: " + product_status(kubectl)[1])
    set_keeper_verbs(kubectl, ["get"])  # the keeper may still read the configurations, not repair them
    other = base64.b64encode(issue_secret_data(["x"], _dt.datetime.now(_dt.timezone.utc), ca_days=3650,
                                                cert_days=365)[CA_CERT]).decode()
    try:
        kubectl.run("patch", "validatingwebhookconfiguration", "batchgate-validating", "--type=json", "-p",
                    json.dumps([{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": other}]))
        eventually(lambda: gateway_pods(kubectl) and not any(ready(p) for p in gateway_pods(kubectl)),
                   "every gateway pod not Ready")
        assert eventually(lambda: [m for m in unhealthy_messages(kubectl)
                                   if "Readiness probe failed" in m and "batchgate-validating" in m
                                   and "caBundle has no CA that verifies the served certificate" in m],
                          "an Unhealthy Event naming the configuration and the cause")
    finally:
        set_keeper_verbs(kubectl, ["get", "update"])
    eventually(lambda: product_status(kubectl)[0], "the keeper repairs the caBundle and the gateway is Ready again: "
               + product_status(kubectl)[1])


def create_pod(kubectl: Kubectl, namespace: str, name: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
           "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    kubectl.run("create", "-f", "-", stdin=json.dumps(pod))


def controller_logs(kubectl: Kubectl) -> list[str]:
    pods = kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l", "app.kubernetes.io/name=batchgate-controller")
    return [kubectl.run("logs", "-n", SYSTEM_NAMESPACE, p["metadata"]["name"]).stdout for p in pods["items"]]


def set_policy(kubectl: Kubectl, text: str, why: str) -> None:
    kubectl.run("patch", "configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy", "--type=merge", "-p", json.dumps(
        {"metadata": {"annotations": {BREAK_GLASS_ANNOTATION: why}}, "data": {"policy.yaml": text}}))


def test_a_broken_policy_at_start_keeps_the_gateway_unready_naming_the_line_and_the_fix_until_it_is_fixed(
        kubectl: Kubectl) -> None:
    eventually(lambda: product_status(kubectl)[0], "the product Ready: " + product_status(kubectl)[1])
    configmap = kubectl.get_json("configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy")
    good = configmap["data"]["policy.yaml"]
    replicas = kubectl.get_json("deployment", "-n", SYSTEM_NAMESPACE, "batchgate-webhook")["spec"]["replicas"]
    broken = "queues:\n  defaultQueueName: [unclosed\n"  # a YAML error, found on line 3
    try:
        # As at an install: the policy stored while no gateway runs (a running one denies it, and
        # with none the edit needs the break-glass annotation), then gateway pods that start with it.
        kubectl.run("scale", "deployment", "-n", SYSTEM_NAMESPACE, "batchgate-webhook", "--replicas=0")
        eventually(lambda: not gateway_pods(kubectl), "the old gateway pods gone")
        set_policy(kubectl, broken, "storing a broken policy with the gateway down")
        kubectl.run("scale", "deployment", "-n", SYSTEM_NAMESPACE, "batchgate-webhook", f"--replicas={replicas}")
        assert eventually(lambda: [m for m in unhealthy_messages(kubectl)
                                   if "Readiness probe failed" in m and "503" in m and "batchgate-policy:3: invalid YAML" in m
                                   and "kubectl edit configmap -n batchgate-system batchgate-policy" in m
                                   and BREAK_GLASS_ANNOTATION in m],
                          "an Unhealthy Event naming the policy's line and the fix")
        started = {p["metadata"]["name"] for p in gateway_pods(kubectl)}
        assert len(started) == replicas and not any(ready(p) for p in gateway_pods(kubectl))
        logs = kubectl.run("logs", "-n", SYSTEM_NAMESPACE, sorted(started)[0], "-c", "webhook").stdout
        assert "not Ready until a valid one arrives" in logs and "batchgate-policy:3: invalid YAML" in logs
        assert eventually(lambda: all("kubectl edit configmap -n batchgate-system batchgate-policy" in log
                                      for log in controller_logs(kubectl)),
                          "every controller logs the policy error and the fix")
        create_pod(kubectl, "default", "unmanaged-while-policy-broken")
        create_pod(kubectl, "kube-system", "system-while-policy-broken")
        set_policy(kubectl, good, "the fix the probe names")  # with no gateway Ready, through break-glass
        eventually(lambda: all(ready(p) for p in gateway_pods(kubectl))
                   and {p["metadata"]["name"] for p in gateway_pods(kubectl)} == started,
                   "the same gateway pods Ready once the policy is fixed")
        assert all(s["restartCount"] == 0 for p in gateway_pods(kubectl) for s in p["status"]["containerStatuses"])
    finally:
        set_policy(kubectl, good, "restoring the policy")
        kubectl.run("scale", "deployment", "-n", SYSTEM_NAMESPACE, "batchgate-webhook", f"--replicas={replicas}")
        for namespace, name in (("default", "unmanaged-while-policy-broken"),
                                ("kube-system", "system-while-policy-broken")):
            kubectl.run("delete", "pod", "-n", namespace, name, "--ignore-not-found", "--wait=false")
    eventually(lambda: product_status(kubectl)[0], "the product Ready again: " + product_status(kubectl)[1])
    kubectl.run("annotate", "configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy", f"{BREAK_GLASS_ANNOTATION}-")
