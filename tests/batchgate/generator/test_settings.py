"""The pytorchjob-generator's settings: the chart's defaults and schema, one located line per bad
setting, and each place batchgate deliberately reads or writes differently from the chart."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from typing import Any

import pytest
import yaml
from hypothesis import given, settings as hypothesis_settings, strategies as st

from batchgate import keys
from batchgate.generator.pytorchjob import generate_appwrapper
from batchgate.generator.settings import Settings, SettingsError, parse_settings, settings_schema
from batchgate.policy import DEFAULT_POLICY
from tests.builders import a_request, value_at
from tests.upstream_corpus import generator_fixtures, upstream
from webhook.rules import mutate, validate

MINIMAL = "jobName: my-job\ncontainerImage: pytorch:2\n"
POD = "spec.components[0].template.spec.pytorchReplicaSpecs.Master.template"


def read(extra: str = "") -> Settings:
    return parse_settings(MINIMAL + textwrap.dedent(extra))


def generate(extra: str = "") -> dict[str, Any]:
    return generate_appwrapper(read(extra))


def errors(text: str) -> list[str]:
    with pytest.raises(SettingsError) as caught:
        parse_settings(textwrap.dedent(text), "s.yaml")
    return list(caught.value.lines)


def test_defaults_are_the_charts() -> None:
    """The chart's values.yaml defaults."""
    s = read()
    assert (s.queue_name, s.priority, s.image_pull_policy, s.restart_policy) == (
        "default-queue", "default-priority", "IfNotPresent", "Never")
    assert (s.num_pods, s.num_cpus_per_pod, s.num_gpus_per_pod, s.total_memory_per_pod) == (1, 1, 0, "1Gi")
    assert (s.num_roce_gdr, s.disable_shared_memory, s.namespace, s.scheduler_name) == (0, False, None, None)


@upstream
def test_the_examples_users_start_from_are_read() -> None:
    examples = sorted(generator_fixtures().glob("examples_*.settings.yaml"))
    assert examples
    for example in examples:
        assert parse_settings(example.read_text(), example.name).job_name == "my-job"


