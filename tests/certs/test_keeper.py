"""The certificate keeper against the local cluster with the real `kubernetes` client.

We test these aspects: a first pass creates the Secret and fills every webhook's caBundle, a
second pass writes nothing, a caBundle edited away comes back, a corrupted Secret is reissued, a
new CA is in every bundle before the Secret holding it is written, a keeper losing that write keeps
the winner's Secret while its own CA ages out, a renewal due keeps the CA (so no bundle changes), a
renewal requested on the Secret is done once and recorded, replicas racing on a missing Secret
leave one Secret that every configuration trusts, a deleted configuration is reported, not
fatal, a running keeper acts on watched changes without waiting for its resync (also after the
server ended its watches), and every heal (a Secret replaced, a caBundle put back) or harm it
cannot heal (a configuration deleted) is an Event.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import threading
import time
import uuid
from typing import Any, Callable

import pytest
from cryptography import x509
from kubernetes import client

from batchgate.clock import FakeClock, UTC
from batchgate.keys import RENEW_ANNOTATION, RENEWED_ANNOTATION
from certs.authority import CA_CERT, TLS_CERT
from certs.keeper import FIELD_MANAGER, MUTATING, VALIDATING, CertKeeper
from certs.lifecycle import CertSettings, parse_cas
from certs.scope import POD_WEBHOOK, POLICY_WEBHOOK, policy_match_conditions

START = _dt.datetime(2030, 1, 1, tzinfo=UTC)


def webhook(name: str) -> dict[str, Any]:
    """A webhook on a resource nothing else in the session creates, so it never gets called."""
    return {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
            "clientConfig": {"service": {"name": "gate", "namespace": "sys", "path": "/validate"}, "caBundle": "Cg=="},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["keeper.test"], "apiVersions": ["v1"],
                       "resources": ["nothings"]}]}


@pytest.fixture
def setup(kube_api: client.ApiClient, namespace: str) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:6]
    admission = client.AdmissionregistrationV1Api(kube_api)
    mutating, validating = f"keeper-m-{suffix}", f"keeper-v-{suffix}"
    admission.create_mutating_webhook_configuration(
        {"metadata": {"name": mutating}, "webhooks": [webhook("a.keeper.test")]})
    admission.create_validating_webhook_configuration(
        {"metadata": {"name": validating}, "webhooks": [webhook("b.keeper.test"), webhook("c.keeper.test")]})
    return {"namespace": namespace, "configs": [(MUTATING, mutating), (VALIDATING, validating)]}


def keeper(kube_api: client.ApiClient, setup: dict[str, Any], clock: FakeClock) -> CertKeeper:
    settings = CertSettings(dns_names=("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local"))
    return CertKeeper(kube_api, settings, (setup["namespace"], "gate-tls"), setup["configs"], clock)


def secret_data(kube_api: client.ApiClient, namespace: str) -> tuple[dict[str, bytes], str]:
    secret = client.CoreV1Api(kube_api).read_namespaced_secret("gate-tls", namespace)
    return {k: base64.b64decode(v) for k, v in secret.data.items()}, secret.metadata.resource_version


def bundles(kube_api: client.ApiClient, setup: dict[str, Any]) -> list[str]:
    admission = client.AdmissionregistrationV1Api(kube_api)
    (_, mutating), (_, validating) = setup["configs"]
    hooks = (admission.read_mutating_webhook_configuration(mutating).webhooks
             + admission.read_validating_webhook_configuration(validating).webhooks)
    return [h.client_config.ca_bundle for h in hooks]


def test_a_first_pass_creates_the_secret_and_fills_every_bundle_and_a_second_writes_nothing(
        kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    keep = keeper(kube_api, setup, FakeClock(START))
    first = keep.reconcile()
    assert first.plan.action == "issue-all" and len(first.injected) == 3
    data, version = secret_data(kube_api, setup["namespace"])
    assert bundles(kube_api, setup) == [base64.b64encode(data[CA_CERT]).decode()] * 3
    second = keep.reconcile()
    assert (second.plan.action, second.injected) == ("keep", ())
    assert secret_data(kube_api, setup["namespace"])[1] == version


def test_a_bundle_edited_away_comes_back(kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    keep = keeper(kube_api, setup, FakeClock(START))
    keep.reconcile()
    (_, validating) = setup["configs"][1]
    admission = client.AdmissionregistrationV1Api(kube_api)
    config = admission.read_validating_webhook_configuration(validating)
    config.webhooks[1].client_config.ca_bundle = "Cg=="
    admission.replace_validating_webhook_configuration(validating, config)
    assert keep.reconcile().injected == (f"{VALIDATING}/{validating}/c.keeper.test",)
    assert len(set(bundles(kube_api, setup))) == 1


def bundle_and_owners(kube_api: client.ApiClient, name: str) -> tuple[str, set[str]]:
    """A one-webhook validating configuration's caBundle, and the managers whose managedFields
    entries hold it."""
    config = client.AdmissionregistrationV1Api(kube_api).read_validating_webhook_configuration(name)
    return config.webhooks[0].client_config.ca_bundle, {
        entry.manager for entry in config.metadata.managed_fields or [] if "f:caBundle" in json.dumps(entry.fields_v1)}


@pytest.mark.parametrize("installed_bundle", [
    pytest.param(None, id="a fresh install, which ships no caBundle"),
    pytest.param("Cg==", id="an install of a release that shipped the placeholder, upgraded"),
])
def test_the_keeper_owns_the_bundle_so_a_server_side_re_apply_keeps_it_without_conflict(
        kube_api: client.ApiClient, kubectl: Any, namespace: str, installed_bundle: str | None) -> None:
    """As docs/install.md installs and upgrades: the configuration applied server side, the keeper
    injecting the caBundle under its own field manager, then the shipped one (no caBundle) applied."""
    name = f"keeper-ssa-{uuid.uuid4().hex[:6]}"
    hook = {k: v for k, v in webhook("d.keeper.test").items() if k != "clientConfig"}

    def configuration(bundle: str | None) -> str:
        client_config: dict[str, Any] = {"service": {"name": "gate", "namespace": "sys", "path": "/validate"}}
        if bundle is not None:
            client_config["caBundle"] = bundle
        return json.dumps({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                           "metadata": {"name": name}, "webhooks": [{**hook, "clientConfig": client_config}]})

    kubectl("apply", "--server-side", "-f", "-", input=configuration(installed_bundle))
    keeper(kube_api, {"namespace": namespace, "configs": [(VALIDATING, name)]}, FakeClock(START)).reconcile()
    injected, owners = bundle_and_owners(kube_api, name)
    assert injected and owners == {FIELD_MANAGER}
    for _ in range(2):  # fails the test on a conflict
        kubectl("apply", "--server-side", "-f", "-", input=configuration(None))
        assert bundle_and_owners(kube_api, name) == (injected, {FIELD_MANAGER})
    client.AdmissionregistrationV1Api(kube_api).delete_validating_webhook_configuration(name)


def delete_secret(core: client.CoreV1Api, namespace: str) -> None:
    core.delete_namespaced_secret("gate-tls", namespace)


def corrupt_secret(core: client.CoreV1Api, namespace: str) -> None:
    core.patch_namespaced_secret("gate-tls", namespace, {"data": {CA_CERT: base64.b64encode(b"junk").decode()}})


@pytest.mark.parametrize("lose", [
    pytest.param(delete_secret, id="a deleted Secret"),
    pytest.param(corrupt_secret, id="a corrupted Secret"),
])
def test_a_lost_secret_is_reissued_and_its_ca_stays_trusted_beside_the_new_one_for_the_switch_grace(
        kube_api: client.ApiClient, setup: dict[str, Any], lose: Any) -> None:
    clock = FakeClock(START)
    keep = keeper(kube_api, setup, clock)
    keep.reconcile()
    before, _ = secret_data(kube_api, setup["namespace"])
    lose(client.CoreV1Api(kube_api), setup["namespace"])
    clock.advance(_dt.timedelta(minutes=1))
    result = keep.reconcile()
    after, _ = secret_data(kube_api, setup["namespace"])
    assert result.plan.action == "issue-all" and len(result.injected) == 3
    both = base64.b64encode(after[CA_CERT] + before[CA_CERT]).decode()
    assert bundles(kube_api, setup) == [both] * 3  # pods still serving the old certificate stay trusted
    assert keep.reconcile().injected == ()  # a pass within the grace keeps the old CA, writes nothing
    clock.advance(keep.settings.switch_grace)
    assert len(keep.reconcile().injected) == 3
    assert bundles(kube_api, setup) == [base64.b64encode(after[CA_CERT]).decode()] * 3


class Watched(CertKeeper):
    """A keeper that records, at the moment it writes the Secret, the bundles the cluster holds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[bytes, list[str]]] = []

    def _write(self, plan: Any, new: dict[str, bytes], secret: Any) -> None:
        self.seen.append((new[CA_CERT], bundles_of(self)))
        super()._write(plan, new, secret)


