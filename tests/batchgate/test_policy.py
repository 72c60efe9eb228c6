"""The policy schema: defaults, located errors, ConfigMap documents, the version hash."""

from __future__ import annotations

import dataclasses
import datetime as dt
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

from batchgate.policy import (
    DEFAULT_POLICY,
    Policy,
    PolicyError,
    load_policy_document,
    parse_policy,
)


def test_an_empty_document_is_the_default_policy() -> None:
    assert parse_policy("") == DEFAULT_POLICY
    assert parse_policy("# nothing here\n") == DEFAULT_POLICY


def test_defaults_are_the_documented_ones() -> None:
    p = DEFAULT_POLICY
    assert p.queues.default_queue_name == "default-queue"
    assert p.scheduling.scheduler_name == "batchgate-scheduler"
    assert p.scheduling.gang_timeout == dt.timedelta(seconds=300)
    assert p.fault_tolerance.retry_pause_period == dt.timedelta(seconds=90)
    assert p.fault_tolerance.success_ttl == dt.timedelta(hours=168)
    assert p.fault_tolerance.retry_limit == 3
    assert "kube-system" in p.exempt.namespaces
    assert "AppWrapper.workload.codeflare.dev" in p.allowed_kinds.top_level
    assert p.frameworks.pytorch.port == 23456 and p.frameworks.mpi.slots_per_host == 1
    assert dict(p.fault_tolerance.node_health.no_execute) == {"autopilot.ibm.com/gpuhealth": ("EVICT",)}
    assert dict(p.fault_tolerance.node_health.unschedulable) == {"autopilot.ibm.com/gpuhealth": ("TESTING", "EVICT")}
    assert dict(p.fault_tolerance.node_health.prefer_not) == {"autopilot.ibm.com/gpuhealth": ("WARN",)}
    assert p.fault_tolerance.node_health.prefer_no_schedule_weight == 50
    assert p.fair_sharing.preempt_within_nominal is True  # as Kueue v0.17's gate (kueue#9494)


def test_the_policy_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.queues.default_queue_name = "x"  # type: ignore[misc]