BAD = [
    ("jobName: 123Job\ncontainerImage: x\n",
     ["s.yaml:1: jobName: '123Job' is not a lowercase RFC 1123 label (letters, digits and '-', starting with a "
      "letter, ending with a letter or digit)"], "a job name starting with a digit"),
    (f"jobName: {'a' * 51}\ncontainerImage: x\n",
     [f"s.yaml:1: jobName: '{'a' * 51}' must be 1 to 50 characters long"], "a job name of 51 characters"),
    ("containerImage: x\n", ["s.yaml:1: jobName: is required"], "no job name"),
    ("jobName:\ncontainerImage: ''\n",
     ["s.yaml:1: jobName: is required", "s.yaml:2: containerImage: is required"], "an empty job name and image"),
    ("jobName: j\ncontainerImage: x\nnumPod: 3\n", ["s.yaml:3: numPod: unknown setting (did you mean numPods?)"],
     "a misspelt setting, with the one meant"),
    ("jobName: j\ncontainerImage: x\ngpus: 3\n",
     ["s.yaml:3: gpus: unknown setting (batchgate generate pytorchjob --settings-schema lists them)"],
     "an unknown setting"),
    ("jobName: j\ncontainerImage: x\nnumPods: 0\n", ["s.yaml:3: numPods: must be at least 1, got 0"], "no pods"),
    ("jobName: j\ncontainerImage: x\nnumPods: '4'\n", ["s.yaml:3: numPods: must be an integer, got string"],
     "a quoted pod count"),
    ("jobName: j\ncontainerImage: x\nnumCpusPerPod: 1.5\n",
     ["s.yaml:3: numCpusPerPod: must be a whole number of CPUs or a quantity with a unit, such as 500m, got 1.5"],
     "a fractional CPU count"),
    ("jobName: j\ncontainerImage: x\nnumCpusPerPod: 0\n",
     ["s.yaml:3: numCpusPerPod: must be a whole number of CPUs or a quantity with a unit, such as 500m, got 0"],
     "no CPUs (the chart's schema misspells its minimum, so it lets 0 through)"),
    ("jobName: j\ncontainerImage: x\ntotalMemoryPerPod: 1.5Gi\n",
     ["s.yaml:3: totalMemoryPerPod: '1.5Gi' is not a whole quantity with a unit, such as 512Mi or 1Gi"],
     "a fractional memory quantity"),
    ("jobName: j\ncontainerImage: x\npriority: urgent\n",
     ["s.yaml:3: priority: 'urgent' is not one of default-priority, low-priority, high-priority"],
     "a priority the chart does not know"),
    ("jobName: j\ncontainerImage: x\nimagePullPolicy: Sometimes\n",
     ["s.yaml:3: imagePullPolicy: 'Sometimes' is not one of IfNotPresent, Always, Never"], "a pull policy"),
    ("jobName: j\ncontainerImage: x\nnamespace: Team_A\n",
     ["s.yaml:3: namespace: 'Team_A' is not a lowercase RFC 1123 label (letters, digits and '-', starting with a "
      "letter, ending with a letter or digit)"], "a namespace that is no label"),
    ("jobName: j\ncontainerImage: x\nretryLimit: 101\n", ["s.yaml:3: retryLimit: must be from 0 to 100, got 101"],
     "too many retries"),
    ("jobName: j\ncontainerImage: x\nsuccessTTLDuration: 1h30m\n",
     ["s.yaml:3: successTTLDuration: '1h30m' is not a whole number of seconds, minutes, hours or days, such as "
      "90s, 10m, 2h or 7d"], "a compound duration the chart's pattern refuses"),
    ("jobName: j\ncontainerImage: x\ndisableSharedMemory: 'yes'\n",
     ["s.yaml:3: disableSharedMemory: must be true or false, got string"], "a quoted boolean"),
    ("jobName: j\ncontainerImage: x\nnumRoceGdr: 2\n",
     ["s.yaml:3: numRoceGdr: must be 0 when numPods is 1 (RoCE GDR links the pods of a job)"], "GDR on one pod"),
    ("jobName: j\ncontainerImage: x\ntopologyFileConfigMap: topo\nenvironmentVariables:\n- {name: NCCL_TOPO_FILE, value: f}\n",
     ["s.yaml:5: environmentVariables[0].name: NCCL_TOPO_FILE is set from topologyFileConfigMap; remove one of them"],
     "a topology file set twice"),
    ("jobName: j\ncontainerImage: x\nenvironmentVariables:\n- name: A\n  value: ''\n",
     ["s.yaml:4: environmentVariables[0]: A needs a value, a secret or a configmap"], "a variable with no value"),
    ("jobName: j\ncontainerImage: x\nenvironmentVariables:\n- name: A\n  secret: {name: s}\n",
     ["s.yaml:5: environmentVariables[0].secret.key: is required"], "a secret with no key"),
    ("jobName: j\ncontainerImage: x\nenvironmentVariables:\n- name: A\n  valueFrom: {}\n",
     ["s.yaml:5: environmentVariables[0].valueFrom: unknown key (expected one of name, value, secret, configmap)"],
     "Kubernetes' valueFrom, which the chart does not read"),
    ("jobName: j\ncontainerImage: x\nenvironmentVariables: {A: b}\n",
     ["s.yaml:3: environmentVariables: must be a list, got mapping"], "variables as a mapping"),
    ("jobName: j\ncontainerImage: x\nenvFrom:\n- configMapRef: {name: c}\n  prefx: P_\n",
     ["s.yaml:5: envFrom[0].prefx: unknown field 'prefx'"], "a misspelt envFrom field"),
    ("jobName: j\ncontainerImage: x\ncustomLabels:\n- {key: Team, value: a}\n",
     ["s.yaml:4: customLabels[0].key: 'Team': the name after any '/' must be 1-63 lowercase letters, digits, '-', "
      "'.' or '_', starting with a letter, ending with a letter or digit"], "a label key with a capital"),
    ("jobName: j\ncontainerImage: x\ncustomLabels:\n- {key: -x.io/team, value: a}\n",
     ["s.yaml:4: customLabels[0].key: '-x.io/team': the prefix before '/' must be a lowercase DNS subdomain of at "
      "most 253 characters"], "a label prefix starting with a dash"),
    ("jobName: j\ncontainerImage: x\ncustomLabels:\n- {key: team, value: A}\n",
     ["s.yaml:4: customLabels[0].value: 'A' must be 1-63 lowercase letters, digits, '-', '.' or '_', starting with "
      "a letter, ending with a letter or digit"], "a label value with a capital"),
    ("jobName: j\ncontainerImage: x\ncustomLabels:\n- {key: team}\n",
     ["s.yaml:4: customLabels[0].value: is required"], "a label with no value"),
    ("jobName: j\ncontainerImage: x\ncustomLabels:\n- {key: team, value: a}\n- {key: team, value: b}\n",
     ["s.yaml:5: customLabels[1].key: team is given twice"], "a label given twice"),
    ("jobName: j\ncontainerImage: x\ncustomLabels:\n- {key: kueue.x-k8s.io/queue-name, value: q}\n",
     ["s.yaml:4: customLabels[0].key: kueue.x-k8s.io/queue-name is set by queueName; use that setting"],
     "the queue as a custom label"),
    ("jobName: j\ncontainerImage: x\nvolumes:\n- {name: data, mountPath: /data}\n",
     ["s.yaml:4: volumes[0].claimName: is required"], "a volume with no claim"),
    ("jobName: j\ncontainerImage: x\nsshGitCloneConfig: {secretName: key}\n",
     ["s.yaml:3: sshGitCloneConfig.configMapName: is required"], "ssh cloning with no known hosts"),
    ("jobName: j\ncontainerImage: x\nsshGitCloneConfig: {secretName: key, configMapName: hosts, user: git}\n",
     ["s.yaml:3: sshGitCloneConfig.user: unknown key (expected one of secretName, configMapName, secretMountPath, "
      "configMapMountPath, sshCmd)"], "ssh cloning with a key the chart does not have"),
    ("jobName: j\ncontainerImage: x\nmountNVMe: {mountPath: /scratch}\n",
     ["s.yaml:3: mountNVMe.storage: is required with mountNVMe (the size of the volume, such as 800Gi)"],
     "NVMe with no size"),
    ("jobName: j\ncontainerImage: x\ninitContainers:\n- {name: i, image: busybox}\n",
     ["s.yaml:4: initContainers[0].command: is required"], "an init container with no command"),
    ("jobName: j\ncontainerImage: x\ninitContainers:\n- {name: i, image: busybox, command: date}\n",
     ["s.yaml:4: initContainers[0].command: must be a list of strings, such as [sh, -c, 'echo hello']"],
     "an init container command that is no list"),
    ("jobName: j\ncontainerImage: x\nsetupCommands: [ls, {cd: x}]\n",
     ["s.yaml:3: setupCommands[1]: must be a string, got mapping"], "a setup command that is a mapping"),
    ("jobName: j\ncontainerImage: x\njobName: k\n", ["s.yaml:3: jobName: duplicate key"], "a setting given twice"),
    ("jobName: [j\n", ["s.yaml:2: invalid YAML: while parsing a flow sequence, expected ',' or ']', but got '<stream end>'"],
     "broken YAML"),
    ("- jobName: j\n", ["s.yaml:1: settings must be a mapping of setting to value, got list"], "a list"),
    ("jobName: j\ncontainerImage: x\nnumPods: 0\nnumGpusPerPod: -1\nqueueName: Q\n",
     ["s.yaml:3: numPods: must be at least 1, got 0", "s.yaml:4: numGpusPerPod: must be at least 0, got -1",
      "s.yaml:5: queueName: 'Q' is not a lowercase RFC 1123 label (letters, digits and '-', starting with a letter, "
      "ending with a letter or digit)"], "three bad settings, three lines"),
]


