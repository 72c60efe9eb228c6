"""The credential refresh the kubernetes client runs before every request, run at most once a second."""

from __future__ import annotations

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from batchgate.clock import FakeClock
from kubeapi.client import CredentialRefresh

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "c",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
    "users": [{"name": "u", "user": {"token": "the-token"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
}


def token_configuration() -> k8s_client.Configuration:
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config_from_dict(KUBECONFIG, client_configuration=configuration)
    return configuration


def test_a_token_kubeconfig_is_read_again_once_per_interval_not_before_every_request() -> None:
    clock = FakeClock()
    configuration = token_configuration()
    throttled = CredentialRefresh(configuration, 1.0, clock)
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer the-token"
    # what the kubeconfig's refresh would set again: seen only once the interval has passed
    configuration.host = "https://elsewhere:1"
    clock.advance(0.5)
    assert configuration.get_api_key_with_prefix("BearerToken") == "Bearer the-token"
    assert configuration.host == "https://elsewhere:1"
    clock.advance(0.5)
    configuration.get_api_key_with_prefix("BearerToken")
    assert configuration.host == "https://127.0.0.1:6443"
    # the loader's refresh installs itself again each time it runs: the throttle stays in front
    assert configuration.refresh_api_key_hook is throttled
