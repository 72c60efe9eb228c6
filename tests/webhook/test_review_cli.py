"""`batchgate review`: the gateway's judgement offline, with exit codes 0 allowed, 1 denied, 2 bad input."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest
import yaml

from demo.samples_scene import SAMPLES
from tests.builders import sample
from tests.webhook.helpers import run_cli
from webhook.review_cli import main


def review(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def labels(obj: dict) -> dict:
    return obj["metadata"].get("labels", {})


@pytest.mark.parametrize(
    ("manifest", "exit_code", "denial"),
    [
        pytest.param("alice/appwrapper-pytorchjob.yaml", 0, "", id="a PyTorchJob in an AppWrapper is allowed"),
        pytest.param("alice/job.yaml", 0, "", id="a queued Job is allowed"),
        pytest.param("bob/rayjob.yaml", 0, "", id="a queued RayJob is allowed"),
        pytest.param("bob/appwrapper-jobset.yaml", 1, "denied AppWrapper default/sweep: 403 InvalidAppWrapper",
                     id="a wrapped JobSet is denied by default policy"),
        pytest.param("alice/job-without-queue.yaml", 1, "denied Job default/tokenize-unqueued: 403 QueueRequired",
                     id="a Job without a queue is denied"),
    ],
)
def test_exit_code_says_whether_every_document_is_allowed(capsys: pytest.CaptureFixture[str], manifest: str,
                                                          exit_code: int, denial: str) -> None:
    code, out, err = review(capsys, "-f", str(SAMPLES / manifest), "--user", "alice")
    assert code == exit_code
    assert err.startswith(denial) and bool(err) == bool(denial)


def test_yaml_output_is_the_mutated_object_with_the_callers_identity(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = review(capsys, "-f", str(SAMPLES / "alice/appwrapper-pytorchjob.yaml"),
                          "--user", "carol@example.com", "--uid", "u-7", "--groups", "team-c,system:authenticated")
    (obj,) = yaml.safe_load_all(out)
    assert code == 0
    assert labels(obj)["workload.codeflare.dev/user"] == "carol_example.com"
    assert labels(obj)["workload.codeflare.dev/userid"] == "u-7"
    assert labels(obj)["kueue.x-k8s.io/queue-name"] == "default-queue"
    assert obj["spec"]["suspend"] is True


def test_the_user_defaults_to_the_os_user(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = review(capsys, "-f", str(SAMPLES / "alice/appwrapper-job.yaml"))
    assert labels(yaml.safe_load(out))["workload.codeflare.dev/user"] == getpass.getuser()


def test_patch_and_json_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    manifest = str(SAMPLES / "alice/appwrapper-job.yaml")
    _, out, _ = review(capsys, "-f", manifest, "--user", "bob", "-o", "patch")
    ops = json.loads(out)
    assert {"op": "add", "path": "/spec/suspend", "value": True} in ops
    _, out, _ = review(capsys, "-f", manifest, "--user", "bob", "-o", "json")
    (result,) = json.loads(out)
    assert result["allowed"] is True and result["patch"] == ops and result["object"]["spec"]["suspend"] is True


def test_a_multi_document_manifest_is_judged_document_by_document(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "two.yaml"
    manifest.write_text(yaml.safe_dump_all([sample("alice/appwrapper-job.yaml"), sample("bob/appwrapper-jobset.yaml")]))
    code, out, err = review(capsys, "-f", str(manifest), "--user", "alice", "-o", "json")
    assert code == 1
    assert [r["allowed"] for r in json.loads(out)] == [True, False]


def test_an_update_that_changes_the_submitter_is_denied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    created = tmp_path / "created.yaml"
    assert main(["-f", str(SAMPLES / "alice/appwrapper-job.yaml"), "--user", "alice"]) == 0
    created.write_text(capsys.readouterr().out)
    forged = yaml.safe_load(created.read_text())
    forged["metadata"]["labels"]["workload.codeflare.dev/user"] = "admin"
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(forged))
    code, _, err = review(capsys, "-f", str(edited), "--old", str(created), "--user", "alice")
    assert code == 1 and "workload.codeflare.dev/user" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["-f", "/no/such/file.yaml"], "cannot read /no/such/file.yaml", id="a missing file"),
        pytest.param(["-f", "{manifest}", "--bogus"], "unrecognized arguments: --bogus", id="an unknown flag"),
        pytest.param(["--user", "x"], "the following arguments are required: -f", id="no manifest"),
        pytest.param(["-f", "{bad_yaml}"], "bad.yaml:3: invalid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at line 2)",
                     id="unparsable YAML with its lines"),
        pytest.param(["-f", "{scalar}"], "document 1 is not a Kubernetes object", id="a document that is a string"),
        pytest.param(["-f", "{manifest}", "--policy", "{bad_policy}"], "invalid policy: ", id="an invalid policy"),
        pytest.param(["-f", "{manifest}", "--operation", "UPDATE"], "--operation UPDATE needs --old",
                     id="UPDATE without the old object"),
        pytest.param(["-f", "{manifest}", "-o", "xml"], "invalid choice: 'xml'", id="an unknown output format"),
        pytest.param(["-f", "{manifest}", "--policy", "{nul}"], "invalid YAML: unacceptable character #x0000",
                     id="a policy with a NUL character"),
        pytest.param(["-f", "{manifest}", "--policy", "{deep}"], "nested more than 100 levels deep",
                     id="a policy nested thousands deep"),
        pytest.param(["-f", "{manifest}", "--policy", "{huge}"], "a value cannot be read: Exceeds the limit",
                     id="a policy with a 5000-digit integer"),
        pytest.param(["-f", "{manifest}", "--policy", "{bomb}"], "expands to more than 100000 values",
                     id="a policy that is a billion laughs"),
        pytest.param(["-f", "{bomb}"], "expands to more than 100000 values", id="a manifest that is a billion laughs"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                         message: str) -> None:
    (tmp_path / "bad.yaml").write_text("kind: Pod\nmetadata: [unclosed\n")
    (tmp_path / "scalar.yaml").write_text("just a string\n")
    (tmp_path / "bad_policy.yaml").write_text("exempt:\n  users: alice\n")
    (tmp_path / "nul.yaml").write_text("queues: {defaultQueueName: a\x00b}\n")
    (tmp_path / "deep.yaml").write_text("queues: " + "[" * 3000 + "]" * 3000 + "\n")
    (tmp_path / "huge.yaml").write_text("faultTolerance: {retryLimit: " + "9" * 5000 + "}\n")
    laughs = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    (tmp_path / "bomb.yaml").write_text("\n".join(laughs) + "\n")
    paths = {"manifest": str(SAMPLES / "alice/appwrapper-job.yaml"), "bad_yaml": str(tmp_path / "bad.yaml"),
             "scalar": str(tmp_path / "scalar.yaml"), "bad_policy": str(tmp_path / "bad_policy.yaml"),
             **{name: str(tmp_path / f"{name}.yaml") for name in ("nul", "deep", "huge", "bomb")}}
    code, out, err = review(capsys, *(a.format(**paths) for a in args))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("batchgate review: ") and message in err


def test_a_policy_configmap_manifest_steers_the_review(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    configmap = tmp_path / "policy-configmap.yaml"
    configmap.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "batchgate-policy", "namespace": "batchgate-system"},
        "data": {"policy.yaml": "queues:\n  defaultQueueName: research\n"}}))
    _, out, _ = review(capsys, "-f", str(SAMPLES / "alice/appwrapper-job.yaml"), "--policy", str(configmap))
    assert labels(yaml.safe_load(out))["kueue.x-k8s.io/queue-name"] == "research"


def test_as_a_command_it_reads_stdin_and_never_prints_a_traceback() -> None:
    text = (SAMPLES / "bob/rayjob.yaml").read_text()
    ok = run_cli("review", "-f", "-", "--user", "dana", stdin=text)
    assert ok.returncode == 0 and "workload.codeflare.dev/user: dana" in ok.stdout
    bad = run_cli("review", "-f", "-", stdin="a: [b\n")
    assert bad.returncode == 2 and bad.stderr.startswith("batchgate review: -:") and "Traceback" not in bad.stderr
    unknown = run_cli("review", "--frobnicate")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