@pytest.mark.parametrize(("text", "expected"), [pytest.param(t, e, id=i) for t, e, i in BAD])
def test_bad_settings_get_one_located_line_each(text: str, expected: list[str]) -> None:
    assert errors(text) == expected


# --- where batchgate differs from the chart, on purpose -------------------------------------

def test_mlbatchs_gang_scheduler_is_replaced_by_batchgates() -> None:
    """batchgate replaces the coscheduler MLBatch runs as scheduler-plugins-scheduler, which a
    batchgate cluster does not have: its pods would never be scheduled. The pods name no
    scheduler, so the gateway sets the policy's, as MLBatch's controller sets its own."""
    aw = generate("schedulerName: scheduler-plugins-scheduler\n")
    assert value_at(aw, f"{POD}.spec.schedulerName") is None
    mutated = mutate(a_request(aw), DEFAULT_POLICY).object
    assert value_at(mutated, f"{POD}.spec.schedulerName") == DEFAULT_POLICY.scheduling.scheduler_name
    assert value_at(generate("schedulerName: default-scheduler\n"), f"{POD}.spec.schedulerName") == "default-scheduler"


def test_days_become_hours_because_appwrapper_durations_have_no_days() -> None:
    """The chart's pattern allows `7d`, but the AppWrapper controller reads Go durations, which
    have no days: upstream ignores such an annotation and the gateway denies it."""
    aw = generate("successTTLDuration: 7d\nretryPausePeriodDuration: 90s\n")
    annotations = aw["metadata"]["annotations"]
    assert annotations[keys.SUCCESS_TTL_ANNOTATION] == "168h"
    assert annotations[keys.RETRY_PAUSE_PERIOD_ANNOTATION] == "90s"
    request = a_request(mutate(a_request(aw), DEFAULT_POLICY).object)
    assert validate(request, DEFAULT_POLICY).allowed


