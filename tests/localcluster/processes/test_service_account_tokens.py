"""We test service-account authentication with the real `kubernetes` client: the default
ServiceAccount in every namespace, the TokenRequest API, and who the API server says a token is."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.localcluster.runtime.conftest import eventually


def whoami(proc_cluster, token: str):
    configuration = k8s.Configuration()
    configuration.host = proc_cluster.url
    configuration.ssl_ca_cert = str(proc_cluster.ca_file)
    configuration.api_key = {"authorization": f"bearer {token}"}
    with k8s.ApiClient(configuration) as api:
        review = k8s.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        return review.status.user_info


def default_account(proc_api, namespace: str):
    """Wait for the ServiceAccount controller to make `default` in a new namespace."""
    def made():
        items = k8s.CoreV1Api(proc_api).list_namespaced_service_account(namespace).items
        return next((a for a in items if a.metadata.name == "default"), None)
    return eventually(made, timeout=20)


def token_for(proc_api, namespace: str, account: str, **spec) -> str:
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    reply = k8s.CoreV1Api(proc_api).create_namespaced_service_account_token(account, namespace, request)
    return reply.status.token


def test_every_namespace_gets_a_default_service_account(proc_api, pns):
    default_account(proc_api, pns)


def test_a_requested_token_authenticates_as_the_service_account(proc_cluster, proc_api, pns):
    default_account(proc_api, pns)
    info = whoami(proc_cluster, token_for(proc_api, pns, "default", expirationSeconds=600))
    assert info.username == f"system:serviceaccount:{pns}:default"
    assert info.groups == ["system:serviceaccounts", f"system:serviceaccounts:{pns}", "system:authenticated"]


def test_a_token_bound_to_a_pod_stops_working_when_the_pod_goes(proc_cluster, proc_api, pk, pns):
    core = k8s.CoreV1Api(proc_api)
    default_account(proc_api, pns)
    pod = core.create_namespaced_pod(pns, {"metadata": {"name": "holder"},
                                           "spec": {"containers": [{"name": "c", "image": "simulated"}]}})
    token = token_for(proc_api, pns, "default", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "holder",
                                                                "uid": pod.metadata.uid})
    assert whoami(proc_cluster, token).extra["authentication.kubernetes.io/pod-name"] == ["holder"]
    pk("delete", "pod", "holder", "-n", pns, "--grace-period=0", "--force")
    with pytest.raises(ApiException) as caught:
        whoami(proc_cluster, token)
    assert caught.value.status == 401


@pytest.mark.parametrize(("account", "spec", "status", "message"), [
    pytest.param("nobody", {}, 404, 'serviceaccounts "nobody" not found', id="an account that does not exist"),
    pytest.param("default", {"expirationSeconds": 60}, 422,
                 "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                 id="a lifetime under ten minutes"),
    pytest.param("default", {"boundObjectRef": {"kind": "Secret", "name": "x"}}, 422,
                 'spec.boundObjectRef.kind: Unsupported value: "Secret"', id="binding to something not a pod"),
])
def test_bad_token_requests_are_refused_with_the_reason(proc_api, pns, account, spec, status, message):
    default_account(proc_api, pns)
    with pytest.raises(ApiException) as caught:
        token_for(proc_api, pns, account, **spec)
    assert caught.value.status == status
    assert message in json.loads(caught.value.body)["message"]


def test_a_token_for_another_audience_is_not_accepted_by_the_api_server(proc_cluster, proc_api, pns):
    default_account(proc_api, pns)
    token = token_for(proc_api, pns, "default", audiences=["vault"])
    with pytest.raises(ApiException) as caught:
        whoami(proc_cluster, token)
    assert caught.value.status == 401


def test_kubectl_create_token_and_whoami_as_a_user_would(pk, proc_api, pns):
    default_account(proc_api, pns)
    token = pk("create", "token", "default", "-n", pns, "--duration=15m").stdout.strip()
    whoami = pk("auth", "whoami", "--token", token).stdout
    assert f"system:serviceaccount:{pns}:default" in whoami
    assert f"[system:serviceaccounts system:serviceaccounts:{pns} system:authenticated]" in whoami
