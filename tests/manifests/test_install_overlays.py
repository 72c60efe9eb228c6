"""The install overlays as `kubectl kustomize` builds them: one image reference, no third-party
CRD, hardened and highly available pods, and certificates from cert-manager in its overlay.

We test these aspects: which objects each overlay carries, the image (set once, never :latest),
restricted Pod Security on every product pod, the gateway's availability (replicas, PDB, spread,
graceful shutdown), and each webhook's failure policy being explained.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.manifests.kustomize import ROOT, build

INSTALLS = ["default", "cert-manager", "local"]
THIRD_PARTY = {"pytorchjobs.kubeflow.org", "rayjobs.ray.io", "rayclusters.ray.io"}
OURS = {"clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io", "resourceflavors.kueue.x-k8s.io",
        "workloads.kueue.x-k8s.io", "workloadpriorityclasses.kueue.x-k8s.io",
        "appwrappers.workload.codeflare.dev", "podgroups.scheduling.x-k8s.io"}


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def deployments(overlay: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in of_kind(build(overlay), "Deployment")}


@pytest.mark.parametrize("overlay", INSTALLS, ids=lambda o: f"{o} installs our CRDs and none of the operators'")
def test_an_install_never_carries_third_party_crds(overlay: str) -> None:
    names = {d["metadata"]["name"] for d in of_kind(build(overlay), "CustomResourceDefinition")}
    assert names == OURS


def test_the_optional_overlay_supplies_exactly_the_third_party_crds() -> None:
    assert {d["metadata"]["name"] for d in build("third-party-crds")} == THIRD_PARTY


@pytest.mark.parametrize("overlay, image", [
    pytest.param("default", "ghcr.io/batchgate/batchgate:0.1.0", id="default runs the released image"),
    pytest.param("cert-manager", "ghcr.io/batchgate/batchgate:0.1.0", id="cert-manager runs the released image"),
    pytest.param("local", "batchgate:local", id="local runs the image built from this tree"),
])
def test_every_container_runs_the_one_image_set_by_kustomize(overlay: str, image: str) -> None:
    for deployment in deployments(overlay).values():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert container["image"] == image and not image.endswith(":latest")


def test_the_image_is_named_in_the_base_kustomization_only() -> None:
    named = [p.relative_to(ROOT).as_posix() for p in (ROOT / "manifests").rglob("*.yaml")
             if "ghcr.io/batchgate/batchgate" in p.read_text()]
    # The local overlay names it only to replace it with the locally built image.
    assert sorted(named) == ["manifests/image/kustomization.yaml", "manifests/local/kustomization.yaml"]


@pytest.mark.parametrize("overlay", INSTALLS)
@pytest.mark.parametrize("name", ["batchgate-webhook", "batchgate-controller"])
def test_product_pods_meet_the_restricted_pod_security_level(overlay: str, name: str) -> None:
    spec = deployments(overlay)[name]["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["priorityClassName"] == "batchgate-control-plane"
    for container in spec["containers"]:
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False and security["readOnlyRootFilesystem"] is True
        assert security["capabilities"] == {"drop": ["ALL"]}
        if container["name"] != "certs":  # the certificate keeper serves nothing to probe
            assert {"readinessProbe", "livenessProbe"} <= set(container)
        assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}, "a writable /tmp on a read-only root"
        assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]


@pytest.mark.parametrize("overlay", INSTALLS)
def test_the_gateway_s_startup_probe_outlasts_its_wait_for_its_certificate_files(overlay: str) -> None:
    """Liveness (10 s x 3) would kill a gateway still waiting for the Secret a fresh install's
    keeper makes (the kubelet projects it at its next sync, about a minute): the startup probe
    holds liveness off for longer than the gateway's own --cert-wait (tests/e2e/test_install_startup.py)."""
    spec = deployments(overlay)["batchgate-webhook"]["spec"]["template"]["spec"]
    (gateway,) = [c for c in spec["containers"] if c["name"] == "webhook"]
    args = gateway["args"]
    wait = int(args[args.index("--cert-wait") + 1]) if "--cert-wait" in args else 0
    startup = gateway["startupProbe"]
    assert startup["httpGet"] == gateway["livenessProbe"]["httpGet"]
    budget = startup.get("initialDelaySeconds", 0) + startup["periodSeconds"] * startup["failureThreshold"]
    assert budget > max(wait, 60), f"{budget} s of startup probe for a wait of up to {wait} s"


