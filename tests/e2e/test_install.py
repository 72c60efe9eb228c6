"""The install as a user does it, end to end: an empty cluster (the real control plane when it is
built, else the stand-in: tests/clusters.py) that runs the product's image as real pods, `kubectl
apply -k manifests/local`, alice's AppWrapper through the gateway pods and the controller pods;
then, on that one install, disruptions and bad input, each healed. The documented upgrade and
`kubectl delete -k manifests/local -l ...`, which must leave users' objects and the third-party
CRDs alone, run in test_install_startup.py on a fresh install of their own.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from batchgate.keys import BREAK_GLASS_ANNOTATION, RENEW_ANNOTATION, RENEWED_ANNOTATION
from certs.authority import CA_CERT, issue_secret_data
from controller.decisions.leader_election import LeaseTiming
from demo.kubectl import Kubectl
from demo.stack import DEMO_MANIFESTS, LOCAL_OVERLAY, SYSTEM_NAMESPACE, install_product, local_image, product_status
from localcluster.runner import LocalCluster
from localcluster.sim.nodes import nodes_from_flags
from realcluster.cluster import RealCluster
from tests import clusters

WAIT_SECONDS = 120.0
STREAM_SECONDS = 16.0
THIRD_PARTY_CRDS = ("pytorchjobs.kubeflow.org", "rayjobs.ray.io", "rayclusters.ray.io")


def eventually(probe: Any, what: str, timeout: float = WAIT_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.5)


@contextmanager
def installed(workdir: Path) -> Iterator[tuple[Kubectl, dict[str, str]]]:
    """An empty process-pod cluster, then the install as a user makes it: `kubectl apply -k
    manifests/local` until every pod is Ready and every caBundle injected, then the demo's teams
    and queues. Also the third-party CRDs' uids from before the install."""
    with installed_cluster(workdir) as (_, kubectl, crds_before):
        yield kubectl, crds_before


@contextmanager
def installed_cluster(workdir: Path, install: Callable[[Kubectl], object] = install_product
                      ) -> Iterator[tuple[LocalCluster | RealCluster, Kubectl, dict[str, str]]]:
    """`installed`, with the cluster itself (for the faults only a control plane can have); `install`
    makes the install (the chart's test: `helm install`) and returns once every pod is Ready."""
    with clusters.cluster(workdir / "cluster", users_file=DEMO_MANIFESTS / "users.yaml",
                          nodes=nodes_from_flags(4, "32", "256Gi", 8), run_images=[local_image()]) as (cluster, kubectl):
        crds_before = third_party_crds(kubectl)
        install(kubectl)
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "teams.yaml"))
        kubectl.run("apply", "-f", str(DEMO_MANIFESTS / "queues.yaml"))
        yield cluster, kubectl, crds_before


def third_party_crds(kubectl: Kubectl) -> dict[str, str]:
    return {name: kubectl.get_json("crd", name)["metadata"]["uid"] for name in THIRD_PARTY_CRDS}


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, dict[str, str]]]:
    """One installed cluster for the tests that disturb the product and check it heals (any order)."""
    with installed(tmp_path_factory.mktemp("install")) as made:
        yield made


@pytest.fixture
def kubectl(install: tuple[Kubectl, dict[str, str]]) -> Kubectl:
    return install[0]


