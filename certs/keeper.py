"""The certificate keeper: carries out certs/lifecycle.py's plans with the kubernetes client.

Runs beside the gateway in each gateway pod (`batchgate certs manage`, a second container). Each
pass reads the serving Secret and plans it (`plan_secret`); a new Secret's data is made first and
its CA injected into every webhook of the product's configurations before the Secret is written,
so the API server trusts a certificate before any pod can load it. Then every webhook gets the
bundle (`plan_bundle`), the policy's managed namespaces as namespaceSelector, and the conditions
of the pods webhook (from the policy) and of the policy webhook (from the policy ConfigMap's name)
(certs/scope.py).
Passes run when a watched object changes (the Secret, the configurations, the policy ConfigMap,
each by name), when a renewal or the switch grace falls due, and at the latest every resync.
Replicas race safely: a create that finds the Secret already made (409) or an update that lost
(409 Conflict) reads again and plans again, so the replicas end on the one Secret the winner
wrote. What it needs from RBAC: get/update/watch (by name) and create on its one Secret,
get/update/watch on its named webhook configurations, and get/watch on the policy ConfigMap
(which the gateway reads anyway).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Literal, cast

from kubernetes import client
from kubernetes.client.rest import ApiException

from batchgate.clock import Clock
from batchgate.keys import RENEWED_ANNOTATION
from batchgate.policy import Policy, PolicyError
from batchgate.events import Involved, event_body
from batchgate.policy_configmap import policy_from_configmap
from certs.authority import TLS_CERT, issue_secret_data
from certs.lifecycle import BundlePlan, CertSettings, SecretPlan, WebhookBundle, plan_bundle, plan_secret, stale_bundles
from certs.scope import (POD_WEBHOOK, POLICY_WEBHOOK, namespace_selector, pod_match_conditions,
                         policy_match_conditions, stale_conditions, stale_selectors)
from kubeapi.client import (CONFIGMAPS, MUTATING_WEBHOOK_CONFIGURATIONS, SECRETS, VALIDATING_WEBHOOK_CONFIGURATIONS,
                            KubeClient, Resource)
from kubeapi.events import record_event
from kubeapi.listwatch import ListWatch

log = logging.getLogger("batchgate.certs")

NOT_FOUND, CONFLICT = 404, 409
ATTEMPTS = 5
"""Reads and writes tried per pass before giving up until the next one (each retry re-plans)."""
WATCH_SECONDS = 300
"""Each watch asks the server to end it after this long; it is then resumed from its last version."""
WATCH_RETRY_SECONDS = 2.0
"""After a failed watch, the next one comes this soon."""
ERROR_RETRY_SECONDS = 5.0
"""After a failed pass, the next one comes this soon (or with the next change seen)."""
EVENT_COMPONENT = "batchgate-certs"
CERTIFICATE_ISSUED, CERTIFICATE_RENEWED = "CertificateIssued", "CertificateRenewed"
CA_BUNDLE_INJECTED, CONFIGURATION_MISSING = "CABundleInjected", "WebhookConfigurationMissing"
ADMISSION_API = "admissionregistration.k8s.io/v1"
REAPPLY = "kubectl apply --server-side -k manifests/default -l 'app.kubernetes.io/component!=policy'"
"""Re-applying the install as docs/install.md upgrades it: everything but the admin's policy."""
FIELD_MANAGER = "batchgate-certificate-keeper"
"""Every write names this manager, so managedFields say who owns the caBundle (and the scope the
policy derives): the install ships none of it, and a re-apply of the manifests leaves it alone."""
MUTATING, VALIDATING = "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"


@dataclass(frozen=True)
class PassResult:
    """What one pass did: the Secret plan, the webhooks given the bundle or the policy's
    namespaceSelector, configurations not found."""

    plan: SecretPlan
    injected: tuple[str, ...]
    missing: tuple[str, ...]
    scoped: tuple[str, ...] = ()
    bundle: BundlePlan | None = None