def bundles_of(keep: CertKeeper) -> list[str]:
    return [h["clientConfig"]["caBundle"] for kind, name in keep.configurations
            for h in keep._read_configuration(kind, name)["webhooks"]]


@pytest.mark.parametrize("lose", [
    pytest.param(None, id="a first Secret"),
    pytest.param(delete_secret, id="a deleted Secret"),
    pytest.param(corrupt_secret, id="a corrupted Secret"),
])
def test_a_new_ca_is_in_every_bundle_before_the_secret_holding_it_is_written(
        kube_api: client.ApiClient, setup: dict[str, Any], lose: Any) -> None:
    clock = FakeClock(START)
    settings = CertSettings(dns_names=("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local"))
    keep = Watched(kube_api, settings, (setup["namespace"], "gate-tls"), setup["configs"], clock)
    if lose is not None:
        keep.reconcile()
        lose(client.CoreV1Api(kube_api), setup["namespace"])
        clock.advance(_dt.timedelta(minutes=1))
    keep.reconcile()
    ca_pem, at_write = keep.seen[-1]
    new_ca = parse_cas(ca_pem)[0]
    assert all(new_ca in parse_cas(base64.b64decode(b)) for b in at_write)


class Overtaken(CertKeeper):
    """A keeper another replica overtakes once: between planning and writing, `rival` writes first."""

    def __init__(self, rival: CertKeeper, *args: Any) -> None:
        super().__init__(*args)
        self.rival, self.lost_ca = rival, b""

    def issue(self, plan: Any, data: dict[str, bytes] | None) -> dict[str, bytes]:
        new = super().issue(plan, data)
        if not self.lost_ca:
            self.lost_ca = new[CA_CERT]
            self.rival.reconcile()
        return new