def alice_appwrapper(name: str) -> dict[str, Any]:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-job"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
    return {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": "team-a"}, "spec": {"components": [{"template": job}]}}


def test_apply_brings_every_product_pod_ready_and_alice_s_appwrapper_is_mutated_and_admitted(
        install: tuple[Kubectl, dict[str, str]]) -> None:
    kubectl, crds_before = install
    # Ready after the install (the fixture's wait), and again after any test before this one that disturbed it.
    eventually(lambda: product_status(kubectl)[0], "every product pod Ready: " + product_status(kubectl)[1])
    alice_s_first_appwrapper_is_mutated_and_admitted(kubectl)
    assert third_party_crds(kubectl) == crds_before


def alice_s_first_appwrapper_is_mutated_and_admitted(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", user="alice", stdin=json.dumps(alice_appwrapper("alice-first")))
    aw = kubectl.get_json("appwrapper", "-n", "team-a", "alice-first", user="alice")
    labels = aw["metadata"].get("labels", {})
    assert labels.get("workload.codeflare.dev/user") == "alice", aw["metadata"]
    assert labels.get("kueue.x-k8s.io/queue-name") == "default-queue", aw["metadata"]

    def admitted() -> bool:
        workloads = kubectl.get_json("workloads", "-n", "team-a")["items"]
        return any(c["type"] == "Admitted" and c["status"] == "True"
                   for w in workloads for c in w.get("status", {}).get("conditions", []))
    eventually(admitted, "alice's AppWrapper admitted by the controller pods (kubectl get workloads -n team-a)")


def delete_one_gateway_pod(kubectl: Kubectl) -> None:
    victim = kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l", "app.kubernetes.io/name=batchgate-webhook")
    kubectl.run("delete", "pod", "-n", SYSTEM_NAMESPACE, victim["items"][0]["metadata"]["name"], "--wait=false")


def rollout_restart(kubectl: Kubectl) -> None:
    kubectl.run("rollout", "restart", "-n", SYSTEM_NAMESPACE, "deployment/batchgate-webhook")


DISRUPTIONS = {"one gateway pod deleted": delete_one_gateway_pod,
               "kubectl rollout restart deployment/batchgate-webhook": rollout_restart}
"""What the stream test asserts zero failed admissions for."""


def stream_during(kubectl: Kubectl, disrupt: Callable[[Kubectl], None],
                  seconds: float) -> tuple[int, int, list[str]]:
    """Submissions, failures and the first failure messages while `disrupt` happens."""
    stop = threading.Event()
    counts = {"sent": 0, "failed": 0}
    errors: list[str] = []

    def submit() -> None:
        while not stop.is_set():
            done = kubectl.run("create", "--dry-run=server", "-f", "-", user="alice", check=False,
                               stdin=json.dumps(alice_appwrapper(f"stream-{counts['sent']}")))
            counts["sent"] += 1
            if done.returncode != 0:
                counts["failed"] += 1
                errors.append(done.stderr.strip()[-300:])

    submitter = threading.Thread(target=submit)
    submitter.start()
    time.sleep(seconds / 4)
    disrupt(kubectl)
    time.sleep(seconds * 3 / 4)
    stop.set()
    submitter.join()
    return counts["sent"], counts["failed"], errors[:3]


@pytest.mark.parametrize("what", list(DISRUPTIONS))
def test_a_disrupted_gateway_fails_no_admission_in_a_steady_stream(kubectl: Kubectl, what: str) -> None:
    sent, failed, errors = stream_during(kubectl, DISRUPTIONS[what], STREAM_SECONDS)
    assert sent and not failed, errors
    kubectl.run("rollout", "status", "-n", SYSTEM_NAMESPACE, "deployment/batchgate-webhook", "--timeout=120s")
    eventually(lambda: product_status(kubectl)[0], "the gateway whole again: " + product_status(kubectl)[1])


def bundles(kubectl: Kubectl) -> set[str]:
    """Every caBundle in the product's webhook configurations."""
    return {h["clientConfig"].get("caBundle", "")
            for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
            for config in kubectl.get_json(kind, "-l", "app.kubernetes.io/part-of=batchgate")["items"]
            for h in config["webhooks"]}


def certificate_secret_ca(kubectl: Kubectl) -> str | None:
    """The serving Secret's base64 ca.crt, None while it does not exist."""
    secret = kubectl.run("get", "secret", "-n", SYSTEM_NAMESPACE, "batchgate-webhook-tls", "-o", "json", check=False)
    return json.loads(secret.stdout)["data"]["ca.crt"] if secret.returncode == 0 else None


def delete_certificate_secret(kubectl: Kubectl) -> None:
    """Delete the serving Secret, then wait until the keepers have made a new one and put its CA
    into every webhook (so a stream around this spans the whole switch, however long the resync)."""
    old_ca = certificate_secret_ca(kubectl)
    kubectl.run("delete", "secret", "-n", SYSTEM_NAMESPACE, "batchgate-webhook-tls")

    def injected() -> bool:
        new_ca = certificate_secret_ca(kubectl)
        return new_ca not in (None, old_ca) and all(
            base64.b64decode(b).startswith(base64.b64decode(new_ca or "")) for b in bundles(kubectl))
    eventually(injected, "a new Secret with a new CA, injected into every webhook configuration")


def test_a_deleted_certificate_secret_is_made_again_with_both_cas_injected_and_fails_no_review(
        kubectl: Kubectl) -> None:
    """The new CA is in every caBundle before the Secret holding it is written, and the old CA is
    kept beside it (the switch grace, 5 minutes), so pods serving either certificate pass."""
    old_ca = certificate_secret_ca(kubectl)
    (before,) = bundles(kubectl)  # the Secret's CA first (then, for the switch grace, any it replaced)
    assert old_ca and base64.b64decode(before).startswith(base64.b64decode(old_ca))
    sent, failed, errors = stream_during(kubectl, delete_certificate_secret, STREAM_SECONDS)
    assert sent and not failed, errors
    new_ca = certificate_secret_ca(kubectl)
    (bundle,) = bundles(kubectl)  # every webhook the same: the Secret's CA first, then the lost one
    # (and, when the other replica's keeper lost the race to write the Secret, the CA it injected)
    pems = base64.b64decode(bundle)
    assert new_ca and pems.startswith(base64.b64decode(new_ca)) and base64.b64decode(old_ca) in pems


def certificate_secret(kubectl: Kubectl) -> dict[str, Any]:
    return kubectl.get_json("secret", "-n", SYSTEM_NAMESPACE, "batchgate-webhook-tls")


def reloads(kubectl: Kubectl) -> dict[str, int]:
    """Per gateway pod, how often its workers logged loading a new serving certificate."""
    pods = kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l", "app.kubernetes.io/name=batchgate-webhook")
    return {p["metadata"]["name"]: kubectl.run("logs", "-n", SYSTEM_NAMESPACE, p["metadata"]["name"], "-c", "webhook",
                                                check=False).stdout.count("serving certificate reloaded")
            for p in pods["items"]}


def force_renewal(kubectl: Kubectl) -> None:
    """As docs/install.md says: annotate the Secret with a new value, then wait until the keepers
    recorded it as handled with a new serving certificate and every gateway pod loaded it."""
    before, served = certificate_secret(kubectl), reloads(kubectl)
    value = f"e2e-{time.time_ns()}"
    kubectl.run("annotate", "secret", "-n", SYSTEM_NAMESPACE, "batchgate-webhook-tls", f"{RENEW_ANNOTATION}={value}",
                "--overwrite")

    def renewed() -> bool:
        secret = certificate_secret(kubectl)
        return (secret["metadata"].get("annotations", {}).get(RENEWED_ANNOTATION) == value
                and secret["data"]["tls.crt"] != before["data"]["tls.crt"])
    eventually(renewed, f"the keeper renews the serving certificate and records {RENEWED_ANNOTATION}={value}")
    eventually(lambda: all(reloads(kubectl).get(pod, 0) > count for pod, count in served.items()),
               "every gateway pod serves the new certificate (its log says it reloaded)")


def test_a_forced_renewal_serves_a_new_certificate_the_bundles_trust_and_fails_no_review(kubectl: Kubectl) -> None:
    eventually(lambda: product_status(kubectl)[0], "every product pod Ready: " + product_status(kubectl)[1])
    sent, failed, errors = stream_during(kubectl, force_renewal, STREAM_SECONDS)
    assert sent and not failed, errors
    data = {k: base64.b64decode(v) for k, v in certificate_secret(kubectl)["data"].items()}
    serving = x509.load_pem_x509_certificate(data["tls.crt"])
    ca = x509.load_pem_x509_certificates(data["ca.crt"])[0]
    serving.verify_directly_issued_by(ca)  # a new serving certificate under the same CA,
    assert all(ca in x509.load_pem_x509_certificates(base64.b64decode(b)) for b in bundles(kubectl))  # trusted


def lease_spec(kubectl: Kubectl) -> dict[str, Any]:
    spec: dict[str, Any] = kubectl.get_json("lease", "-n", SYSTEM_NAMESPACE, "batchgate-controller")["spec"]
    return spec


def parse_time(stamp: str) -> dt.datetime:
    """metav1.Time or MicroTime, as the API server returns it."""
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def leader(kubectl: Kubectl) -> tuple[str, str]:
    """The controller's Lease holder and the pod it is (each pod's log names its identity)."""
    holder = kubectl.get_json("lease", "-n", SYSTEM_NAMESPACE, "batchgate-controller")["spec"].get("holderIdentity", "")
    for item in kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l",
                                 "app.kubernetes.io/name=batchgate-controller")["items"]:
        name = item["metadata"]["name"]
        if holder and f"batchgate controller {holder}:" in kubectl.run("logs", "-n", SYSTEM_NAMESPACE, name,
                                                                        check=False).stdout:
            return holder, name
    return holder, ""


@dataclass(frozen=True)
class Takeover:
    """A leader handover as the Lease records it."""
    new_holder: str
    seconds: float  # acquireTime minus the later of the old leader's last renewal and the pod's deletion
    lease_duration_seconds: int
    transitions: int  # how much leaseTransitions went up


def deletion_time(kubectl: Kubectl, pod_name: str) -> dt.datetime | None:
    """When the pod was deleted, from its deletionTimestamp (when the grace period ends; the
    deletion was that many seconds before); None when the pod is already gone, which a controller
    that exits at once on SIGTERM allows before the next read."""
    found = kubectl.run("get", "pod", "-n", SYSTEM_NAMESPACE, pod_name, "-o", "json",
                        "--ignore-not-found").stdout
    if not found.strip():
        return None
    meta = json.loads(found)["metadata"]
    return parse_time(meta["deletionTimestamp"]) - dt.timedelta(seconds=meta.get("deletionGracePeriodSeconds", 0))


def delete_leader(kubectl: Kubectl, holder: str, pod_name: str, then: Callable[[], object] = lambda: None) -> Takeover:
    """Delete the leader's pod, run `then`, and wait until another candidate holds the Lease.
    The old leader's last renewal is read off the Lease until the standby overwrites it (a
    release on shutdown clears the holder and keeps the renewTime)."""
    before = lease_spec(kubectl)
    # The control plane runs on this machine, so its clock is ours: the deletion was not before now.
    asked_at = dt.datetime.now(dt.timezone.utc)
    kubectl.run("delete", "pod", "-n", SYSTEM_NAMESPACE, pod_name, "--wait=false")
    deleted_at = deletion_time(kubectl, pod_name) or asked_at
    then()
    last_renewal, deadline = parse_time(before["renewTime"]), time.monotonic() + WAIT_SECONDS
    while (spec := lease_spec(kubectl)).get("holderIdentity") in ("", holder):
        last_renewal = max(last_renewal, parse_time(spec["renewTime"]))
        assert time.monotonic() < deadline, f"not within {WAIT_SECONDS:.0f}s: the standby takes the Lease"
        time.sleep(0.2)
    seconds = (parse_time(spec["acquireTime"]) - max(last_renewal, deleted_at)).total_seconds()
    return Takeover(spec["holderIdentity"], seconds, before["leaseDurationSeconds"],
                    spec["leaseTransitions"] - before["leaseTransitions"])


def test_deleting_the_controller_s_leader_pod_hands_over_to_the_standby_and_admits_everything_once(
        kubectl: Kubectl) -> None:
    holder, pod_name = eventually(lambda: all(leader(kubectl)) and leader(kubectl), "a controller leads")
    names = [f"handover-{i}" for i in range(6)]
    for name in names[:3]:
        kubectl.run("create", "-f", "-", user="alice", stdin=json.dumps(alice_appwrapper(name)))
    takeover = delete_leader(kubectl, holder, pod_name,
                             then=lambda: [kubectl.run("create", "-f", "-", user="alice",
                                                       stdin=json.dumps(alice_appwrapper(name))) for name in names[3:]])
    new_holder, _ = eventually(lambda: leader(kubectl)[0] not in ("", holder) and leader(kubectl),
                               "the standby takes the Lease")
    assert new_holder != holder and takeover.new_holder == new_holder
    # The protocol's promise, on the cluster's own timestamps: a standby retries every retry
    # period and takes the Lease at most leaseDurationSeconds after the old leader's last renewal
    # (or after the pod's deletion, when the old leader renewed while shutting down).
    assert takeover.seconds <= takeover.lease_duration_seconds + LeaseTiming().retry_period.total_seconds(), takeover
    assert takeover.transitions == 1, takeover

    def workloads_by_owner() -> dict[str, int]:
        counts: dict[str, int] = {}
        for w in kubectl.get_json("workloads", "-n", "team-a")["items"]:
            admitted = any(c["type"] == "Admitted" and c["status"] == "True"
                           for c in w.get("status", {}).get("conditions", []))
            for ref in w["metadata"].get("ownerReferences", []):
                if ref["kind"] == "AppWrapper" and ref["name"] in names and admitted:
                    counts[ref["name"]] = counts.get(ref["name"], 0) + 1
        return counts
    counts = eventually(lambda: len(workloads_by_owner()) == len(names) and workloads_by_owner(),
                        "every AppWrapper submitted around the handover admitted")
    assert counts == {name: 1 for name in names}, "an AppWrapper was admitted twice"
    eventually(lambda: product_status(kubectl)[0], "the deleted pod replaced: " + product_status(kubectl)[1])


def pod(name: str, namespace: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
                       "spec": {"containers": [{"name": "m", "image": "busybox"}]}})


