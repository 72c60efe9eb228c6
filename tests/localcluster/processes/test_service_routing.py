"""We route the API server's webhook calls through a Service to process pods: spread over two
ready pods, failover when one goes, a connection refused at the cluster IP when none is
ready. The webhook is a tiny fixture HTTPS server; then the product's own `batchgate webhook`,
run from a manifest-shaped Deployment, is called through its Service by admission."""

from __future__ import annotations

import datetime as dt
import json
import sys
import textwrap

from kubernetes import client as k8s

from certs.authority import service_names, write_serving_files
from tests.localcluster.processes.conftest import IMAGE
from tests.localcluster.runtime.conftest import eventually

FIXTURE_WEBHOOK = textwrap.dedent("""
    import base64, json, os, ssl
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    NAME = os.environ["POD_NAME"]
    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            patch = [{"op": "add", "path": "/data", "value": {"served-by": NAME}}]
            body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
                "uid": review["request"]["uid"], "allowed": True, "patchType": "JSONPatch",
                "patch": base64.b64encode(json.dumps(patch).encode()).decode()}}).encode()
            self.send_response(200); self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        def log_message(self, *args): pass
    server = ThreadingHTTPServer((os.environ["POD_IP"], 8443), Hook)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain("/certs/tls.crt", "/certs/tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("serving", flush=True)
    server.serve_forever()
""")
POD_ENV = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]


def tls_secret(pk, tmp_path, service: str, namespace: str) -> str:
    files = write_serving_files(tmp_path / service, service_names(service, namespace), dt.datetime.now(dt.timezone.utc))
    pk("create", "secret", "tls", f"{service}-tls", "-n", namespace, f"--cert={files.cert}", f"--key={files.key}")
    return files.ca_bundle


def deployment(name: str, namespace: str, container: dict, replicas: int, secret: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "terminationGracePeriodSeconds": 5,
                         "containers": [{"image": IMAGE, "volumeMounts": [{"name": "certs", "mountPath": "/certs",
                                                                           "readOnly": True}], **container}],
                         "volumes": [{"name": "certs", "secret": {"secretName": secret}}]}}}}


def service(name: str, namespace: str, target: int | str) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"app": name}, "ports": [{"name": "https", "port": 443, "targetPort": target}]}}


def mutating(name: str, svc: str, service_ns: str, target_ns: str, ca_bundle: str, path: str,
             resources: list[str]) -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": "Fail", "timeoutSeconds": 10,
                          "clientConfig": {"service": {"name": svc, "namespace": service_ns, "path": path, "port": 443},
                                           "caBundle": ca_bundle},
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": target_ns}},
                          "rules": [{"operations": ["CREATE"], "apiGroups": ["", "batch"], "apiVersions": ["v1"],
                                     "resources": resources}]}]}


def apply(pk, obj: dict) -> None:
    pk("apply", "-f", "-", input=json.dumps(obj))


