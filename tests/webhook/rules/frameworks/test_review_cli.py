"""`batchgate review` shows, under a framework workload, what each of its pods will get."""

from __future__ import annotations

import json

import yaml

from batchgate import keys
from tests.webhook.rules.frameworks.builders import appwrapper, indexed_job, pytorchjob
from tests.webhook.helpers import run_cli


def manifest(tmp_path, obj) -> str:
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(obj))
    return str(path)


def test_review_json_lists_every_pod_with_role_rank_and_env(tmp_path) -> None:
    aw = appwrapper("mx", indexed_job("mx-scheduler", 1, role="scheduler"), indexed_job("mx-server", 1, role="server"),
                    indexed_job("mx-worker", 2), framework="mxnet")
    done = run_cli("review", "-f", manifest(tmp_path, aw), "--user", "alice", "-o", "json")
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(done.stdout)
    assert [(p["host"], p["role"], p["rank"], p["env"]["DMLC_ROLE"]) for p in outcome["pods"]] == [
        ("mx-scheduler-0.mx", "scheduler", 0, "scheduler"),
        ("mx-server-0.mx", "server", 1, "server"),
        ("mx-worker-0.mx", "worker", 2, "worker"),
        ("mx-worker-1.mx", "worker", 3, "worker"),
    ]


def test_review_prints_the_pods_on_stderr_and_keeps_stdout_the_manifest(tmp_path) -> None:
    job = indexed_job("train", 2, framework="pytorch")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "q"
    done = run_cli("review", "-f", manifest(tmp_path, job), "--user", "alice")
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(done.stdout)["spec"]["completionMode"] == "Indexed"
    assert "Pod train-1.train of Job team1/train: worker, rank 1: MASTER_ADDR=train-0.train " in done.stderr


def test_review_of_a_denied_framework_workload_shows_the_denial_and_no_pods(tmp_path) -> None:
    job = indexed_job("train", None, framework="pytorch")
    job["metadata"]["labels"][keys.QUEUE_NAME_LABEL] = "q"
    done = run_cli("review", "-f", manifest(tmp_path, job), "--user", "alice", "-o", "json")
    assert done.returncode == 1
    (outcome,) = json.loads(done.stdout)
    assert (outcome["reason"], outcome["pods"]) == ("InvalidFramework", [])
    assert "spec.completions: an Indexed framework Job needs completions" in outcome["message"]


def test_review_says_the_training_operator_sets_a_wrapped_pytorchjobs_env_and_prints_none_of_batchgates(
        tmp_path) -> None:
    aw = appwrapper("ptj", pytorchjob("ptj", workers=2), framework="pytorch")
    done = run_cli("review", "-f", manifest(tmp_path, aw), "--user", "alice", "-o", "json")
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(done.stdout)
    assert [(p["host"], p["role"], p["rank"], p["env"], p["envSetBy"]) for p in outcome["pods"]] == [
        ("ptj-master-0.ptj", "master", 0, {}, "training operator"),
        ("ptj-worker-0.ptj", "worker", 1, {}, "training operator"),
        ("ptj-worker-1.ptj", "worker", 2, {}, "training operator"),
    ]
    done = run_cli("review", "-f", manifest(tmp_path, aw), "--user", "alice")
    assert ("Pod ptj-worker-1.ptj of AppWrapper team1/ptj: worker, rank 2: "
            "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, PET_* set by the training operator") in done.stderr
    assert "MASTER_ADDR=" not in done.stderr