def test_with_the_gateway_scaled_to_zero_only_managed_namespaces_are_refused_and_scaling_back_heals(
        kubectl: Kubectl) -> None:
    kubectl.run("scale", "-n", SYSTEM_NAMESPACE, "deployment/batchgate-webhook", "--replicas=0")
    eventually(lambda: not kubectl.get_json("pods", "-n", SYSTEM_NAMESPACE, "-l",
                                            "app.kubernetes.io/name=batchgate-webhook")["items"],
               "every gateway pod gone")
    kubectl.run("create", "namespace", "monitoring")
    for namespace in ("monitoring", "kube-system"):  # not a team namespace; a system namespace
        kubectl.run("apply", "-f", "-", stdin=pod(f"while-down-{namespace}", namespace))
    # In the product's own namespace only the policy waits on the gateway (fails closed); any other
    # ConfigMap (kube-root-ca.crt, which its pods mount) is still written.
    kubectl.run("create", "configmap", "-n", SYSTEM_NAMESPACE, "while-down", "--from-literal=k=v")
    # kube-apiserver dials the gateway Service's cluster IP, where no ready pod means a refusal
    refusal = "dial tcp {}:443: connect: connection refused".format(
        kubectl.get_json("service", "-n", SYSTEM_NAMESPACE, "batchgate-webhook")["spec"]["clusterIP"])
    policy_edit = kubectl.run("annotate", "configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy", "edited=yes",
                              check=False)
    assert refusal in policy_edit.stderr, policy_edit.stderr
    refused = kubectl.run("create", "-f", "-", user="alice", check=False,
                          stdin=json.dumps(alice_appwrapper("while-down")))
    assert refused.returncode == 1
    assert refused.stderr.count("Error from server") == 1, refused.stderr
    assert refusal in refused.stderr, refused.stderr
    kubectl.run("scale", "-n", SYSTEM_NAMESPACE, "deployment/batchgate-webhook", "--replicas=2")
    eventually(lambda: product_status(kubectl)[0], "the gateway back: " + product_status(kubectl)[1])
    kubectl.run("create", "-f", "-", user="alice", stdin=json.dumps(alice_appwrapper("after-heal")))