def test_the_topology_file_is_mounted_even_without_shared_memory() -> None:
    """The chart mounts the topology ConfigMap only beside another volume, so with shared memory
    disabled NCCL_TOPO_FILE named a file that was not there."""
    aw = generate("disableSharedMemory: true\ntopologyFileConfigMap: topo\n")
    assert value_at(aw, f"{POD}.spec.volumes") == [{"name": "topology-volume", "configMap": {"name": "topo"}}]
    assert value_at(aw, f"{POD}.spec.containers[0].volumeMounts") == [
        {"name": "topology-volume", "mountPath": "/var/run/nvidia-topologyd"}]


def test_a_setting_with_no_value_is_its_default_unless_null_means_something() -> None:
    """`numPods:` is the default 1 (the chart would render a pod with no CPU request); `queueName:`
    leaves the label off, as the chart's own test expects."""
    s = read("numPods:\nnumCpusPerPod:\nrestartPolicy:\nqueueName:\n")
    assert (s.num_pods, s.num_cpus_per_pod, s.restart_policy, s.queue_name) == (1, 1, "Never", None)


def test_literal_values_are_written_as_the_user_wrote_them() -> None:
    """Helm reads every number as a float (12345678 would become "1.2345678e+07"); batchgate
    writes integers as integers, and true as "true"."""
    aw = generate("environmentVariables:\n- {name: A, value: 12345678}\n- {name: B, value: 0.5}\n"
                  "- {name: C, value: true}\n- {name: D, value: 0}\n")
    assert value_at(aw, f"{POD}.spec.containers[0].env") == [
        {"name": "A", "value": "12345678"}, {"name": "B", "value": "0.5"}, {"name": "C", "value": "true"},
        {"name": "D", "value": "0"}]


def test_a_label_key_is_read_as_prefix_slash_name() -> None:
    """The chart checks the part before '/' as the name and the part after as the prefix."""
    aw = generate("customLabels:\n- {key: example.com/team, value: vision}\n")
    assert aw["metadata"]["labels"]["example.com/team"] == "vision"
    assert value_at(aw, f"{POD}.metadata.labels") == {"example.com/team": "vision"}


def test_an_init_container_command_may_be_a_yaml_list_in_a_string() -> None:
    """The chart pastes a string command into its YAML, so `"[sh, -c, date]"` is a list there too."""
    aw = generate("initContainers:\n- {name: i, image: busybox, command: '[sh, -c, date]'}\n")
    assert value_at(aw, f"{POD}.spec.initContainers[0].command") == ["sh", "-c", "date"]