def test_a_keeper_that_loses_the_secret_race_keeps_the_winner_s_secret_and_its_extra_ca_ages_out(
        kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    clock = FakeClock(START)
    winner = keeper(kube_api, setup, clock)
    loser = Overtaken(winner, kube_api, winner.settings, (setup["namespace"], "gate-tls"), setup["configs"], clock)
    result = loser.reconcile()
    data, _ = secret_data(kube_api, setup["namespace"])
    assert result.plan.action == "keep" and data[CA_CERT] != loser.lost_ca
    assert bundles(kube_api, setup) == [base64.b64encode(data[CA_CERT] + loser.lost_ca).decode()] * 3
    clock.advance(winner.settings.switch_grace)
    assert len(loser.reconcile().injected) == 3
    assert bundles(kube_api, setup) == [base64.b64encode(data[CA_CERT]).decode()] * 3


def test_a_forced_renewal_keeps_the_ca_so_no_bundle_changes(kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    clock = FakeClock(START)
    keep = keeper(kube_api, setup, clock)
    keep.reconcile()
    before, _ = secret_data(kube_api, setup["namespace"])
    clock.advance(_dt.timedelta(days=300))
    result = keep.reconcile()
    after, _ = secret_data(kube_api, setup["namespace"])
    assert (result.plan.action, result.injected) == ("renew-serving", ())
    assert after[CA_CERT] == before[CA_CERT] and after[TLS_CERT] != before[TLS_CERT]
    x509.load_pem_x509_certificate(after[TLS_CERT]).verify_directly_issued_by(parse_cas(after[CA_CERT])[0])


def annotate(kube_api: client.ApiClient, namespace: str, value: str) -> None:
    client.CoreV1Api(kube_api).patch_namespaced_secret(
        "gate-tls", namespace, {"metadata": {"annotations": {RENEW_ANNOTATION: value}}})


@pytest.mark.parametrize("value, new_ca", [
    pytest.param("now", False, id="a requested renewal gives a new serving certificate under the same CA"),
    pytest.param("ca-now", True, id="a requested CA renewal gives a new CA that every bundle trusts before the Secret"),
])
def test_a_renewal_requested_on_the_secret_is_done_once_and_recorded(
        kube_api: client.ApiClient, setup: dict[str, Any], value: str, new_ca: bool) -> None:
    clock = FakeClock(START)
    keep = keeper(kube_api, setup, clock)
    keep.reconcile()
    before, _ = secret_data(kube_api, setup["namespace"])
    annotate(kube_api, setup["namespace"], value)
    clock.advance(_dt.timedelta(minutes=1))
    result = keep.reconcile()
    after, _ = secret_data(kube_api, setup["namespace"])
    secret = client.CoreV1Api(kube_api).read_namespaced_secret("gate-tls", setup["namespace"])
    assert result.plan.action == ("issue-all" if new_ca else "renew-serving")
    assert secret.metadata.annotations[RENEWED_ANNOTATION] == value
    assert after[TLS_CERT] != before[TLS_CERT] and (after[CA_CERT] != before[CA_CERT]) is new_ca
    trusted = base64.b64encode(after[CA_CERT] + (before[CA_CERT] if new_ca else b"")).decode()
    assert bundles(kube_api, setup) == [trusted] * 3  # the old CA only for the switch grace
    assert keep.reconcile().plan.action == "keep"
    assert secret_data(kube_api, setup["namespace"])[0] == after


def test_replicas_racing_on_a_missing_secret_leave_one_secret_every_configuration_trusts(
        kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    clock = FakeClock(START)
    keepers = [keeper(kube_api, setup, clock) for _ in range(4)]
    barrier = threading.Barrier(len(keepers))
    errors: list[BaseException] = []

    def race(k: CertKeeper) -> None:
        barrier.wait()
        try:
            k.reconcile()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(k,)) for k in keepers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    data, _ = secret_data(kube_api, setup["namespace"])
    # The losers' CAs, injected before their writes lost, stay beside the winner's for the grace.
    assert all(k.reconcile().plan.action == "keep" for k in keepers)
    assert len(set(bundles(kube_api, setup))) == 1
    assert base64.b64decode(bundles(kube_api, setup)[0]).startswith(data[CA_CERT])
    clock.advance(keepers[0].settings.switch_grace)
    keepers[0].reconcile()
    assert bundles(kube_api, setup) == [base64.b64encode(data[CA_CERT]).decode()] * 3
    serving = x509.load_pem_x509_certificate(data[TLS_CERT])
    serving.verify_directly_issued_by(parse_cas(data[CA_CERT])[0])


def test_a_deleted_configuration_is_reported_and_the_others_still_get_the_bundle(
        kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    (_, mutating), (_, validating) = setup["configs"]
    client.AdmissionregistrationV1Api(kube_api).delete_mutating_webhook_configuration(mutating)
    result = keeper(kube_api, setup, FakeClock(START)).reconcile()
    assert result.missing == (f"{MUTATING}/{mutating}",)
    assert len(result.injected) == 2


def test_batchgate_certs_manage_once_does_a_pass_and_says_what_it_did(
        local_cluster: Any, kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    import subprocess
    import sys

    (_, mutating), (_, validating) = setup["configs"]
    command = [sys.executable, "-m", "batchgate.cli", "certs", "manage", "--once",
               "--kubeconfig", str(local_cluster.kubeconfig), "--secret", f"{setup['namespace']}/gate-tls",
               "--service", "gate", "--namespace", "sys",
               "--webhook-configuration", f"{MUTATING}/{mutating}", "--webhook-configuration", f"{VALIDATING}/{validating}"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert "issue-all (the Secret does not exist); caBundle injected into 3 webhooks; namespaceSelector set on 0; missing: none" in first.stdout
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert "keep (valid); caBundle injected into 0 webhooks" in again.stdout


def selectors(kube_api: client.ApiClient, setup: dict[str, Any]) -> list[Any]:
    admission = client.AdmissionregistrationV1Api(kube_api)
    (_, mutating), (_, validating) = setup["configs"]
    hooks = (admission.read_mutating_webhook_configuration(mutating).webhooks
             + admission.read_validating_webhook_configuration(validating).webhooks)
    return [kube_api.sanitize_for_serialization(h.namespace_selector) for h in hooks]


def test_the_webhooks_follow_the_policys_managed_namespaces_and_an_invalid_policy_changes_nothing(
        kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    core = client.CoreV1Api(kube_api)
    namespace = setup["namespace"]
    policy = "managedNamespaces:\n  selector: {matchLabels: {mlbatch-team-namespace: 'true'}}\n"
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "policy"}, "data": {"policy.yaml": policy}})
    settings = CertSettings(dns_names=("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local"))
    keep = CertKeeper(kube_api, settings, (namespace, "gate-tls"), setup["configs"], FakeClock(START), (namespace, "policy"))
    assert len(keep.reconcile().scoped) == 3
    wanted = {"matchLabels": {"mlbatch-team-namespace": "true"}, "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
         "values": ["batchgate-system", "kube-node-lease", "kube-public", "kube-system"]}]}
    assert selectors(kube_api, setup) == [wanted] * 3
    assert keep.reconcile().scoped == ()
    core.patch_namespaced_config_map("policy", namespace, {"data": {"policy.yaml": "managedNamespaces: 7\n"}})
    assert keep.reconcile().scoped == () and selectors(kube_api, setup) == [wanted] * 3
    core.patch_namespaced_config_map("policy", namespace, {"data": {"policy.yaml": ""}})
    assert len(keep.reconcile().scoped) == 3
    assert all("matchLabels" not in s for s in selectors(kube_api, setup))


def conditioned(kube_api: client.ApiClient, hook: str, policy: tuple[str, str]
                ) -> tuple[str, CertKeeper, Callable[[], list[dict[str, str]]]]:
    """A validating configuration of one webhook `hook` with no matchConditions, a keeper of it
    given the policy ConfigMap `policy` (namespace, name), and a reader of the conditions."""
    admission = client.AdmissionregistrationV1Api(kube_api)
    name = f"keeper-conditions-{uuid.uuid4().hex[:6]}"
    admission.create_validating_webhook_configuration(
        {"metadata": {"name": name}, "webhooks": [{**webhook(hook), "matchConditions": []}]})
    settings = CertSettings(dns_names=("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local"))
    keep = CertKeeper(kube_api, settings, (policy[0], "gate-tls"), [(VALIDATING, name)], FakeClock(START), policy)

    def conditions() -> list[dict[str, str]]:
        (found,) = admission.read_validating_webhook_configuration(name).webhooks
        return [{"name": c.name, "expression": c.expression} for c in found.match_conditions or []]

    return name, keep, conditions


def test_the_pods_webhook_s_conditions_follow_the_policy_s_exemptions(
        kube_api: client.ApiClient, namespace: str) -> None:
    """A user taken out of `exempt.users` is policed again: the keeper rewrites the conditions
    that kept that user's pods away from the gateway."""
    core, admission = client.CoreV1Api(kube_api), client.AdmissionregistrationV1Api(kube_api)
    exempt = "exempt:\n  users: [ci-bot]\n"
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "policy"}, "data": {"policy.yaml": exempt}})
    name, keep, conditions = conditioned(kube_api, POD_WEBHOOK, (namespace, "policy"))
    assert f"{VALIDATING}/{name}/{POD_WEBHOOK}" in keep.reconcile().scoped
    assert any(c["name"] == "sender-not-exempt" and '"ci-bot"' in c["expression"] for c in conditions())
    assert f"{VALIDATING}/{name}/{POD_WEBHOOK}" not in keep.reconcile().scoped  # nothing left to write
    core.patch_namespaced_config_map("policy", namespace, {"data": {"policy.yaml": ""}})
    keep.reconcile()
    assert not any(c["name"] == "sender-not-exempt" for c in conditions())
    admission.delete_validating_webhook_configuration(name)


