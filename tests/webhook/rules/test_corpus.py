"""Every real upstream manifest of the corpus through mutate + validate, as two users
(tests/upstream_corpus.py: skipped where the corpus is absent).

Expectations come from the default policy: JobSet and LeaderWorkerSet are not in
`allowedKinds.wrapped`, so the two samples wrapping them are denied by name (and admitted once
a policy allows those kinds); MLBatch's own PodGroup sample is admitted as it is; every
other AppWrapper is admitted, queued, suspended and stamped with its submitter.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jsonpatch
import pytest

from batchgate.api.pod_templates import pod_template_locations
from batchgate.policy import DEFAULT_POLICY, parse_policy
from webhook.rules import mutate, validate
from tests.builders import a_request
from tests.upstream_corpus import corpus_documents, upstream

USERS = [
    pytest.param(("alice", "uid-1", ("system:authenticated",)), id="alice"),
    pytest.param(("system:serviceaccount:team-b:runner", "5d2c-77", ("system:serviceaccounts",)), id="a service account"),
]
DENIED_BY_DEFAULT_POLICY = {
    "appwrapper/wrapped-jobset.yaml#0": "JobSet.jobset.x-k8s.io is not in allowedKinds.wrapped",
    "appwrapper/wrapped-leader-worker-set.yaml#0": "LeaderWorkerSet.leaderworkerset.x-k8s.io is not in allowedKinds.wrapped",
}
OPEN_POLICY = parse_policy("""
allowedKinds:
  wrapped: [Job.batch, Pod, Deployment.apps, JobSet.jobset.x-k8s.io, LeaderWorkerSet.leaderworkerset.x-k8s.io,
            PodGroup.scheduling.x-k8s.io, PyTorchJob.kubeflow.org]
""")
DOCUMENTS = corpus_documents()
pytestmark = upstream


def test_the_corpus_is_all_there() -> None:
    assert len(DOCUMENTS) >= 25
    assert any(name.startswith("helloworld_test.yaml.snap:") for name, _ in DOCUMENTS)


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("name, document", [pytest.param(n, d, id=n) for n, d in DOCUMENTS])
def test_corpus_manifest(name: str, document: dict[str, Any], user: tuple[str, str, tuple[str, ...]]) -> None:
    username, uid, groups = user
    request = a_request(document, user=username, uid=uid, groups=groups, namespace="team-a")
    mutation = mutate(request, DEFAULT_POLICY)
    assert mutation.denial is None
    mutated = mutation.object if mutation.object is not None else document
    verdict = validate(dataclasses.replace(request, object=mutated), DEFAULT_POLICY)
    if name in DENIED_BY_DEFAULT_POLICY:
        assert (verdict.allowed, verdict.reason) == (False, "InvalidAppWrapper")
        assert DENIED_BY_DEFAULT_POLICY[name] in verdict.message
        return
    assert verdict.allowed, verdict.message
    labels = mutated["metadata"]["labels"]
    assert labels["workload.codeflare.dev/user"] == username.replace(":", "_")
    assert labels["workload.codeflare.dev/userid"] == uid
    assert labels["kueue.x-k8s.io/queue-name"]
    templates = pod_template_locations(mutated)
    assert templates, "every corpus workload has pod templates"
    for at in templates:
        assert at.template["spec"]["schedulerName"], at.path
    suspended = mutated["spec"]["runPolicy"]["suspend"] if document["kind"] == "PyTorchJob" else mutated["spec"]["suspend"]
    assert suspended is True
    patch = jsonpatch.make_patch(document, mutated)
    assert patch.apply(document) == mutated, "the diffed JSON Patch reproduces the mutation"
    assert all(op["op"] == "add" or op["op"] == "replace" for op in patch.patch)
    again = mutate(dataclasses.replace(request, object=mutated), DEFAULT_POLICY)
    assert again.changes == (), "mutation is idempotent"


@pytest.mark.parametrize("name", sorted(DENIED_BY_DEFAULT_POLICY))
def test_samples_denied_by_default_are_admitted_when_the_policy_allows_their_kinds(name: str) -> None:
    document = dict(DOCUMENTS)[name]
    request = a_request(document)
    mutated = mutate(request, OPEN_POLICY).object
    verdict = validate(dataclasses.replace(request, object=mutated), OPEN_POLICY)
    assert verdict.allowed, verdict.message
