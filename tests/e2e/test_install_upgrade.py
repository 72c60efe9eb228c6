"""The documented upgrade on a running install (docs/install.md, "Upgrade"): the install applied
server side, the keeper's caBundle injected, the admin's edit of the policy ConfigMap (the demo's
policy, applied by `install_product`), then the same overlay applied server side again while
alice keeps submitting: no conflict, the caBundle and the admin's policy kept, no failed review.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
import yaml

from demo.kubectl import Kubectl
from demo.stack import DEMO_MANIFESTS, LOCAL_OVERLAY, SYSTEM_NAMESPACE, product_status
from tests.e2e.test_install import STREAM_SECONDS, bundles, eventually, installed, stream_during

UPGRADE = ("apply", "--server-side", "-k", str(LOCAL_OVERLAY), "-l", "app.kubernetes.io/component!=policy")
"""docs/install.md's upgrade: every object of the install but the policy, which the admin owns."""


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    with installed(tmp_path_factory.mktemp("upgrade")) as (made, _):
        yield made


def policy_text(kubectl: Kubectl) -> str:
    text: str = kubectl.get_json("configmap", "-n", SYSTEM_NAMESPACE, "batchgate-policy")["data"]["policy.yaml"]
    return text


def test_re_applying_the_install_keeps_the_bundle_and_the_admin_s_policy_and_fails_no_review(kubectl: Kubectl) -> None:
    eventually(lambda: product_status(kubectl)[0], "every product pod Ready: " + product_status(kubectl)[1])
    admins = yaml.safe_load((DEMO_MANIFESTS / "policy.yaml").read_text())["data"]["policy.yaml"]
    assert policy_text(kubectl) == admins, "install_product applies the demo's policy: the admin's edit"
    (bundle,) = bundles(kubectl)
    upgrades: list[subprocess.CompletedProcess[str]] = []
    sent, failed, errors = stream_during(kubectl, lambda k: upgrades.append(k.run(*UPGRADE, check=False)),
                                         STREAM_SECONDS)
    (upgrade,) = upgrades
    assert upgrade.returncode == 0, upgrade.stderr
    assert sent and not failed, errors
    assert bundles(kubectl) == {bundle}, "the keeper's caBundle was reset by the re-apply"
    assert policy_text(kubectl) == admins, "the admin's policy was put back to the shipped one"