def test_the_policy_webhook_s_conditions_follow_the_policy_configmap_the_keeper_is_given(
        kube_api: client.ApiClient, namespace: str) -> None:
    """Only that ConfigMap waits on the gateway, whatever the policy in it says (here: none yet)."""
    admission = client.AdmissionregistrationV1Api(kube_api)
    name, keep, conditions = conditioned(kube_api, POLICY_WEBHOOK, (namespace, "our-policy"))
    keep.reconcile()
    assert conditions() == policy_match_conditions((namespace, "our-policy"))
    assert keep.reconcile().scoped == ()  # nothing left to write
    config = admission.read_validating_webhook_configuration(name)
    config.webhooks[0].match_conditions = None  # edited away: every ConfigMap of the namespace sent again
    admission.replace_validating_webhook_configuration(name, config)
    assert keep.reconcile().scoped == (f"{VALIDATING}/{name}/{POLICY_WEBHOOK}",)
    assert conditions() == policy_match_conditions((namespace, "our-policy"))
    admission.delete_validating_webhook_configuration(name)


def eventually(probe: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := probe()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.1)
    return value


def test_a_running_keeper_reacts_to_its_secret_configurations_and_policy_through_watches_not_the_resync(
        kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    core, namespace = client.CoreV1Api(kube_api), setup["namespace"]
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "policy"}, "data": {"policy.yaml": ""}})
    settings = CertSettings(dns_names=("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local"))
    keep = CertKeeper(kube_api, settings, (namespace, "gate-tls"), setup["configs"], FakeClock(START),
                      (namespace, "policy"))
    stop = threading.Event()
    runner = threading.Thread(target=keep.run, args=(stop, 3600.0))  # the resync never comes in this test
    runner.start()
    try:
        def trusted() -> bool:
            data, _ = secret_data(kube_api, namespace)
            return bundles(kube_api, setup) == [base64.b64encode(data[CA_CERT]).decode()] * 3
        eventually(lambda: secret_exists(core, namespace) and trusted(), "the first pass")
        (_, validating) = setup["configs"][1]
        admission = client.AdmissionregistrationV1Api(kube_api)
        for attempt in range(5):  # as `kubectl edit` does: the keeper may write between our read and write
            config = admission.read_validating_webhook_configuration(validating)
            config.webhooks[0].client_config.ca_bundle = "Cg=="
            try:
                admission.replace_validating_webhook_configuration(validating, config)
                break
            except client.ApiException as err:
                if err.status != 409 or attempt == 4:
                    raise
        eventually(trusted, "a caBundle edited away put back")
        annotate(kube_api, namespace, "watched")
        eventually(lambda: (core.read_namespaced_secret("gate-tls", namespace).metadata.annotations or {})
                   .get(RENEWED_ANNOTATION) == "watched", "a renewal requested on the Secret done")
        core.patch_namespaced_config_map("policy", namespace, {"data": {"policy.yaml": (
            "managedNamespaces:\n  selector: {matchLabels: {mlbatch-team-namespace: 'true'}}\n")}})
        eventually(lambda: all("matchLabels" in s for s in selectors(kube_api, setup)),
                   "the webhooks follow the policy's new managed namespaces")
    finally:
        stop.set()
        runner.join(30)
    assert not runner.is_alive()