# --- the schema --------------------------------------------------------------------------

ADDED_BY_BATCHGATE = ("description", "default", "items")
"""What batchgate's schema adds to the chart's: words, defaults and the shape of list items (the
chart checks those in its templates, its schema says only "array")."""


def _without_additions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_additions(v) for k, v in schema.items() if k not in ADDED_BY_BATCHGATE}
    if isinstance(schema, list):
        return [_without_additions(v) for v in schema]
    return schema


@upstream
def test_the_schema_is_the_charts_with_its_template_checks_and_defaults() -> None:
    path = generator_fixtures() / "values.schema.json"
    charts = json.loads(path.read_text())
    # The chart misspells `minimum` for integer CPUs, so its schema lets 0 and negative counts through.
    cpu = charts["$defs"]["resourceCPU"]["oneOf"][0]
    cpu["minimum"] = cpu.pop("mimimum")
    # The job name's pattern and length are checked in the chart's template rather than its schema.
    charts["properties"]["jobName"].update(pattern="^[a-z]([-a-z0-9]*[a-z0-9])?$", minLength=1, maxLength=50)
    assert _without_additions(settings_schema()) == charts


def test_the_schema_gives_the_charts_defaults_and_describes_every_setting() -> None:
    properties = settings_schema()["properties"]
    assert {k: p["default"] for k, p in properties.items() if "default" in p} == {
        "queueName": "default-queue", "priority": "default-priority", "numPods": 1, "numCpusPerPod": 1,
        "numGpusPerPod": 0, "totalMemoryPerPod": "1Gi", "imagePullPolicy": "IfNotPresent", "numRoceGdr": 0,
        "disableSharedMemory": False, "restartPolicy": "Never"}
    assert all(p["description"] for p in properties.values())
    assert len(properties) == 43


# --- invariants --------------------------------------------------------------------------

