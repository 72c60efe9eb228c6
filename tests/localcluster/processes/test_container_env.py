"""We test the kubelet's environment rules for process pods: $(VAR) expansion, env/valueFrom,
envFrom, the service variables, and the CreateContainerConfigError messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localcluster.sim.container_env import ContainerConfigError, PodFacts, expand, resolve, service_variables

FACTS = PodFacts("127.1.0.7", "10.0.0.1", {"cpu": "8", "memory": "16Gi"})
OBJECTS = {("ConfigMap", "team", "settings"): {"MODE": b"fast", "bad key": b"x"},
           ("Secret", "team", "creds"): {"password": b"s3cret"}}


def lookup(kind, namespace, name):
    return OBJECTS.get((kind, namespace, name))


def a_pod(container, **spec):
    return {"metadata": {"name": "p", "namespace": "team", "uid": "u-1", "labels": {"app": "x", "tier": "web"},
                         "annotations": {"note": 'say "hi"'}},
            "spec": {"nodeName": "node-0", "containers": [container], **spec}}


def env_of(container, **spec):
    return resolve(a_pod(container, **spec), container, FACTS, service_variables("127.0.0.1", 6443), lookup).env_map()


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("$(A)-$(B)", "1-2", id="known names are replaced"),
    pytest.param("$(NOPE)", "$(NOPE)", id="an unknown name stays as written"),
    pytest.param("$$(A)", "$(A)", id="a doubled dollar escapes a reference"),
    pytest.param("$(A", "$(A", id="an unterminated reference stays as written"),
    pytest.param("cost $5 $", "cost $5 $", id="a dollar before anything else is kept"),
    pytest.param("$()", "$()", id="an empty name is unknown"),
])
def test_dollar_references_expand_as_the_kubelet_does(text, expected):
    assert expand(text, {"A": "1", "B": "2"}.get) == expected


@given(st.text(alphabet="ab$", max_size=20))
def test_without_references_expansion_only_unescapes_doubled_dollars(text):
    assert expand(text, lambda name: "never") == text.replace("$$", "$")


@given(st.text(alphabet="ab$()", max_size=20))
def test_with_no_known_names_expansion_never_grows_the_text(text):
    assert len(expand(text, lambda name: None)) <= len(text)


@pytest.mark.parametrize(("env", "name", "expected"), [
    pytest.param([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}], "X", "127.1.0.7",
                 id="the pod IP from the downward API"),
    pytest.param([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}}], "X", "web",
                 id="one label"),
    pytest.param([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations"}}}], "X",
                 'note="say \\"hi\\""', id="all annotations quoted as Go does"),
    pytest.param([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}}], "X", "default",
                 id="the default service account"),
    pytest.param([{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}],
                 "X", "16384", id="an unset memory limit is the node's allocatable"),
    pytest.param([{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}], "X", "s3cret",
                 id="a secret key"),
    pytest.param([{"name": "A", "value": "1"}, {"name": "X", "value": "$(A)$(KUBERNETES_SERVICE_PORT)$(B)"},
                  {"name": "B", "value": "2"}], "X", "16443$(B)", id="only earlier and service variables expand"),
    pytest.param([{"name": "KUBERNETES_SERVICE_HOST", "value": "mine"}], "KUBERNETES_SERVICE_HOST", "mine",
                 id="a pod variable overrides a service variable"),
])
def test_env_values(env, name, expected):
    assert env_of({"name": "c", "env": env})[name] == expected


def test_env_from_takes_a_prefix_and_skips_invalid_names():
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}]}
    resolved = resolve(a_pod(container), container, FACTS, [], lookup)
    assert resolved.env_map()["CFG_MODE"] == "fast"
    assert resolved.skipped_keys == ("CFG_bad key",)


def test_command_and_args_expand_against_the_final_environment():
    container = {"name": "c", "command": ["serve", "--host=$(POD_IP)"], "args": ["$(MISSING)", "$$(POD_IP)"],
                 "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}
    assert resolve(a_pod(container), container, FACTS, [], lookup).argv == (
        "serve", "--host=127.1.0.7", "$(MISSING)", "$(POD_IP)")


@pytest.mark.parametrize(("env", "message"), [
    pytest.param([{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}],
                 'configmap "gone" not found', id="a missing configmap"),
    pytest.param([{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}}],
                 "couldn't find key user in Secret team/creds", id="a missing secret key"),
])
def test_missing_references_are_create_container_config_errors(env, message):
    with pytest.raises(ContainerConfigError, match=message):
        env_of({"name": "c", "env": env})


def test_optional_references_that_are_missing_define_nothing():
    env = env_of({"name": "c", "env": [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k", "optional": True}}},
        {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user", "optional": True}}}],
        "envFrom": [{"secretRef": {"name": "gone", "optional": True}}]})
    assert "X" not in env and "Y" not in env