def secret_exists(core: client.CoreV1Api, namespace: str) -> bool:
    return any(s.metadata.name == "gate-tls" for s in core.list_namespaced_secret(namespace).items)


def recorded(kube_api: client.ApiClient, namespace: str) -> list[tuple[str, str, str, str, str]]:
    """(type, reason, involved kind, involved name, message) of every Event in the keeper's namespace."""
    return [(e.type, e.reason, e.involved_object.kind, e.involved_object.name, e.message)
            for e in client.CoreV1Api(kube_api).list_namespaced_event(namespace).items]


def corrupt(kube_api: client.ApiClient, setup: dict[str, Any]) -> tuple[str, str, str, str]:
    corrupt_secret(client.CoreV1Api(kube_api), setup["namespace"])
    return "Normal", "CertificateIssued", "Secret", "gate-tls"


def edit_bundle_away(kube_api: client.ApiClient, setup: dict[str, Any]) -> tuple[str, str, str, str]:
    (_, validating) = setup["configs"][1]
    admission = client.AdmissionregistrationV1Api(kube_api)
    config = admission.read_validating_webhook_configuration(validating)
    config.webhooks[1].client_config.ca_bundle = "Cg=="
    admission.replace_validating_webhook_configuration(validating, config)
    return "Normal", "CABundleInjected", VALIDATING, validating