def test_the_product_namespace_enforces_the_restricted_level() -> None:
    (namespace,) = of_kind(build("default"), "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("name", ["batchgate-webhook", "batchgate-controller"])
def test_each_process_has_two_replicas_a_pdb_and_node_spread(name: str) -> None:
    docs = build("default")
    deployment = deployments("default")[name]
    assert deployment["spec"]["replicas"] >= 2
    (pdb,) = [d for d in of_kind(docs, "PodDisruptionBudget") if d["metadata"]["name"] == name]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    spread = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert "kubernetes.io/hostname" in {c["topologyKey"] for c in spread}


def test_the_gateway_drains_before_it_stops() -> None:
    deployment = deployments("default")["batchgate-webhook"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = [c for c in spec["containers"] if c["name"] == "webhook"]
    assert container["lifecycle"]["preStop"]["sleep"]["seconds"] < spec["terminationGracePeriodSeconds"]
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_every_webhook_explains_its_failure_policy_and_timeout() -> None:
    for path in (ROOT / "manifests" / "webhook").glob("*.yaml"):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip().startswith("failurePolicy:"):
                above = lines[number - 1].strip()
                assert above.startswith("#"), f"{path.name}:{number + 1}: failurePolicy without a comment"


def test_the_policy_webhook_fails_closed_and_lets_a_cluster_admin_break_the_glass() -> None:
    """tests/e2e/test_break_glass.py shows the admin's repair with every gateway down."""
    (config,) = [d for d in of_kind(build("default"), "ValidatingWebhookConfiguration")]
    (hook,) = [h for h in config["webhooks"] if h["name"] == "policy.validate.batchgate.dev"]
    assert hook["failurePolicy"] == "Fail"
    (glass,) = [c for c in hook["matchConditions"] if c["name"] == "not-break-glass"]
    assert "system:masters" in glass["expression"]


@pytest.mark.parametrize("overlay", INSTALLS, ids=lambda o: f"{o} leaves every caBundle to its injector")
def test_no_install_ships_a_ca_bundle(overlay: str) -> None:
    """The keeper (or cainjector) writes the caBundle and owns it alone: a shipped placeholder made
    the documented re-apply (`kubectl apply --server-side`) conflict with it, or with
    --force-conflicts reset it and fail every review until it was injected again."""
    for config in (d for d in build(overlay) if d["kind"].endswith("WebhookConfiguration")):
        shipped = [h["name"] for h in config["webhooks"] if "caBundle" in h["clientConfig"]]
        assert not shipped, f"{config['metadata']['name']}: caBundle shipped in {shipped}"


@pytest.mark.parametrize("overlay", INSTALLS, ids=lambda o: f"{o}: the upgrade leaves out the policy alone")
def test_the_upgrade_selector_leaves_out_the_admin_s_policy_and_nothing_else(overlay: str) -> None:
    """docs/install.md upgrades with `-l 'app.kubernetes.io/component!=policy'`: the policy is the
    admin's once installed, and everything else must still be applied."""
    left_out = [f"{d['kind']}/{d['metadata']['name']}" for d in build(overlay)
                if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "policy"]
    assert left_out == ["ConfigMap/batchgate-policy"]


def test_cert_manager_issues_the_serving_secret_and_injects_every_ca_bundle() -> None:
    docs = build("cert-manager")
    (serving,) = [c for c in of_kind(docs, "Certificate") if not c["spec"].get("isCA")]
    (volume,) = [v for v in deployments("cert-manager")["batchgate-webhook"]["spec"]["template"]["spec"]["volumes"]
                 if "secret" in v]
    assert serving["spec"]["secretName"] == volume["secret"]["secretName"]
    assert "batchgate-webhook.batchgate-system.svc" in serving["spec"]["dnsNames"]
    configs = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
    assert len(configs) == 3
    for config in configs:
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "batchgate-system/batchgate-webhook"


def test_monitoring_adds_a_service_and_a_servicemonitor_per_process() -> None:
    docs = build("monitoring")
    metrics = [d for d in of_kind(docs, "Service")
               if d["metadata"]["labels"].get("app.kubernetes.io/component") == "metrics"]
    assert len(metrics) == 2 and len(of_kind(docs, "ServiceMonitor")) == 2


def test_monitoring_deploys_the_dashboard_read_only_with_every_kind_it_watches() -> None:
    from controller.adapters.kube import RESOURCES
    from dashboard.views.observed import KINDS

    docs = build("monitoring")
    (role,) = [d for d in of_kind(docs, "ClusterRole") if d["metadata"]["name"] == "batchgate-dashboard"]
    granted = {(group, resource) for rule in role["rules"] for group in rule["apiGroups"] for resource in rule["resources"]}
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"} for rule in role["rules"])
    assert granted == {(RESOURCES[k].group, RESOURCES[k].plural) for k in KINDS}
    (deployment,) = [d for d in of_kind(docs, "Deployment") if d["metadata"]["name"] == "batchgate-dashboard"]
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["args"][0] == "dashboard" and container["image"] == "ghcr.io/batchgate/batchgate:0.1.0"
    assert spec["serviceAccountName"] == "batchgate-dashboard" and spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (service,) = [d for d in of_kind(docs, "Service") if d["metadata"]["name"] == "batchgate-dashboard"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_the_default_install_runs_the_certificate_keeper_beside_every_gateway() -> None:
    spec = deployments("default")["batchgate-webhook"]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in spec["containers"]}
    assert containers["certs"]["args"][:2] == ["certs", "manage"]
    assert "--cert-wait" in containers["webhook"]["args"]
    (certs,) = [v for v in spec["volumes"] if v["name"] == "certs"]
    assert certs["secret"] == {"secretName": "batchgate-webhook-tls", "optional": True}


def test_the_cert_manager_install_does_not_run_the_keeper() -> None:
    spec = deployments("cert-manager")["batchgate-webhook"]["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["webhook"]
    assert not [d for d in build("cert-manager") if d["metadata"]["name"] == "batchgate-webhook-certs"]


def test_the_keeper_may_touch_only_its_own_secret_and_configurations() -> None:
    from certs.cli import CONFIGURATIONS

    docs = build("default")
    (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "batchgate-webhook-certs"]
    (cluster_role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "batchgate-webhook-certs"]
    assert role["metadata"]["namespace"] == "batchgate-system"
    for rule in role["rules"]:
        assert rule["resources"] == ["secrets"]
        assert rule.get("resourceNames") == ["batchgate-webhook-tls"] or rule["verbs"] == ["create"]
    named = {(rule["resources"][0], name) for rule in cluster_role["rules"] for name in rule["resourceNames"]}
    expected = {(kind.lower() + "s", name) for kind, name in (c.split("/") for c in CONFIGURATIONS)}
    assert named == expected
    shipped = {d["metadata"]["name"] for d in docs if d["kind"].endswith("WebhookConfiguration")}
    assert {name for _, name in expected} == shipped, "the keeper's default list is every shipped configuration"


def test_the_shipped_webhook_selectors_are_what_the_shipped_policy_yields() -> None:
    from batchgate.policy import load_policy_document
    from certs.scope import POD_WEBHOOK, governed, namespace_selector, pod_match_conditions, stale_selectors

    docs = build("default")
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "batchgate-policy"]
    policy = load_policy_document(configmap["data"]["policy.yaml"])
    assert policy.managed_namespaces.selector.to_wire() == {"matchLabels": {"mlbatch-team-namespace": "true"}}
    hooks = [h for d in docs if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]]
    assert sum(governed(h) for h in hooks) == 4
    assert stale_selectors(hooks, namespace_selector(policy)) == []
    (pods,) = [h for h in hooks if h["name"] == POD_WEBHOOK]
    assert pods["matchConditions"] == pod_match_conditions(policy)


def test_the_policy_webhook_ships_the_conditions_the_keeper_writes_for_the_policy_configmap() -> None:
    """The ConfigMap named by the gateway's and the keeper's --policy-configmap, and nothing else."""
    from certs.scope import BREAK_GLASS_CONDITION, POLICY_WEBHOOK, policy_match_conditions

    docs = build("default")
    hooks = {h["name"]: h for d in docs if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]}
    spec = deployments("default")["batchgate-webhook"]["spec"]["template"]["spec"]
    named = {c["name"]: c["args"][c["args"].index("--policy-configmap") + 1] for c in spec["containers"]}
    assert named == {"webhook": "batchgate-system/batchgate-policy", "certs": "batchgate-system/batchgate-policy"}
    namespace, name = named["certs"].split("/")
    assert hooks[POLICY_WEBHOOK]["matchConditions"] == policy_match_conditions((namespace, name))
    assert hooks[POLICY_WEBHOOK]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    assert hooks["clusterqueues.validate.batchgate.dev"]["matchConditions"] == [BREAK_GLASS_CONDITION]


def test_the_keeper_follows_the_shipped_policy_configmap() -> None:
    spec = deployments("default")["batchgate-webhook"]["spec"]["template"]["spec"]
    (keeper,) = [c for c in spec["containers"] if c["name"] == "certs"]
    assert keeper["args"][keeper["args"].index("--policy-configmap") + 1] == "batchgate-system/batchgate-policy"