def test_a_full_policy_overrides_every_section() -> None:
    text = textwrap.dedent("""\
        managedNamespaces:
          selector: {matchLabels: {mlbatch-team-namespace: "true"}}
        exempt: {namespaces: [kube-system], users: [system:serviceaccount:batchgate-system:controller], groups: [ops]}
        queues: {defaultQueueName: team-queue, requireQueueFor: [PyTorchJob.kubeflow.org]}
        identity: {enabled: false}
        scheduling: {schedulerName: my-sched, overrideExisting: true, gang: false, gangTimeout: 1m30s}
        priority: {defaultWorkloadPriorityClass: default-priority}
        allowedKinds: {topLevel: [AppWrapper.workload.codeflare.dev], wrapped: [Job.batch, Pod]}
        frameworks: {pytorch: {port: 29500}, mpi: {hostfilePath: /etc/hf, slotsPerHost: 8}}
        fairSharing: {enable: true, preemptWithinNominal: false}
        faultTolerance:
          retryLimit: 0
          failurePolicy: [{action: Fail, onExitCodes: [42]}]
          nodeHealth: {slackClusterQueue: slack-cluster-queue, labels: {health: {bad: NoExecute}}, preferNoScheduleWeight: 5}
        """)
    p = parse_policy(text)
    assert p.managed_namespaces.selector.matches({"mlbatch-team-namespace": "true"})
    assert not p.managed_namespaces.selector.matches({})
    assert p.exempt.groups == ("ops",)
    assert p.queues.require_queue_for == ("PyTorchJob.kubeflow.org",)
    assert p.identity.enabled is False
    assert p.scheduling.gang_timeout == dt.timedelta(seconds=90)
    assert p.priority.default_workload_priority_class == "default-priority"
    assert p.frameworks.pytorch.port == 29500 and p.frameworks.tensorflow.port == 2222
    assert p.fault_tolerance.failure_policy[0].on_exit_codes == (42,)
    assert p.fault_tolerance.node_health.slack_cluster_queue == "slack-cluster-queue"
    assert dict(p.fault_tolerance.node_health.no_execute) == {"health": ("bad",)}
    assert (p.fault_tolerance.node_health.prefer_not, p.fault_tolerance.node_health.prefer_no_schedule_weight) == ({}, 5)
    assert (p.fair_sharing.enable, p.fair_sharing.preempt_within_nominal) == (True, False)
    assert p.version != DEFAULT_POLICY.version


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("queues:\n  defaultQueueName: q\nfaultTolerance:\n  retryLimit: -1\n",
                     "policy.yaml:4: faultTolerance.retryLimit: must be a non-negative integer",
                     id="a negative retry limit is reported at its line"),
        pytest.param("queue:\n  defaultQueueName: q\n",
                     "policy.yaml:1: queue: unknown field",
                     id="a misspelled section is an unknown field, not a silent default"),
        pytest.param("authorization:\n  userRBACCheck: true\n  controllerUser: system:serviceaccount:x:y\n",
                     "policy.yaml:3: authorization.controllerUser: removed: the controller's account is "
                     "controllers.appWrapper",
                     id="the removed controllerUser names the setting that replaces it"),
        pytest.param("fairSharing:\n  preemptionStrategies: [Nope]\n",
                     "policy.yaml:2: fairSharing.preemptionStrategies[0]: 'Nope' is not one of "
                     "LessThanOrEqualToFinalShare, LessThanInitialShare",
                     id="an unknown fair-sharing strategy"),
        pytest.param("fairSharing:\n  preemptionStrategies: []\n",
                     "policy.yaml:2: fairSharing.preemptionStrategies: needs at least one of "
                     "LessThanOrEqualToFinalShare, LessThanInitialShare",
                     id="no fair-sharing strategy at all"),
        pytest.param("fairSharing:\n  enable: true\n  preemptWithinNominal: \"no\"\n",
                     "policy.yaml:3: fairSharing.preemptWithinNominal: must be true or false, got string",
                     id="preemptWithinNominal must be a boolean"),
        pytest.param("scheduling:\n  gang: maybe\n",
                     "policy.yaml:2: scheduling.gang: must be true or false, got string",
                     id="a boolean must be a boolean"),
        pytest.param("scheduling:\n  gangTimeout: 300\n",
                     "policy.yaml:2: scheduling.gangTimeout: must be a duration",
                     id="a duration needs a unit"),
        pytest.param("scheduling:\n  gangTimeout: 5 minutes\n",
                     "policy.yaml:2: scheduling.gangTimeout: invalid duration",
                     id="a duration must be Go syntax"),
        pytest.param("faultTolerance:\n  failureGracePeriod: -1s\n",
                     "policy.yaml:2: faultTolerance.failureGracePeriod: must not be negative",
                     id="a negative duration is rejected"),
        pytest.param("faultTolerance:\n  admissionGracePeriod: 10m\n",
                     "faultTolerance.admissionGracePeriod: must not exceed warmupGracePeriod",
                     id="admission grace may not exceed warmup grace, as upstream"),
        pytest.param("faultTolerance:\n  warmupGracePeriod: 48h\n",
                     "faultTolerance.warmupGracePeriod: 48h0m0s exceeds gracePeriodMaximum 24h0m0s",
                     id="a grace period above the ceiling is rejected"),
        pytest.param("faultTolerance:\n  successTTL: 0s\n",
                     "faultTolerance.successTTL: must be positive",
                     id="a zero success TTL is rejected"),
        pytest.param("allowedKinds:\n  topLevel:\n    - Job.batch\n    - job batch\n",
                     "policy.yaml:4: allowedKinds.topLevel[1]: 'job batch' is not a Kind or Kind.group",
                     id="kinds are Kind or Kind.group and the list index is named"),
        pytest.param("exempt:\n  users: alice\n",
                     "policy.yaml:2: exempt.users: must be a list of strings, got string",
                     id="a list field given a string"),
        pytest.param("frameworks:\n  pytorch:\n    port: 70000\n",
                     "policy.yaml:3: frameworks.pytorch.port: must be a port number",
                     id="ports are 1 to 65535"),
        pytest.param("managedNamespaces:\n  selector:\n    matchExpressions:\n      - {key: a, operator: In}\n",
                     "policy.yaml:4: managedNamespaces.selector.matchExpressions[0].values: must be non-empty",
                     id="a selector expression In needs values"),
        pytest.param("faultTolerance:\n  failurePolicy:\n    - action: Explode\n",
                     "policy.yaml:3: faultTolerance.failurePolicy[0].action: must be one of Fail",
                     id="a failure-policy rule with an unknown action"),
        pytest.param("queues:\n  defaultQueueName: Not_A_Name\n",
                     "policy.yaml:2: queues.defaultQueueName: 'Not_A_Name' is not a valid Kubernetes object name",
                     id="queue names are object names"),
        pytest.param("queues: {}\nqueues: {}\n",
                     "policy.yaml:2: queues: duplicate key",
                     id="a duplicated key is an error, not last-one-wins"),
        pytest.param("faultTolerance:\n  nodeHealth:\n    labels:\n      autopilot.ibm.com/gpuhealth: {EVICT: Evict}\n",
                     "policy.yaml:4: faultTolerance.nodeHealth.labels[autopilot.ibm.com/gpuhealth].EVICT: must map a "
                     "string value to one of NoExecute, NoSchedule, PreferNoSchedule, got 'Evict'",
                     id="a node health effect must be one of the taint effects"),
        pytest.param("faultTolerance:\n  nodeHealth:\n    noExecuteLabels: {a: b}\n",
                     "policy.yaml:3: faultTolerance.nodeHealth.noExecuteLabels: unknown field (expected one of labels",
                     id="the old noExecuteLabels field is named as unknown with its replacement listed"),
        pytest.param("faultTolerance:\n  nodeHealth:\n    preferNoScheduleWeight: 0\n",
                     "policy.yaml:3: faultTolerance.nodeHealth.preferNoScheduleWeight: must be an integer from 1 to 100",
                     id="a preferred term weight is bounded as Kubernetes bounds it"),
        pytest.param("queues: [\n", "policy.yaml:2: invalid YAML", id="broken YAML names its line"),
        pytest.param("- a\n- b\n", "policy.yaml:1: must be a mapping, got list", id="the document must be a mapping"),
        pytest.param("a: 1\n---\nb: 2\n", "policy.yaml:2: invalid YAML: expected a single document", id="one document only"),
    ],
)
def test_invalid_policies_are_located_by_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text)
    assert expected in str(caught.value)