def delete_configuration(kube_api: client.ApiClient, setup: dict[str, Any]) -> tuple[str, str, str, str]:
    (_, mutating) = setup["configs"][0]
    client.AdmissionregistrationV1Api(kube_api).delete_mutating_webhook_configuration(mutating)
    return "Warning", "WebhookConfigurationMissing", MUTATING, mutating


@pytest.mark.parametrize("harm, says", [
    pytest.param(corrupt, "ca.crt is not a PEM certificate: a new CA and serving certificate written",
                 id="a corrupted Secret replaced is an Event on the Secret saying why"),
    pytest.param(edit_bundle_away, "caBundle of c.keeper.test set to the CAs of Secret",
                 id="a caBundle put back is an Event on its configuration naming the webhook"),
    pytest.param(delete_configuration, "does not recreate it; re-apply the install: kubectl apply --server-side -k "
                 "manifests/default -l 'app.kubernetes.io/component!=policy'",
                 id="a deleted configuration is one Warning on it naming the fix, however many passes"),
])
def test_every_heal_or_harm_the_keeper_sees_is_a_visible_event(
        kube_api: client.ApiClient, setup: dict[str, Any], harm: Any, says: str) -> None:
    clock = FakeClock(START)
    keep = keeper(kube_api, setup, clock)
    keep.reconcile()
    before = recorded(kube_api, setup["namespace"])
    kind, reason, involved_kind, involved_name = harm(kube_api, setup)
    clock.advance(_dt.timedelta(minutes=1))
    keep.reconcile()
    clock.advance(_dt.timedelta(minutes=1))
    keep.reconcile()
    new = [e for e in recorded(kube_api, setup["namespace"]) if e not in before]
    assert [e[:4] for e in new if e[1] == reason] == [(kind, reason, involved_kind, involved_name)], new
    assert says in next(e[4] for e in new if e[1] == reason)


def test_a_watch_the_server_ends_is_started_again(kube_api: client.ApiClient, setup: dict[str, Any]) -> None:
    """Each watch asks the server to end it after a second; a caBundle edited away after several
    such ends still comes back long before the resync."""
    settings = CertSettings(dns_names=("gate", "gate.sys", "gate.sys.svc", "gate.sys.svc.cluster.local"))
    keep = CertKeeper(kube_api, settings, (setup["namespace"], "gate-tls"), setup["configs"], FakeClock(START),
                      watch_seconds=1)
    stop = threading.Event()
    runner = threading.Thread(target=keep.run, args=(stop, 3600.0))
    runner.start()
    try:
        eventually(lambda: secret_exists(client.CoreV1Api(kube_api), setup["namespace"])
                   and "Cg==" not in bundles(kube_api, setup), "the first pass")
        time.sleep(3)  # not a timing assertion: lets every watch end at least twice
        edit_bundle_away(kube_api, setup)
        eventually(lambda: "Cg==" not in bundles(kube_api, setup), "the caBundle put back through a new watch")
    finally:
        stop.set()
        runner.join(30)
    assert not runner.is_alive()