def ready_pods(proc_api, namespace: str, app: str) -> list:
    pods = k8s.CoreV1Api(proc_api).list_namespaced_pod(namespace, label_selector=f"app={app}").items
    return [p for p in pods if not p.metadata.deletion_timestamp and any(
        c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]


def test_webhook_calls_spread_over_ready_pods_fail_over_and_report_no_endpoints(pk, proc_api, pns, tmp_path):
    bundle = tls_secret(pk, tmp_path, "hook", pns)
    apply(pk, deployment("hook", pns, {"name": "hook", "command": [sys.executable, "-u", "-c", FIXTURE_WEBHOOK],
                                       "env": POD_ENV, "ports": [{"name": "https", "containerPort": 8443}],
                                       "readinessProbe": {"tcpSocket": {"port": "https"}, "periodSeconds": 1}},
                          2, "hook-tls"))
    apply(pk, service("hook", pns, "https"))
    eventually(lambda: len(ready_pods(proc_api, pns, "hook")) == 2, timeout=60)
    apply(pk, mutating(f"hook-{pns}", "hook", pns, pns, bundle, "/mutate", ["configmaps"]))
    core = k8s.CoreV1Api(proc_api)
    eventually(lambda: core.read_namespaced_endpoints("hook", pns).subsets[0].addresses and
               len(core.read_namespaced_endpoints("hook", pns).subsets[0].addresses) == 2, timeout=30)
    served = {pk("create", "configmap", f"c{i}", "-n", pns, "-o", "jsonpath={.data.served-by}").stdout for i in range(6)}
    assert served == {p.metadata.name for p in ready_pods(proc_api, pns, "hook")}

    # One pod is deleted: every call meanwhile still succeeds (a refused endpoint is passed over,
    # a terminating pod leaves the ready addresses), served by the other pod or its replacement.
    victim = sorted(served)[0]
    pk("delete", "pod", victim, "-n", pns, "--wait=false")
    during = {pk("create", "configmap", f"d{i}", "-n", pns, "-o", "jsonpath={.data.served-by}").stdout for i in range(8)}
    assert all(during)  # every create was admitted (kubectl would have failed otherwise)
    eventually(lambda: len(ready_pods(proc_api, pns, "hook")) == 2 and
               victim not in {p.metadata.name for p in ready_pods(proc_api, pns, "hook")}, timeout=60)

    pk("patch", "deployment", "hook", "-n", pns, "-p", json.dumps({"spec": {"replicas": 0}}))
    eventually(lambda: not ready_pods(proc_api, pns, "hook") and not (core.read_namespaced_endpoints("hook", pns).subsets
                                                                      or [None])[0], timeout=60)
    denied = pk("create", "configmap", "none", "-n", pns, check=False)
    assert denied.returncode != 0
    cluster_ip = core.read_namespaced_service("hook", pns).spec.cluster_ip
    assert (f'failed calling webhook "hook-{pns}.example.com": failed to call webhook: Post '
            f'"https://hook.{pns}.svc:443/mutate?timeout=10s": dial tcp {cluster_ip}:443: connect: connection refused'
            ) in denied.stderr
    pk("delete", "mutatingwebhookconfiguration", f"hook-{pns}")


def test_the_product_webhook_runs_from_a_manifest_shaped_deployment_and_admits_through_its_service(
        pk, proc_api, pns, tmp_path):
    bundle = tls_secret(pk, tmp_path, "batchgate-webhook", pns)
    gateway = {"name": "webhook", "args": ["webhook", "--cert-dir", "/certs", "--host", "$(POD_IP)", "--port", "9443",
                                           "--workers", "1"],
               "env": POD_ENV, "ports": [{"containerPort": 9443, "name": "https"}],
               "readinessProbe": {"httpGet": {"path": "/readyz", "port": 9443, "scheme": "HTTPS"}, "periodSeconds": 1},
               "livenessProbe": {"httpGet": {"path": "/healthz", "port": 9443, "scheme": "HTTPS"}}}
    apply(pk, deployment("batchgate-webhook", pns, gateway, 1, "batchgate-webhook-tls"))
    apply(pk, service("batchgate-webhook", pns, 9443))
    eventually(lambda: len(ready_pods(proc_api, pns, "batchgate-webhook")) == 1, timeout=120)
    team = f"{pns}-team"
    pk("create", "namespace", team)
    apply(pk, mutating(f"batchgate-{pns}", "batchgate-webhook", pns, team, bundle, "/mutate", ["jobs"]))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": team},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "main", "image": "busybox"}]}}}}
    created = pk("create", "-f", "-", "-o", "json", input=json.dumps(job))
    stored = json.loads(created.stdout)
    # The gateway stamps who submitted it, from the AdmissionReview's userInfo (kubectl runs as admin).
    assert {k: v for k, v in stored["metadata"]["labels"].items() if k.startswith("workload.codeflare.dev/user")} == {
        "workload.codeflare.dev/user": "admin", "workload.codeflare.dev/userid": "admin-uid"}
    logs = pk("logs", "-n", pns, "deploy/batchgate-webhook").stdout
    assert "train" in logs, logs
    pk("delete", "mutatingwebhookconfiguration", f"batchgate-{pns}")
