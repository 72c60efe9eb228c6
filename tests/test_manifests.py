"""The shipped manifests build with kustomize (the kubectl users run) and say what they mean."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
KUSTOMIZATIONS = sorted(p.parent for p in (ROOT / "manifests").rglob("kustomization.yaml")
                        if yaml.safe_load(p.read_text())["kind"] == "Kustomization")
"""Components (manifests/image, manifests/certificate-keeper) build only inside an overlay."""


def build(directory: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl must be installed (it is on every machine, CI included)"
    out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_kustomization_builds(directory: Path) -> None:
    docs = build(directory)
    assert docs and all(doc.get("kind") and doc.get("apiVersion") for doc in docs)


def test_every_kustomization_is_reached_from_an_overlay_or_is_one() -> None:
    overlays = {"default", "cert-manager", "local", "monitoring", "third-party-crds"}
    assert overlays <= {p.name for p in KUSTOMIZATIONS}
    assert not (ROOT / "manifests" / "kustomization.yaml").exists(), "install through an overlay, not manifests/"


def test_webhook_configurations_stay_out_of_the_system_namespaces() -> None:
    docs = build(ROOT / "manifests" / "webhook")
    configs = [d for d in docs if d["kind"].endswith("WebhookConfiguration")]
    assert {d["kind"] for d in configs} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for config in configs:
        for hook in config["webhooks"]:
            assert hook["sideEffects"] == "None"
            assert hook["clientConfig"]["service"]["namespace"] == "batchgate-system"
            if all(rule.get("scope") == "Cluster" for rule in hook["rules"]):
                assert "namespaceSelector" not in hook  # cluster-scoped objects have no namespace
                continue
            selector = hook["namespaceSelector"]
            if hook["name"].startswith("policy."):
                assert selector == {"matchLabels": {"kubernetes.io/metadata.name": "batchgate-system"}}
            else:
                (expr,) = selector["matchExpressions"]
                assert expr["operator"] == "NotIn" and "kube-system" in expr["values"]


def test_the_policy_configmap_carries_policy_yaml() -> None:
    (configmap,) = build(ROOT / "manifests" / "policy")
    assert set(configmap["data"]) == {"policy.yaml"}
    assert isinstance(yaml.safe_load(configmap["data"]["policy.yaml"]), dict)


def test_the_shipped_policy_is_valid_and_close_to_the_defaults() -> None:
    from batchgate.policy import DEFAULT_POLICY, load_policy_document

    path = ROOT / "manifests" / "policy" / "policy-configmap.yaml"
    policy = load_policy_document(path.read_text(), str(path))
    assert policy.queues == DEFAULT_POLICY.queues
    assert policy.exempt.users == ("system:serviceaccount:batchgate-system:batchgate-controller",)