def _one(*values: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


_DURATION = _one(None, "10s", "7d", "2h", "0s")
_NAME = _one("a", "b-2", "gdr")
VALID: dict[str, st.SearchStrategy[Any]] = {
    "jobName": _one("job", "a" * 50),
    "namespace": _one(None, "team-a"),
    "queueName": _one(None, "default-queue", "q"),
    "priority": _one("default-priority", "low-priority", "high-priority"),
    "customLabels": st.lists(st.fixed_dictionaries(
        {"key": _one("team", "example.com/team", "a.b/c_d"), "value": _one("x", "v1.2")}), max_size=2),
    "containerImage": _one("pytorch:2"),
    "numPods": st.integers(1, 9),
    "numCpusPerPod": _one(1, 4, "500m", "2k"),
    "numGpusPerPod": st.integers(0, 8),
    "totalMemoryPerPod": _one("1Gi", "512Mi"),
    "limitCpusPerPod": _one(None, 8, "1500m"),
    "limitGpusPerPod": _one(None, 0, 8),
    "limitMemoryPerPod": _one(None, "2Gi"),
    "environmentVariables": st.lists(st.one_of(
        st.fixed_dictionaries({"name": _one("A", "NCCL_TOPO_FILE"), "value": _one("x", 0, 1.5, True, 7)}),
        st.fixed_dictionaries({"name": _one("S"), "secret": st.just({"name": "s", "key": "k"})}),
        st.fixed_dictionaries({"name": _one("C"), "configmap": st.just({"name": "c", "key": "k"})})), max_size=3),
    "envFrom": st.lists(_one({"configMapRef": {"name": "c"}}, {"secretRef": {"name": "s"}, "prefix": "P_"}),
                        max_size=2),
    "sshGitCloneConfig": st.one_of(st.none(), st.fixed_dictionaries(
        {"secretName": _NAME, "configMapName": _NAME},
        optional={"secretMountPath": _one("/keys"), "configMapMountPath": _one("/hosts"), "sshCmd": _one("ssh -v")})),
    "setupCommands": st.lists(_one("ls", "cd x", "pip install -r requirements.txt"), max_size=3),
    "mainProgram": _one(None, "", "train.py --epochs 2"),
    "imagePullSecrets": st.lists(st.fixed_dictionaries({"name": _NAME}), max_size=2),
    "imagePullPolicy": _one(None, "IfNotPresent", "Always", "Never"),
    "volumes": st.lists(st.fixed_dictionaries({"name": _NAME, "claimName": _NAME, "mountPath": _one("/data")}),
                        max_size=2, unique_by=lambda v: v["name"]),
    "roceGdrResName": _one(None, "", "rdma/roce"),
    "numRoceGdr": st.integers(0, 2),
    "topologyFileConfigMap": _one(None, "topo"),
    "ncclGdrEnvConfigMap": _one(None, "nccl-env"),
    "multiNicNetworkName": _one(None, "net"),
    "disableSharedMemory": st.booleans(),
    "mountNVMe": st.one_of(st.none(), st.just({}), st.fixed_dictionaries(
        {"storage": _one("800Gi")}, optional={"mountPath": _one("/scratch")})),
    "initContainers": st.lists(st.fixed_dictionaries(
        {"name": _one("init"), "image": _one("busybox"), "command": _one(["sh", "-c", "date"], "[date]")}),
        max_size=2),
    "autopilotHealthChecks": st.lists(_one("pciebw", "gpu-mem"), max_size=2, unique=True),
    "restartPolicy": _one("Never", "Always", "OnFailure"),
    "hostIgnoreList": st.lists(_one("node-1", "node-2"), max_size=2),
    "schedulerName": _one(None, "sakkara", "scheduler-plugins-scheduler", "default-scheduler"),
    "serviceAccountName": _one(None, "gdr", "runner"),
    "terminationGracePeriodSeconds": _one(None, 0, 30),
    "admissionGracePeriodDuration": _DURATION,
    "warmupGracePeriodDuration": _DURATION,
    "failureGracePeriodDuration": _DURATION,
    "retryPausePeriodDuration": _DURATION,
    "retryLimit": _one(None, 0, 100),
    "forcefulDeletionGracePeriodDuration": _DURATION,
    "deletionOnFailureGracePeriodDuration": _DURATION,
    "successTTLDuration": _one(None, "10m", "7d"),
}
REQUIRED = ("jobName", "containerImage")
_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2, 9), _one("", "x", "A", "1.5Gi"),
                  st.lists(st.dictionaries(_one("name", "value", "key", "storage"), _one("", "x", 1)), max_size=2))


def test_every_setting_has_a_strategy() -> None:
    assert set(VALID) == set(settings_schema()["properties"])


@hypothesis_settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({k: VALID[k] for k in REQUIRED},
                             optional={k: v for k, v in VALID.items() if k not in REQUIRED}))
def test_valid_settings_become_an_appwrapper_the_gateway_admits(value: dict[str, Any]) -> None:
    """Whatever settings are read, the AppWrapper they make is admitted and runs numPods pods (a
    few combinations are refused: GDR on one pod, NCCL_TOPO_FILE twice, a label given twice)."""
    try:
        s = parse_settings(yaml.safe_dump(value))
    except SettingsError as exc:
        assert all(any(why in line for why in ("when numPods is 1", "set from topologyFileConfigMap", "given twice"))
                   for line in exc.lines)
        return
    aw = generate_appwrapper(s)
    request = a_request(aw, namespace=s.namespace or "team-a")
    mutation = mutate(request, DEFAULT_POLICY)
    assert mutation.denial is None and mutation.object is not None
    verdict = validate(dataclasses.replace(request, object=mutation.object), DEFAULT_POLICY)
    assert verdict.allowed, verdict.message
    replicas = value_at(aw, "spec.components[0].template.spec.pytorchReplicaSpecs")
    assert sum(r["replicas"] for r in replicas.values()) == s.num_pods


@hypothesis_settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({k: VALID[k] for k in REQUIRED}, optional={k: _JUNK for k in VALID if k not in REQUIRED}))
def test_junk_settings_are_refused_line_by_line_never_with_a_crash(value: dict[str, Any]) -> None:
    try:
        parse_settings(yaml.safe_dump(value), "junk.yaml")
    except SettingsError as exc:
        assert exc.lines and all(line.startswith("junk.yaml:") for line in exc.lines)
