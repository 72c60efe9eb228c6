"""docs/rules.md, "Rejections": every rejection, its reason, code and field path; and what is allowed."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from batchgate.policy import DEFAULT_POLICY, Policy, parse_policy
from webhook.rules import mutate, validate
from webhook.rules.review import AdmissionRequest, GroupVersionKind, Verdict
from tests.builders import (
    APPWRAPPER_CONTROLLER,
    JOB_CONTROLLER,
    a_deployment, a_job, a_pod, a_pytorchjob, a_request, a_service, an_appwrapper, ObjectBuilder,
)

USER = "workload.codeflare.dev/user"
USERID = "workload.codeflare.dev/userid"
QUEUE = "kueue.x-k8s.io/queue-name"
FT = "workload.codeflare.dev.appwrapper/"


def admit(request: AdmissionRequest, policy: Policy = DEFAULT_POLICY, **kwargs: Any) -> Verdict:
    """What the API server does: mutate, apply the mutation, then validate the result."""
    mutation = mutate(request, policy, kwargs.get("namespace_labels"))
    if mutation.denial:
        return mutation.denial
    if mutation.object is not None:
        request = dataclasses.replace(request, object=mutation.object)
    return validate(request, policy, **kwargs)


def created_by_alice(obj: dict[str, Any]) -> dict[str, Any]:
    """The stored form of an object alice created (as the gateway left it)."""
    return mutate(a_request(obj), DEFAULT_POLICY).object or obj


@pytest.mark.parametrize(
    "request_, reason, message",
    [
        pytest.param(a_request(ObjectBuilder("apps/v1", "Deployment", "d", None).build()),
                     "KindNotAllowed", "kind: Deployment.apps is not in allowedKinds.topLevel",
                     id="a bare deployment is not an allowed top-level kind"),
        pytest.param(a_request(a_pod().build()), "KindNotAllowed", "kind: Pod is not in allowedKinds.topLevel",
                     id="a bare pod would run outside quota, so it is not an allowed top-level kind (MLBatch)"),
        pytest.param(a_request(a_pod().owned_by("Job", "j").build()), "KindNotAllowed",
                     "kind: Pod is not in allowedKinds.topLevel",
                     id="a user's pod naming a Job as its owner is still a bare pod"),
        pytest.param(a_request(ObjectBuilder("rbac.authorization.k8s.io/v1", "Role", "r", None).build()),
                     "KindNotAllowed", "Role.rbac.authorization.k8s.io is not in allowedKinds.topLevel",
                     id="any kind outside the list is denied"),
        pytest.param(a_request(ObjectBuilder("example.com/v1", "Widget", "w", None).owned_by("AppWrapper", "aw").build(),
                               user=APPWRAPPER_CONTROLLER),
                     "KindNotAllowed", "Widget.example.com is not in allowedKinds.wrapped",
                     id="a wrapped kind outside the wrapped list is denied"),
        pytest.param(a_request(a_job().build()), "QueueRequired", f"metadata.labels[{QUEUE}]: Job needs a LocalQueue",
                     id="a bare job without a queue is denied"),
        pytest.param(a_request(a_pytorchjob().build()), "QueueRequired", "PyTorchJob needs a LocalQueue label",
                     id="a bare pytorchjob without a queue is denied"),
        pytest.param(a_request(an_appwrapper().with_component(an_appwrapper("inner").with_job().build()).build()),
                     "InvalidAppWrapper", "spec.components[0].template: Nested AppWrappers are forbidden",
                     id="a nested appwrapper is denied"),
        pytest.param(a_request(an_appwrapper().with_component(a_pod(namespace="other").build()).build()),
                     "InvalidAppWrapper",
                     "spec.components[0].template.metadata.namespace: AppWrappers cannot create objects in other namespaces",
                     id="a component in another namespace is denied"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "retryLimit", "three").with_job().build()),
                     "InvalidAnnotation", f"metadata.annotations[{FT}retryLimit]: must be a non-negative integer",
                     id="a malformed retry limit annotation is denied"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "warmupGracePeriodDuration", "222badTime")
                               .with_job().build()),
                     "InvalidAnnotation", f"metadata.annotations[{FT}warmupGracePeriodDuration]: invalid duration",
                     id="a malformed duration annotation is denied"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "terminalExitCodes", "3,10,abc").with_job().build()),
                     "InvalidAnnotation", "'abc' is not an integer", id="a malformed exit-code list is denied"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "terminalExitCodes", "3, 4").with_job().build()),
                     "InvalidAnnotation", "' 4' is not an integer: blanks around the value are not allowed",
                     id="an exit-code list with blanks after the commas is denied as upstream would ignore them"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "admissionGracePeriodDuration", " 2s").with_job().build()),
                     "InvalidAnnotation", "invalid duration ' 2s': blanks around the value are not allowed",
                     id="a duration with a leading blank is denied as Go's ParseDuration rejects it"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "retryLimit", " 0").with_job().build()),
                     "InvalidAnnotation", "' 0' is not an integer: blanks around the value are not allowed",
                     id="a retry limit with a leading blank is denied as strconv.Atoi rejects it"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "retryLimit", "4294967297").with_job().build()),
                     "InvalidAnnotation", "must be a non-negative integer below 2^31",
                     id="a retry limit that upstream would wrap around is denied"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "warmupGracePeriodDuration", "99999999999999999999h")
                               .with_job().build()),
                     "InvalidAnnotation", "out of range (at most about 292 years)",
                     id="a duration beyond Go's limit is denied, not an overflow"),
        pytest.param(a_request(an_appwrapper().annotated("batchgate.dev/failure-policy", "[{action: Explode}]")
                               .with_job().build()),
                     "InvalidAnnotation", "metadata.annotations[batchgate.dev/failure-policy][0].action: must be one of",
                     id="a failure-policy rule with an unknown action is denied"),
        pytest.param(a_request(an_appwrapper().annotated("batchgate.dev/failure-policy", "[{action: Fail, onReasons: [Bad]}]")
                               .with_job().build()),
                     "InvalidAnnotation", "onReasons[0]: unknown reason 'Bad'",
                     id="a failure-policy rule with an unknown reason is denied"),
        pytest.param(a_request(an_appwrapper().annotated("batchgate.dev/failure-policy", "{action: [")
                               .with_job().build()),
                     "InvalidAnnotation", "is neither JSON nor YAML", id="a failure policy that does not parse is denied"),
        pytest.param(a_request(an_appwrapper().annotated("batchgate.dev/failure-policy", '{"action": "Fail"}')
                               .with_job().build()),
                     "InvalidAnnotation", "must be a list of rules, got mapping",
                     id="a failure policy that is a single rule, not a list, is denied"),
    ],
)
def test_rejections(request_: AdmissionRequest, reason: str, message: str) -> None:
    verdict = admit(request_)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 403, reason)
    assert verdict.message.startswith(reason + ": ")
    assert message in verdict.message


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(a_request(an_appwrapper().with_job(replicas=4, gpus=8).build()), id="an appwrapper with a job"),
        pytest.param(a_request(a_job().with_queue().build()), id="a job with a queue"),
        pytest.param(a_request(a_pod().owned_by("Job", "j").build(), user=JOB_CONTROLLER),
                     id="a pod the job controller made"),
        pytest.param(a_request(a_service().build()), id="a service"),
        pytest.param(a_request(a_job().owned_by("AppWrapper", "aw").build(), user=APPWRAPPER_CONTROLLER),
                     id="a job the appwrapper controller made"),
        pytest.param(a_request(a_deployment().owned_by("AppWrapper", "aw").build(), user=APPWRAPPER_CONTROLLER),
                     id="a wrapped deployment"),
        pytest.param(a_request(an_appwrapper().annotated(FT + "retryLimit", "101")
                               .annotated(FT + "terminalExitCodes", "3,10,42")
                               .annotated(FT + "successTTLDuration", "1h30m")
                               .annotated("batchgate.dev/failure-policy",
                                          '[{"action": "ResetWithoutCounting", "onReasons": ["AutopilotNoExecute"]},'
                                          ' {"action": "Fail", "onExitCodes": [42], "targetComponents": [0, "x"]}]')
                               .with_job().build()), id="well-formed fault-tolerance annotations"),
        pytest.param(a_request(a_job().build(), namespace="kube-system"), id="anything in an exempt namespace"),
        pytest.param(a_request(a_job().build(), operation="DELETE"), id="a delete"),
    ],
)
def test_allowed(request_: AdmissionRequest) -> None:
    verdict = admit(request_)
    assert verdict.allowed, verdict.message


def test_a_forged_identity_that_skipped_mutation_is_denied() -> None:
    aw = an_appwrapper().with_queue().labelled(USER, "admin").labelled(USERID, "0").with_job().build()
    verdict = validate(a_request(aw), DEFAULT_POLICY)
    assert verdict.reason == "IdentityForged"
    assert f"metadata.labels[{USER}]: must be 'alice'" in verdict.message


def test_identity_is_not_enforced_when_disabled() -> None:
    policy = parse_policy("identity: {enabled: false}")
    aw = an_appwrapper().with_queue().labelled(USER, "admin").with_job().build()
    assert validate(a_request(aw), policy).allowed


@pytest.mark.parametrize(
    "change, reason, message",
    [
        pytest.param(lambda o: o["metadata"]["labels"].update({USER: "admin"}), "IdentityForged",
                     f"metadata.labels[{USER}]: identity labels cannot be changed", id="changing the user label is denied"),
        pytest.param(lambda o: o["metadata"]["labels"].pop(USERID), "IdentityForged",
                     f"metadata.labels[{USERID}]", id="removing the userid label is denied"),
        pytest.param(lambda o: o["spec"]["components"].append(o["spec"]["components"][0]), "ImmutableField",
                     "spec.components: attempt to change immutable field", id="adding a component is denied"),
        pytest.param(lambda o: o["spec"]["components"][0]["template"]["spec"].update(parallelism=9), "ImmutableField",
                     "spec.components[0].template: attempt to change immutable field", id="changing a template is denied"),
        pytest.param(lambda o: o["spec"]["components"][0].update(podSets=[{"path": "template.spec.template"}]),
                     "ImmutableField", "spec.components[0].podSets: attempt to change immutable field",
                     id="adding a podSet is denied"),
        pytest.param(lambda o: o["spec"].update(managedBy="someone-else"), "ImmutableField",
                     "spec.managedBy: attempt to change immutable field", id="changing managedBy is denied"),
        pytest.param(lambda o: o["spec"].update(components="gone"), "InvalidAppWrapper",
                     "spec.components: is required and must be a list", id="an update that breaks the shape is invalid"),
        pytest.param(lambda o: o["metadata"]["annotations"].update({FT + "retryLimit": "-1"}), "InvalidAnnotation",
                     "retryLimit]: must be a non-negative integer", id="a malformed annotation on update is denied"),
    ],
)
def test_update_rejections(change: Any, reason: str, message: str) -> None:
    stored = created_by_alice(an_appwrapper().annotated("note", "x").with_job().build())
    updated = copy.deepcopy(stored)
    change(updated)
    verdict = validate(a_request(updated, user="bob", uid="uid-bob", operation="UPDATE", old=stored), DEFAULT_POLICY)
    assert (verdict.allowed, verdict.reason) == (False, reason)
    assert message in verdict.message


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda o: o["spec"].update(suspend=True), id="suspending is allowed"),
        pytest.param(lambda o: o["spec"]["components"][0].update(podSetInfos=[{"nodeSelector": {"a": "b"}}]),
                     id="setting podSetInfos is allowed"),
        pytest.param(lambda o: o["metadata"]["labels"].update(team="x"), id="adding another label is allowed"),
        pytest.param(lambda o: o["metadata"]["annotations"].update(note="y"), id="changing annotations is allowed"),
        pytest.param(lambda o: o.update(status={"phase": "Running"}), id="status changes are allowed"),
    ],
)
def test_updates_by_another_user_keep_the_original_identity(change: Any) -> None:
    stored = created_by_alice(an_appwrapper().annotated("note", "x").with_job().build())
    updated = copy.deepcopy(stored)
    change(updated)
    request = a_request(updated, user="bob", uid="uid-bob", operation="UPDATE", old=stored)
    assert mutate(request, DEFAULT_POLICY).changes == ()
    verdict = validate(request, DEFAULT_POLICY)
    assert verdict.allowed, verdict.message
    assert updated["metadata"]["labels"][USER] == "alice"


def test_a_job_update_changing_identity_is_denied_too() -> None:
    stored = created_by_alice(a_job().with_queue().build())
    updated = {**stored, "metadata": {**stored["metadata"], "labels": {**stored["metadata"]["labels"], USER: "eve"}}}
    verdict = validate(a_request(updated, operation="UPDATE", old=stored), DEFAULT_POLICY)
    assert verdict.reason == "IdentityForged"


CONFIGMAP_OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u", "controller": True}


def _claiming_owner(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [CONFIGMAP_OWNER]}}


def _relabelled(obj: dict[str, Any], user: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "labels": {**obj["metadata"]["labels"], USER: user}}}


@pytest.mark.parametrize(
    "sender, reason",
    [
        pytest.param("alice", "IdentityForged", id="alice naming a controller owner cannot relabel her job"),
        pytest.param(JOB_CONTROLLER, "IdentityForged", id="even a configured controller cannot relabel a job"),
    ],
)
def test_identity_labels_are_immutable_whoever_is_named_owner(sender: str, reason: str) -> None:
    stored = created_by_alice(a_job().with_queue().build())
    updated = _relabelled(_claiming_owner(stored), "bob")
    verdict = validate(a_request(updated, user=sender, operation="UPDATE", old=stored), DEFAULT_POLICY)
    assert (verdict.allowed, verdict.reason) == (False, reason)


def test_a_deployment_naming_a_configmap_owner_is_still_a_deployment_alice_created() -> None:
    deployment = _claiming_owner(a_deployment().build())
    verdict = admit(a_request(deployment))
    assert (verdict.allowed, verdict.reason) == (False, "KindNotAllowed")
    assert "allowedKinds.topLevel" in verdict.message


POLICY_CM = ("batchgate-system", "batchgate-policy")


def policy_configmap(data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "batchgate-policy", "namespace": "batchgate-system"}, "data": data}


@pytest.mark.parametrize(
    "data, message",
    [
        pytest.param({"policy.yaml": "queues:\n  defaultQueueName: q\nfaultTolerance:\n  retryLimit: -3\n"},
                     "InvalidPolicy: data[policy.yaml]:4: faultTolerance.retryLimit: must be a non-negative integer",
                     id="an invalid edit is denied with its line and field"),
        pytest.param({"policy.yaml": "scheduling: [\n"}, "data[policy.yaml]:2: invalid YAML",
                     id="unparsable policy yaml is denied"),
        pytest.param({"other": "x"}, "needs a 'policy.yaml' key", id="a policy configmap without the key is denied"),
        pytest.param({"policy.yaml": 7}, "policy must be YAML text", id="a policy that is not text is denied"),
    ],
)
def test_the_policy_configmap_is_guarded(data: Any, message: str) -> None:
    for operation in ("CREATE", "UPDATE"):
        request = a_request(policy_configmap(data), namespace="batchgate-system", operation=operation,
                            old=policy_configmap({"policy.yaml": ""}), user="admin")
        verdict = validate(request, DEFAULT_POLICY, policy_configmap=POLICY_CM)
        assert (verdict.allowed, verdict.reason) == (False, "InvalidPolicy")
        assert message in verdict.message


def test_a_valid_policy_edit_and_other_configmaps_are_allowed() -> None:
    ok = a_request(policy_configmap({"policy.yaml": "scheduling: {gang: false}\n"}), namespace="batchgate-system")
    assert validate(ok, DEFAULT_POLICY).allowed
    other = policy_configmap({"policy.yaml": "nonsense: true"})
    other["metadata"]["name"] = "unrelated"
    assert validate(a_request(other, namespace="batchgate-system"), DEFAULT_POLICY).allowed


def test_a_request_whose_object_does_not_match_its_kind_is_malformed() -> None:
    request = a_request(a_job().build(), kind=GroupVersionKind("", "v1", "Pod"))
    verdict = validate(request, DEFAULT_POLICY)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 400, "MalformedRequest")


def test_an_update_without_the_old_object_is_malformed() -> None:
    verdict = validate(a_request(a_job().build(), operation="UPDATE", old=None), DEFAULT_POLICY)
    assert (verdict.code, verdict.reason) == (400, "MalformedRequest")
    assert "oldObject: must be a mapping on UPDATE" in verdict.message


def test_deeply_nested_junk_is_malformed_not_a_crash() -> None:
    junk: Any = "leaf"
    for _ in range(5000):
        junk = [junk]
    obj = a_job().with_queue().build()
    obj["spec"]["junk"] = junk
    for verdict in (mutate(a_request(obj), DEFAULT_POLICY).denial, validate(a_request(obj), DEFAULT_POLICY)):
        assert verdict is not None and (verdict.code, verdict.reason) == (400, "MalformedRequest")
        assert "nested more than" in verdict.message


def test_subresource_requests_are_not_policed() -> None:
    stored = created_by_alice(an_appwrapper().with_job().build())
    status_update = copy.deepcopy(stored)
    status_update["metadata"]["labels"][USER] = "mallory"  # the status endpoint ignores label changes
    request = dataclasses.replace(a_request(status_update, operation="UPDATE", old=stored), sub_resource="status")
    assert validate(request, DEFAULT_POLICY).reason == "SubresourceNotPoliced"
    assert mutate(dataclasses.replace(request, operation="CREATE"), DEFAULT_POLICY).changes == ()


def test_cluster_scoped_objects_are_not_managed() -> None:
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {}}
    assert admit(a_request(queue, namespace="")).reason == "NamespaceNotManaged"


@pytest.mark.parametrize(
    "metadata, problem",
    [
        pytest.param("aw", "object.metadata: must be a mapping", id="metadata that is a string"),
        pytest.param({"name": "aw", "labels": ["a", "b"]}, "object.metadata.labels: must be an object",
                     id="labels that are a list"),
        pytest.param({"name": "aw", "annotations": {"retries": 3}},
                     "object.metadata.annotations.retries: must be a string", id="an annotation value that is a number"),
    ],
)
def test_junk_metadata_is_malformed_and_never_overwritten(metadata: Any, problem: str) -> None:
    obj = {**an_appwrapper().with_job().build(), "metadata": metadata}
    for verdict in (mutate(a_request(obj), DEFAULT_POLICY).denial, validate(a_request(obj), DEFAULT_POLICY)):
        assert verdict is not None and (verdict.code, verdict.reason) == (400, "MalformedRequest")
        assert problem in verdict.message