class CertKeeper:
    """Keeps one serving Secret valid, its CA in the named webhook configurations, and (given the
    policy ConfigMap) their namespaceSelector equal to the policy's managed namespaces."""

    def __init__(self, api: client.ApiClient, settings: CertSettings, secret: tuple[str, str],
                 configurations: list[tuple[str, str]], clock: Clock,
                 policy_configmap: tuple[str, str] | None = None, watch_seconds: int = WATCH_SECONDS):
        self.core = client.CoreV1Api(api)
        self.kube = KubeClient(api)
        self.admission = client.AdmissionregistrationV1Api(api)
        self.settings, self.clock = settings, clock
        self.namespace, self.name = secret
        self.configurations = configurations
        self.policy_configmap = policy_configmap
        self.watch_seconds = watch_seconds
        self._missing: set[tuple[str, str]] = set()
        """Configurations reported missing (one Event each until they are back)."""

    # --- Events -------------------------------------------------------------------------------
    def _event(self, involved: Involved, kind: Literal["Normal", "Warning"], reason: str, message: str,
               identity: str) -> None:
        """Record what the keeper did (or cannot do) where `kubectl describe` and `kubectl get
        events -n <its namespace>` show it; best effort, a failure is logged and the pass goes on."""
        record_event(self.kube, event_body(self.namespace, involved, kind, reason, message, identity,
                                           self.clock.now(), EVENT_COMPONENT))

    # --- the Secret ---------------------------------------------------------------------------
    def _read(self) -> tuple[dict[str, bytes] | None, Any]:
        try:
            secret = self.core.read_namespaced_secret(self.name, self.namespace)
        except ApiException as exc:
            if exc.status == NOT_FOUND:
                return None, None
            raise
        return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}, secret

    def issue(self, plan: SecretPlan, data: dict[str, bytes] | None) -> dict[str, bytes]:
        """The Secret data `plan` calls for, made before anything is written (a new serving pair,
        under the current CA or a new one)."""
        current = data if plan.action == "renew-serving" else None
        return issue_secret_data(list(self.settings.dns_names), self.clock.now(),
                                 ca_days=self.settings.ca_validity.days, cert_days=self.settings.serving_validity.days,
                                 current=current, keep_cas=plan.keep_old_cas)

    def _write(self, plan: SecretPlan, new: dict[str, bytes], secret: Any) -> None:
        encoded: dict[str, bytes | str] = {k: base64.b64encode(v).decode() for k, v in new.items()}
        if secret is None:
            body = client.V1Secret(metadata=client.V1ObjectMeta(
                name=self.name, namespace=self.namespace,
                labels={"app.kubernetes.io/part-of": "batchgate", "app.kubernetes.io/managed-by": "batchgate-certs"}),
                type="kubernetes.io/tls", data=encoded)
            self.core.create_namespaced_secret(self.namespace, body, field_manager=FIELD_MANAGER)
        else:
            secret.data = encoded  # resourceVersion kept: a concurrent writer makes this a 409
            if plan.handled is not None:  # recorded, so the request is not handled again
                secret.metadata.annotations = {**(secret.metadata.annotations or {}), RENEWED_ANNOTATION: plan.handled}
            self.core.replace_namespaced_secret(self.name, self.namespace, secret, field_manager=FIELD_MANAGER)
        log.info("secret %s/%s: %s (%s)", self.namespace, self.name, plan.action, plan.reason)
        done = ("a new CA and serving certificate written, the CA injected into every caBundle first"
                if plan.action == "issue-all" else "a new serving certificate written under the same CA")
        self._event(Involved("v1", "Secret", self.name, self.namespace), "Normal",
                    CERTIFICATE_ISSUED if plan.action == "issue-all" else CERTIFICATE_RENEWED,
                    f"{plan.reason}: {done}; the gateway pods load it without a restart",
                    new[TLS_CERT].decode())

    def ensure_secret(self, configured: list[str]) -> tuple[SecretPlan, dict[str, bytes], list[str]]:
        """The Secret as it must be: read, planned, and when it changes, the new data made and its
        CA put into every configuration FIRST, so the API server trusts the new certificate before
        any pod can load it; only then written. A lost race (409) reads and plans again: the
        winner's Secret is kept, and the CA this attempt injected ages out of the bundles with the
        switch grace like any replaced CA. Returns the plan, the Secret's data, the webhooks injected."""
        injected: list[str] = []
        for _ in range(ATTEMPTS):
            data, secret = self._read()
            annotations = (secret.metadata.annotations or {}) if secret is not None else {}
            plan = plan_secret(data, self.settings, self.clock.now(), annotations)
            if plan.action == "keep":
                assert data is not None
                return plan, data, injected
            new = self.issue(plan, data)
            done, _, _ = self.inject(new, configured)
            injected.extend(hook for hook in done if hook not in injected)
            try:
                self._write(plan, new, secret)
                return plan, new, injected
            except ApiException as exc:
                if exc.status != CONFLICT:
                    raise
                log.info("secret %s/%s: another writer won (%s), reading again", self.namespace, self.name, exc.reason)
            configured = self.configured_bundles()  # now with the CA this attempt injected
        raise RuntimeError(f"secret {self.namespace}/{self.name}: still conflicting after {ATTEMPTS} attempts")

    # --- the webhook configurations -----------------------------------------------------------
    def _read_configuration(self, kind: str, name: str) -> dict[str, Any]:
        read = (self.admission.read_mutating_webhook_configuration if kind == MUTATING
                else self.admission.read_validating_webhook_configuration)
        return json.loads(cast(Any, read(name, _preload_content=False)).data)  # the raw HTTP response

    def _replace_configuration(self, kind: str, name: str, body: dict[str, Any]) -> None:
        replace = (self.admission.replace_mutating_webhook_configuration if kind == MUTATING
                   else self.admission.replace_validating_webhook_configuration)
        # a plain dict is serialized as the model
        replace(name, cast(Any, body), field_manager=FIELD_MANAGER, _preload_content=False)

    def configured_bundles(self) -> list[str]:
        """Every caBundle the product's configurations carry now: after a Secret is deleted, the
        only record of the CA that running pods' certificates still chain to."""
        bundles: list[str] = []
        for kind, name in self.configurations:
            try:
                config = self._read_configuration(kind, name)
            except ApiException as exc:
                if exc.status != NOT_FOUND:
                    raise
                continue  # reported by inject
            bundles.extend(hook["clientConfig"].get("caBundle", "") for hook in config.get("webhooks") or [])
        return bundles

    def policy(self) -> Policy | None:
        """The policy whose managed namespaces the webhooks follow; None when none is configured
        or it is invalid (then the selectors are left as they are, and the error is logged)."""
        if self.policy_configmap is None:
            return None
        namespace, name = self.policy_configmap
        try:
            raw = self.core.read_namespaced_config_map(name, namespace, _preload_content=False)
            configmap = json.loads(cast(Any, raw).data)  # the raw HTTP response
        except ApiException as exc:
            if exc.status != NOT_FOUND:
                raise
            configmap = None
        try:
            return policy_from_configmap(configmap, namespace, name)
        except PolicyError as exc:
            log.error("policy invalid, webhook namespaceSelectors left as they are: %s", exc)
            return None

    def inject(self, data: dict[str, bytes], configured: list[str], policy: Policy | None = None
               ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """Write the bundle of `data` (plan_bundle: its CAs, and within the switch grace the CAs the
        configurations carry) into each webhook lacking it; with a policy, its managed namespaces
        into each governed webhook's namespaceSelector and its pods conditions into the pods
        webhook's matchConditions; with a policy ConfigMap, its name into the policy webhook's
        matchConditions. Returns (injected, configurations missing, scoped). Each configuration's
        bundle also keeps the CAs it carries as read for this very write (a write conditioned on
        that read), so a CA another keeper injected a moment ago is never dropped within the grace."""
        injected: list[str] = []
        scoped: list[str] = []
        missing: list[str] = []
        wanted = namespace_selector(policy) if policy is not None else None
        conditions = {POD_WEBHOOK: pod_match_conditions(policy)} if policy is not None else {}
        if self.policy_configmap is not None:
            conditions[POLICY_WEBHOOK] = policy_match_conditions(self.policy_configmap)
        for kind, name in self.configurations:
            for _ in range(ATTEMPTS):
                try:
                    config = self._read_configuration(kind, name)
                except ApiException as exc:
                    if exc.status != NOT_FOUND:
                        raise
                    missing.append(f"{kind}/{name}")
                    self._report_missing(kind, name)
                    break
                self._missing.discard((kind, name))
                hooks = config.get("webhooks") or []
                own = [hook["clientConfig"].get("caBundle", "") for hook in hooks]
                bundle = plan_bundle(data, configured + own, self.settings, self.clock.now()).bundle
                stale = stale_bundles([WebhookBundle(kind, name, i, hook["name"], own[i])
                                       for i, hook in enumerate(hooks)], bundle)
                unscoped = stale_selectors(hooks, wanted) if wanted is not None else []
                unconditioned = [(i, wanted_conditions) for webhook, wanted_conditions in conditions.items()
                                 for i in stale_conditions(hooks, webhook, wanted_conditions)]
                if not stale and not unscoped and not unconditioned:
                    break
                for hook in stale:
                    hooks[hook.index]["clientConfig"]["caBundle"] = bundle
                for index in unscoped:
                    hooks[index]["namespaceSelector"] = wanted
                for index, wanted_conditions in unconditioned:
                    hooks[index]["matchConditions"] = wanted_conditions
                try:
                    self._replace_configuration(kind, name, config)
                except ApiException as exc:
                    if exc.status != CONFLICT:
                        raise
                    continue
                injected.extend(f"{kind}/{name}/{hook.name}" for hook in stale)
                scoped.extend(f"{kind}/{name}/{hooks[i]['name']}"
                              for i in sorted({*unscoped, *(i for i, _ in unconditioned)}))
                log.info("%s %s: caBundle into %d webhooks, managed namespaces into %d", kind, name,
                         len(stale), len(unscoped))
                if stale:
                    self._event(Involved(ADMISSION_API, kind, name), "Normal", CA_BUNDLE_INJECTED,
                                f"caBundle of {', '.join(h.name for h in stale)} set to the CAs of Secret "
                                f"{self.namespace}/{self.name}: it was missing, edited or outdated",
                                f"{config['metadata'].get('resourceVersion')}\n{bundle}")
                break
        return tuple(injected), tuple(missing), tuple(scoped)

    def _report_missing(self, kind: str, name: str) -> None:
        """Once per disappearance: the keeper cannot and must not recreate a configuration (it
        holds only get/update on it, and its rules are the install's), so it says what to do."""
        if (kind, name) in self._missing:
            return
        self._missing.add((kind, name))
        message = (f"{kind} {name} not found: its webhooks are not called and the keeper does not recreate it; "
                   f"re-apply the install: {REAPPLY}")
        log.error("%s", message)
        self._event(Involved(ADMISSION_API, kind, name), "Warning", CONFIGURATION_MISSING, message,
                    f"{kind}/{name}\n{self.clock.now():%Y-%m-%dT%H:%M}")

    def reconcile(self) -> PassResult:
        """One pass: the configurations' bundles read, the Secret kept or changed (a new one's CA
        injected before it is written), then every configuration's caBundle and selector."""
        configured = self.configured_bundles()
        plan, data, first = self.ensure_secret(configured)
        bundle = plan_bundle(data, configured, self.settings, self.clock.now())
        if bundle.carried:
            log.info("caBundle keeps %s beside the Secret's CA until %s (pods may still serve its certificate)",
                     "; ".join(bundle.carried), bundle.recheck_at)
        injected, missing, scoped = self.inject(data, configured, self.policy())
        return PassResult(plan, tuple(dict.fromkeys(first + list(injected))), missing, scoped, bundle)

    def watches(self, wake: threading.Event) -> list[ListWatch]:
        """What wakes the keeper: its Secret, each of its configurations and the policy ConfigMap,
        each watched by name (a fieldSelector on metadata.name, which RBAC's resourceNames cover).
        The keeper may watch but not list them: each watch that starts without a resourceVersion
        (the first, or after 410) opens with the object as an ADDED event, which wakes a pass too,
        so nothing missed in between stays missed."""
        def watch(resource: Resource, name: str, namespace: str | None = None) -> ListWatch:
            return ListWatch(self.kube, resource, lambda items, why: wake.set(), lambda kind, obj: wake.set(),
                             clock=self.clock, watch_only=True,
                             name=f"{resource.kind} {name}", namespace=namespace,
                             field_selector=f"metadata.name={name}", watch_timeout=self.watch_seconds,
                             min_backoff=WATCH_RETRY_SECONDS, max_backoff=WATCH_RETRY_SECONDS)

        found = [watch(SECRETS, self.name, self.namespace)]
        found += [watch(MUTATING_WEBHOOK_CONFIGURATIONS if kind == MUTATING else VALIDATING_WEBHOOK_CONFIGURATIONS,
                        name) for kind, name in self.configurations]
        if self.policy_configmap is not None:
            namespace, name = self.policy_configmap
            found.append(watch(CONFIGMAPS, name, namespace))
        return found

    def run(self, stop: threading.Event, resync_seconds: float) -> None:
        """Pass after pass until `stop`: at once when a watched object changes (a caBundle edited
        away comes back within a second), when a renewal or the switch grace falls due, and at the
        latest every `resync_seconds` (the fallback should a watch miss something); errors are
        logged and retried at the next wake."""
        wake = threading.Event()
        watches = self.watches(wake)
        for watch in watches:
            watch.start()

        def stopping() -> None:
            stop.wait()
            wake.set()
        threading.Thread(target=stopping, daemon=True, name="stop").start()
        while not stop.is_set():
            wake.clear()
            wait = resync_seconds
            try:
                result = self.reconcile()
                due_at = result.plan.recheck_at
                if result.bundle is not None and result.bundle.recheck_at is not None:
                    due_at = min(due_at, result.bundle.recheck_at)  # drop the old CA on time
                due = (due_at - self.clock.now()).total_seconds()
                wait = max(0.0, min(resync_seconds, due))
            except Exception as exc:  # noqa: BLE001 - API and network errors of every kind: next pass
                log.error("certificate pass failed, retrying in %.0fs: %s", min(resync_seconds, ERROR_RETRY_SECONDS), exc)
                wait = min(resync_seconds, ERROR_RETRY_SECONDS)
            wake.wait(wait)
        for watch in watches:
            watch.stop()
