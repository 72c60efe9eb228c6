"""charts/batchgate: generated from manifests/ (charts/generate.py), it renders with default
values what `kubectl kustomize manifests/default` does, object for object; each value changes
exactly what the table says; `helm lint` passes; a bad value is refused by a line naming it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from charts import generate
from demo.kubectl import KUBECTL
from demo.stack import DEMO_MANIFESTS
from tests.helm import CHART, Helm, without_helm_metadata
from tests.realcluster_fixtures import real_helm

Objects = dict[tuple[str, str, str, str], dict[str, Any]]
WEBHOOK, CONTROLLER, POLICY = "batchgate-webhook", "batchgate-controller", "batchgate-policy"


def keyed(objects: list[dict[str, Any]]) -> Objects:
    out: Objects = {}
    for obj in objects:
        key = generate.object_key(obj)
        assert key not in out, f"{key} rendered twice"
        out[key] = obj
    return out


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(real_helm(), tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="module")
def kustomized() -> dict[str, Objects]:
    return {overlay: keyed(generate.kustomize(KUBECTL, generate.MANIFESTS / overlay))
            for overlay in ("default", "cert-manager", "monitoring")}


def rendered(helm: Helm, *flags: str) -> Objects:
    return {key: without_helm_metadata(obj) for key, obj in keyed(helm.template(*flags)).items()}


def test_the_committed_chart_is_what_the_generator_writes_from_the_manifests() -> None:
    files = generate.chart_files(KUBECTL)
    on_disk = {str(p.relative_to(CHART)): p.read_text() for p in CHART.rglob("*") if p.is_file()}
    stale = sorted(set(on_disk) ^ set(files))
    assert not stale, f"charts/batchgate differs from manifests/ in {stale}: run python -m charts.generate"
    drifted = sorted(name for name, text in files.items() if on_disk[name] != text)
    assert not drifted, f"charts/batchgate differs from manifests/ in {drifted}: run python -m charts.generate"


def test_default_values_render_manifests_default_object_for_object(helm: Helm, kustomized: dict[str, Objects]) -> None:
    chart, default = rendered(helm), kustomized["default"]
    assert sorted(chart) == sorted(default)
    for key, obj in default.items():
        assert chart[key] == obj, f"{key} differs from manifests/default"


def test_helm_labels_every_object_and_keeps_batchgate_s_crds_on_uninstall(helm: Helm) -> None:
    for obj in helm.template():
        meta = obj["metadata"]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm", meta["name"]
        kept = meta.get("annotations", {}).get("helm.sh/resource-policy")
        assert kept == ("keep" if obj["kind"] == "CustomResourceDefinition" else None), meta["name"]


@pytest.mark.parametrize("flags", [(), ("--set", "certificates=cert-manager"), ("--set", "monitoring.enabled=true")],
                         ids=["helm lint passes with default values", "and with cert-manager's certificates",
                              "and with monitoring"])
def test_helm_lint(helm: Helm, flags: tuple[str, ...]) -> None:
    done = helm.run("lint", "--strict", str(CHART), *flags)
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout, done.stdout


def containers(objects: Objects, deployment: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = objects[("apps", "Deployment", "batchgate-system", deployment)]["spec"]["template"][
        "spec"]["containers"]
    return found


def policy(objects: Objects) -> dict[str, Any]:
    text = objects[("", "ConfigMap", "batchgate-system", POLICY)]["data"]["policy.yaml"]
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def set_image(objects: Objects) -> None:
    for deployment in (WEBHOOK, CONTROLLER):
        for container in containers(objects, deployment):
            container["image"] = "registry.example/ml/batchgate:0.2.0"


def set_replicas(deployment: str, replicas: int) -> Callable[[Objects], None]:
    def change(objects: Objects) -> None:
        objects[("apps", "Deployment", "batchgate-system", deployment)]["spec"]["replicas"] = replicas
    return change


SMALL = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}}


def set_resources(deployment: str, container: str) -> Callable[[Objects], None]:
    def change(objects: Objects) -> None:
        next(c for c in containers(objects, deployment) if c["name"] == container)["resources"] = SMALL
    return change


def set_selector(objects: Objects) -> None:
    text = policy(objects)
    text["managedNamespaces"]["selector"] = {"matchLabels": {"team": "ml"}}
    objects[("", "ConfigMap", "batchgate-system", POLICY)]["data"]["policy.yaml"] = yaml.safe_dump(text)


DEMO_POLICY = yaml.safe_load((DEMO_MANIFESTS / "policy.yaml").read_text())["data"]["policy.yaml"]


def set_policy(objects: Objects) -> None:
    objects[("", "ConfigMap", "batchgate-system", POLICY)]["data"]["policy.yaml"] = DEMO_POLICY


def resources_flags(key: str) -> tuple[str, ...]:
    return ("--set", f"{key}.resources.requests.cpu=100m", "--set", f"{key}.resources.requests.memory=128Mi",
            "--set", f"{key}.resources.limits.memory=1Gi")


@pytest.mark.parametrize("flags, change", [
    (("--set", "image.repository=registry.example/ml/batchgate", "--set", "image.tag=0.2.0"), set_image),
    (("--set", "webhook.replicas=3"), set_replicas(WEBHOOK, 3)),
    (("--set", "controller.replicas=1"), set_replicas(CONTROLLER, 1)),
    (resources_flags("webhook"), set_resources(WEBHOOK, "webhook")),
    (resources_flags("controller"), set_resources(CONTROLLER, "controller")),
    (("--set", "managedNamespaces.selector.matchLabels.team=ml"), set_selector),
    (("--set-file", "policy={policy_file}"), set_policy),
], ids=["image names every container of the gateway and the controller, the keeper's too",
        "webhook.replicas is the gateway's replicas", "controller.replicas is the controller's replicas",
        "webhook.resources is the gateway container's resources, not the keeper's",
        "controller.resources is the controller container's resources",
        "managedNamespaces.selector replaces the policy's selector and keeps the rest of it",
        "policy is the policy ConfigMap's policy.yaml"])
def test_a_value_changes_only_what_it_names(helm: Helm, kustomized: dict[str, Objects], tmp_path: Path,
                                            flags: tuple[str, ...], change: Callable[[Objects], None]) -> None:
    (tmp_path / "policy.yaml").write_text(DEMO_POLICY)
    flags = tuple(flag.format(policy_file=tmp_path / "policy.yaml") for flag in flags)
    expected = copy.deepcopy(kustomized["default"])
    change(expected)
    chart = rendered(helm, *flags)
    assert sorted(chart) == sorted(expected)
    for key, obj in expected.items():
        if key[1] == "ConfigMap" and key[3] == POLICY:
            assert policy(chart) == policy(expected)
        else:
            assert chart[key] == obj, f"{key} is not what {' '.join(flags)} should make it"


@pytest.mark.parametrize("flags, overlays", [
    (("--set", "certificates=cert-manager"), ("cert-manager",)),
    (("--set", "monitoring.enabled=true"), ("default", "monitoring")),
    (("--set", "certificates=cert-manager", "--set", "monitoring.enabled=true"), ("cert-manager", "monitoring")),
], ids=["certificates=cert-manager renders manifests/cert-manager object for object",
        "monitoring.enabled adds manifests/monitoring's objects", "both together"])
def test_a_value_that_chooses_an_overlay_renders_that_overlay(helm: Helm, kustomized: dict[str, Objects],
                                                              flags: tuple[str, ...], overlays: tuple[str, ...]) -> None:
    expected = {key: obj for overlay in overlays for key, obj in kustomized[overlay].items()}
    chart = rendered(helm, *flags)
    assert sorted(chart) == sorted(expected)
    for key, obj in expected.items():
        assert chart[key] == obj, f"{key} differs from manifests/{'+'.join(overlays)}"


@pytest.mark.parametrize("flags, message", [
    (("--set", "certificates=vault"), "at '/certificates': value must be one of 'keeper', 'cert-manager'"),
    (("--set", "webhook.replicas=0"), "at '/webhook/replicas': minimum: got 0, want 1"),
    (("--set", "image.tag=2"), "at '/image/tag': got number, want string"),
    (("--set", "monitoring.enable=true"), "at '/monitoring': additional properties 'enable' not allowed"),
    (("--set", "policy=[unclosed", "--set", "managedNamespaces.selector.matchLabels.team=ml"),
     "policy: not YAML"),
], ids=["an unknown certificate keeper is refused naming both choices", "no gateway at all is refused",
        "a tag read as a number is refused (use --set-string)", "a misspelt value is refused by name",
        "a policy that is not YAML is refused when the selector must be written into it"])
def test_a_bad_value_is_refused_by_a_line_naming_it(helm: Helm, flags: tuple[str, ...], message: str) -> None:
    done = helm.run("template", "batchgate", str(CHART), *flags, check=False)
    assert done.returncode != 0 and message in done.stderr, done.stderr