def uninstall_with_kubectl(kubectl: Kubectl) -> None:
    """docs/install.md's uninstall: everything but batchgate's CRDs (which hold users' AppWrappers)."""
    kubectl.run("delete", "-k", str(LOCAL_OVERLAY), "-l", "app.kubernetes.io/component!=crd", "--wait=true",
                "--timeout=120s")


def uninstall_keeps_users_objects(kubectl: Kubectl, crds_before: dict[str, str],
                                  uninstall: Callable[[Kubectl], object] = uninstall_with_kubectl) -> None:
    kubectl.run("apply", "-f", "-", user="alice", stdin=json.dumps(alice_appwrapper("kept")))
    kubectl.run("apply", "-f", "-", stdin=json.dumps(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "plain", "namespace": "default"},
         "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}}))
    kubectl.run("apply", "-f", "-", stdin=json.dumps(
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "torch", "namespace": "default"},
         "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
             "containers": [{"name": "pytorch", "image": "busybox"}]}}}}}}))
    uninstall(kubectl)
    assert kubectl.run("get", "namespace", SYSTEM_NAMESPACE, check=False).returncode != 0
    assert kubectl.get_json("appwrappers", "-A")["items"], "users' AppWrappers went with the uninstall"
    assert kubectl.get_json("job", "-n", "default", "plain")
    assert kubectl.get_json("pytorchjob", "-n", "default", "torch")
    assert third_party_crds(kubectl) == crds_before


# --- bad input at install and while running (issue 13, "Bad input"): each gives a clear status (a
# pod condition, an Event, a probe message naming the cause) and heals when the input is put right.

GATEWAY = "app.kubernetes.io/name=batchgate-webhook"


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
    other = base64.b64encode(issue_secret_data(["x"], dt.datetime.now(dt.timezone.utc), ca_days=3650,
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
    try:
        eventually(lambda: product_status(kubectl)[0], "the product Ready again: " + product_status(kubectl)[1])
    finally:  # the module's other tests expect policy edits refused again
        kubectl.run("annotate", "configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy", f"{BREAK_GLASS_ANNOTATION}-",
                    check=False)