def test_a_configmap_manifest_is_accepted_and_errors_point_into_the_file() -> None:
    manifest = textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: batchgate-policy, namespace: batchgate-system}
        data:
          policy.yaml: |
            queues:
              defaultQueueName: team-queue
            faultTolerance:
              retryLimit: many
        """)
    with pytest.raises(PolicyError) as caught:
        load_policy_document(manifest, "cm.yaml")
    assert str(caught.value).startswith("cm.yaml:9: faultTolerance.retryLimit:")
    fixed = manifest.replace("many", "5")
    assert load_policy_document(fixed, "cm.yaml").fault_tolerance.retry_limit == 5


def test_a_configmap_without_the_policy_key_is_an_error() -> None:
    with pytest.raises(PolicyError, match="no 'policy.yaml' key"):
        load_policy_document("kind: ConfigMap\napiVersion: v1\ndata: {other: x}\n")


def test_load_policy_document_also_takes_a_plain_policy() -> None:
    assert load_policy_document("identity: {enabled: false}").identity.enabled is False


def test_the_version_is_stable_and_follows_content_not_spelling() -> None:
    spelled_out = "scheduling:\n  gangTimeout: 5m\n"
    assert parse_policy(spelled_out).version == DEFAULT_POLICY.version  # 5m == 300s
    assert parse_policy("scheduling: {gangTimeout: 301s}").version != DEFAULT_POLICY.version
    assert len(DEFAULT_POLICY.version) == 12


def test_the_normalized_form_parses_back_to_the_same_policy() -> None:
    import yaml

    assert parse_policy(yaml.safe_dump(DEFAULT_POLICY.to_wire())) == DEFAULT_POLICY


@settings(max_examples=150, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["queues", "scheduling", "gang", "retryLimit", "faultTolerance", "x", "port"]),
        inner, max_size=3),
    max_leaves=12,
))
def test_any_document_either_parses_or_raises_a_located_policy_error(document: object) -> None:
    import yaml

    text = yaml.safe_dump(document)
    try:
        assert isinstance(parse_policy(text), Policy)
    except PolicyError as exc:
        assert str(exc).startswith("policy.yaml")
