"""`batchgate wrap`: resources in, one AppWrapper out, or located refusals and nothing on stdout.

The round trip: every upstream AppWrapper sample (the corpus's appwrapper/) taken apart into
its components, wrapped again and reviewed, is allowed, with the same components in the same order.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from batchgate.cli import main as batchgate
from tests.upstream_corpus import CORPUS, corpus_dir, corpus_rows, upstream

SAMPLES = sorted((CORPUS / "appwrapper").glob("*.yaml")) if CORPUS else []
OPEN_POLICY = "allowedKinds:\n  wrapped: [Job.batch, Pod, JobSet.jobset.x-k8s.io, LeaderWorkerSet.leaderworkerset.x-k8s.io]\n"
"""The default policy does not let AppWrappers hold JobSets or LeaderWorkerSets (docs/policy.md)."""
NEEDS_OPEN_POLICY = {"wrapped-jobset.yaml", "wrapped-leader-worker-set.yaml"}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = batchgate(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_documents_become_components_in_order(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "r.yaml", """\
        apiVersion: v1
        kind: Service
        metadata: {name: train}
        spec: {clusterIP: None}
        ---
        apiVersion: batch/v1
        kind: Job
        metadata: {name: train, namespace: team-a}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox}]
        """)
    code, out, err = run(capsys, "wrap", "-f", path)
    aw = yaml.safe_load(out)
    assert (code, err) == (0, "")
    assert aw["metadata"] == {"name": "train", "namespace": "team-a",
                              "labels": {"kueue.x-k8s.io/queue-name": "default-queue"}}
    assert [c["template"]["kind"] for c in aw["spec"]["components"]] == ["Service", "Job"]
    code, out, _ = run(capsys, "wrap", "-f", path, "--name", "aw", "--namespace", "team-a", "--queue", "q", "-o", "json")
    assert json.loads(out)["metadata"] == {"name": "aw", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "q"}}


JOB = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: m, image: b}]}}}\n"
JOBSET = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec: {replicatedJobs: []}\n"
CRONJOB = ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n"
           "    spec: {template: {spec: {containers: [{name: m, image: b}]}}}\n")
LWS = ("apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: l}\nspec:\n"
       "  leaderWorkerTemplate:\n    size: 2\n    leaderTemplate: {metadata: {}}\n"
       "    workerTemplate: {spec: {containers: [{name: m, image: b}]}}\n")
OTHER_KINDS_POLICY = "allowedKinds: {wrapped: [CronJob.batch, LeaderWorkerSet.leaderworkerset.x-k8s.io]}\n"
BAD = [
    (JOB + "---\n" + JOBSET, [], 1,
     ["{f}:7: document 2 (JobSet js): kind: JobSet.jobset.x-k8s.io is not in allowedKinds.wrapped"],
     "a kind the policy does not let AppWrappers hold"),
    (JOB.replace("{name: j}", "{name: j, namespace: team-b}"), ["--namespace", "team-a"], 1,
     ["{f}:3: document 1 (Job j): metadata.namespace: AppWrappers cannot create objects in other namespaces"],
     "a namespace that disagrees with --namespace"),
    (JOB.replace("{name: j}", "{name: j, namespace: a}") + "---\n" + JOB.replace("{name: j}", "{name: k, namespace: b}"),
     [], 1, ["{f}:8: document 2 (Job k): metadata.namespace: AppWrappers cannot create objects in other namespaces"],
     "resources in two namespaces"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n", [], 1,
     ["{f}: the AppWrapper: components contains no podspecs"], "nothing that runs pods"),
    (JOB + "---\nsome text\n---\n- a list\n", [], 2,
     ["{f}:6: document 2: is not a Kubernetes object (it needs apiVersion and kind)",
      "{f}:8: document 3: is not a Kubernetes object (it needs apiVersion and kind)"], "documents that are no objects"),
    ("kind: Job\nmetadata: {name: j}\n", [], 2,
     ["{f}:1: document 1 (Job j): is not a Kubernetes object (it needs apiVersion and kind)"], "no apiVersion"),
    (CRONJOB, ["--policy", "{policy}"], 2,
     ["{f}:7: document 1 (CronJob c): spec.jobTemplate.spec.template: a CronJob holds pods here, but wrap does not "
      "know how many it runs: write its AppWrapper component with podSets (path and replicas) by hand"],
     "a kind whose pods wrap cannot count"),
    (LWS, ["--policy", "{policy}"], 1,
     ["{f}:7: document 1 (LeaderWorkerSet l): spec.leaderWorkerTemplate.leaderTemplate: path "
      "'template.spec.leaderWorkerTemplate.leaderTemplate' leads to a map without a spec"],
     "a pod template with no spec, found through the podSet wrap declared"),
    ("apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata: {name: inner}\nspec: {components: []}\n",
     [], 1, ["{f}:1: document 1 (AppWrapper inner): Nested AppWrappers are forbidden"],
     "an AppWrapper inside an AppWrapper"),
    ("".join(JOB.replace("{name: j}", f"{{name: j{i}}}") + "---\n" for i in range(9)), [], 1,
     ["{f}: the AppWrapper: components contains 9 podspecs; at most 8 are allowed"], "more pod sets than AppWrappers hold"),
    ("apiVersion: batch/v1\nkind: Job\nspec: {}\n", [], 2,
     ["batchgate wrap: {f}: the first resource has no metadata.name; name the AppWrapper with --name"], "no name at all"),
    (JOB, ["--name", "My AW"], 2, ["batchgate wrap: --name: 'My AW' is not a valid Kubernetes object name"], "a bad name"),
    (JOB, ["--queue", "Q!"], 2, ["batchgate wrap: --queue: 'Q!' is not a valid Kubernetes object name"], "a bad queue"),
    ("", [], 2, ["batchgate wrap: {f}: no documents to wrap"], "an empty file"),
    ("a: [1\n", [], 2, ["batchgate wrap: {f}:2: invalid YAML: while parsing a flow sequence, expected ',' or ']', "
                        "but got '<stream end>'"], "broken YAML"),
    (JOB + "---\n" + JOB.replace("kind: Job\n", "kind: Job\nkind: Pod\n"), [], 2,
     ["batchgate wrap: {f}:8: kind: duplicate key"], "a key given twice"),
]


@pytest.mark.parametrize(("text", "args", "code", "lines"), [pytest.param(t, a, c, e, id=i) for t, a, c, e, i in BAD])
def test_refusals_name_the_document_and_line_and_print_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, args: list[str], code: int,
        lines: list[str]) -> None:
    path = write(tmp_path, "r.yaml", text)
    policy = write(tmp_path, "policy.yaml", OTHER_KINDS_POLICY)
    got = run(capsys, "wrap", "-f", path, *[a.format(policy=policy) for a in args])
    assert got == (code, "", "".join(line.format(f=path) + "\n" for line in lines))


@pytest.mark.parametrize(("args", "message"), [
    pytest.param([], "batchgate wrap: the following arguments are required: -f/--filename", id="no file"),
    pytest.param(["-f", "/nonexistent.yaml"], "batchgate wrap: cannot read /nonexistent.yaml: No such file or directory",
                 id="a missing file"),
    pytest.param(["-f", "-", "--policy", "/nonexistent.yaml"],
                 "batchgate wrap: cannot read /nonexistent.yaml: No such file or directory", id="a missing policy"),
])
def test_bad_arguments(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert run(capsys, "wrap", *args) == (2, "", message + "\n")


# --- the round trip ----------------------------------------------------------------------

def components(sample: Path) -> list[dict[str, Any]]:
    return [c["template"] for c in yaml.safe_load(sample.read_text())["spec"]["components"]]


@upstream
def test_the_samples_are_all_there() -> None:
    corpus_dir()
    assert len(SAMPLES) == 10


@pytest.mark.parametrize("sample", corpus_rows(((s.name, (s,)) for s in SAMPLES), 1))
def test_wrap_then_review_allows_every_upstream_sample_wrapped_again(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, sample: Path) -> None:
    resources = write(tmp_path, "resources.yaml", yaml.safe_dump_all(components(sample)))
    policy = ["--policy", write(tmp_path, "policy.yaml", OPEN_POLICY)] if sample.name in NEEDS_OPEN_POLICY else []
    code, out, err = run(capsys, "wrap", "-f", resources, "--namespace", "team-a", *policy)
    assert (code, err) == (0, "")
    wrapped = write(tmp_path, "aw.yaml", out)
    code, _, err = run(capsys, "review", "-f", wrapped, "--user", "alice", *policy)
    assert code == 0, err
    aw = yaml.safe_load(out)
    assert [c["template"] for c in aw["spec"]["components"]] == components(sample)


@upstream
def test_a_leader_worker_set_declares_every_pod_it_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Upstream's sample declares 3 workers for 2 groups of 3 pods (one group's size); each
    group has 2 workers beside its leader, so 4 in all, and quota is reserved for 4."""
    sample = corpus_dir() / "appwrapper" / "wrapped-leader-worker-set.yaml"
    resources = write(tmp_path, "lws.yaml", yaml.safe_dump_all(components(sample)))
    _, out, _ = run(capsys, "wrap", "-f", resources, "--policy", write(tmp_path, "p.yaml", OPEN_POLICY))
    assert yaml.safe_load(out)["spec"]["components"][0]["podSets"] == [
        {"path": "template.spec.leaderWorkerTemplate.leaderTemplate", "replicas": 2},
        {"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 4}]


@upstream
@pytest.mark.parametrize("sample", [pytest.param(n, id=n) for n in sorted(NEEDS_OPEN_POLICY)])
def test_under_the_default_policy_wrap_refuses_what_review_denies(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, sample: str) -> None:
    path = corpus_dir() / "appwrapper" / sample
    assert run(capsys, "review", "-f", str(path), "--user", "alice")[0] == 1
    resources = write(tmp_path, "resources.yaml", yaml.safe_dump_all(components(path)))
    code, out, err = run(capsys, "wrap", "-f", resources)
    assert (code, out) == (1, "")
    assert "is not in allowedKinds.wrapped" in err
