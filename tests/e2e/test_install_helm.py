"""The chart installed, upgraded and uninstalled as docs/install.md ("Helm") says, on the real
control plane, with the kustomize install's checks (tests/e2e/test_install.py,
test_install_startup.py): every pod Ready and the keeper's caBundle injected, alice's first
AppWrapper admitted; `helm upgrade` while alice keeps submitting fails no review and keeps the
caBundle and the admin's policy; `helm uninstall` leaves users' objects and the CRDs alone. One
cluster, one install, one upgrade, one uninstall."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from demo.kubectl import Kubectl
from demo.stack import DEMO_MANIFESTS, local_image, product_status
from tests import clusters
from tests.e2e.test_install import (STREAM_SECONDS, alice_s_first_appwrapper_is_mutated_and_admitted, bundles,
                                    eventually, installed_cluster, stream_during, uninstall_keeps_users_objects)
from tests.e2e.test_install_startup import policy_text
from tests.helm import CHART, RELEASE, Helm
from tests.realcluster_fixtures import real_helm

RELEASE_NAMESPACE = "default"
"""The release's own records live outside batchgate-system, which the chart makes and removes."""


def test_helm_install_upgrade_and_uninstall_keep_the_gateway_admitting_and_users_objects(tmp_path: Path) -> None:
    if not clusters.on_real():
        pytest.skip("helm's install runs on the real control plane (make test builds it)")
    binary = real_helm()
    admins = yaml.safe_load((DEMO_MANIFESTS / "policy.yaml").read_text())["data"]["policy.yaml"]
    (tmp_path / "policy.yaml").write_text(admins)
    repository, tag = local_image().rsplit(":", 1)
    values = ("--set", f"image.repository={repository}", "--set-string", f"image.tag={tag}",
              "--set-file", f"policy={tmp_path / 'policy.yaml'}")
    helms: list[Helm] = []

    def helm_install(kubectl: Kubectl) -> None:
        helms.append(Helm(binary, tmp_path / "helm-home", kubectl.kubeconfig))
        helms[0].run("install", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, *values)
        eventually(lambda: product_status(kubectl)[0], "every product pod Ready after helm install: "
                   + product_status(kubectl)[1])

    with installed_cluster(tmp_path, install=helm_install) as (_, kubectl, crds_before):
        (helm,) = helms
        alice_s_first_appwrapper_is_mutated_and_admitted(kubectl)
        assert policy_text(kubectl) == admins

        (bundle,) = bundles(kubectl)
        upgrades = []
        sent, failed, errors = stream_during(kubectl, lambda _: upgrades.append(helm.run(
            "upgrade", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, "--reuse-values", check=False)),
            STREAM_SECONDS)
        (upgrade,) = upgrades
        assert upgrade.returncode == 0, upgrade.stderr
        assert "REVISION: 2" in upgrade.stdout, upgrade.stdout
        assert sent and not failed, errors
        assert bundles(kubectl) == {bundle}, "helm upgrade reset the keeper's caBundle"
        assert policy_text(kubectl) == admins, "helm upgrade --reuse-values put back the shipped policy"
        eventually(lambda: product_status(kubectl)[0], "every product pod Ready after helm upgrade: "
                   + product_status(kubectl)[1])

        uninstall_keeps_users_objects(kubectl, crds_before, lambda _: helm.run(
            "uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE, "--wait", "--timeout", "120s"))
