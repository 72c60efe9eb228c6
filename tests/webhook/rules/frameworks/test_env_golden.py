"""Golden tables: a topology in, each pod's env out, checked against docs/frameworks.md.

Where Volcano and the training operator differ, Volcano's conventions hold (docs/frameworks.md, "Conventions"): the
section 2.6 example (vcjob `train`, master x1 + worker x3) is reproduced value for value.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.webhook.rules.frameworks.builders import (
    APPWRAPPER,
    JOB,
    admitted_pods,
    appwrapper,
    env_of,
    indexed_job,
    pytorchjob,
)

PYTORCH_KEYS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT",
                "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE")


def torch_env(master: str, world: int, rank: int, nproc: str = "auto", port: int = 23456) -> dict[str, str]:
    return dict(zip(PYTORCH_KEYS, (master, str(port), str(world), str(rank), master, str(port), str(world),
                                   str(rank), nproc)))


def master_and_workers_aw(**kwargs: Any) -> dict[str, Any]:
    """The section 2.6 vcjob as an AppWrapper: tasks become Jobs named `<job>-<task>`."""
    return appwrapper(
        "train",
        indexed_job("train-master", 1, role="master"),
        indexed_job("train-worker", 3, role="worker"),
        framework="pytorch",
        **kwargs,
    )


@pytest.mark.parametrize(
    "workload, kind, expected",
    [
        pytest.param(
            master_and_workers_aw(),
            APPWRAPPER,
            {
                "train-master-0": torch_env("train-master-0.train", 4, 0),
                "train-worker-0": torch_env("train-master-0.train", 4, 1),
                "train-worker-1": torch_env("train-master-0.train", 4, 2),
                "train-worker-2": torch_env("train-master-0.train", 4, 3),
            },
            id="an AppWrapper with a master Job and three workers gets Volcano's section 2.6 env",
        ),
        pytest.param(
            appwrapper("train", pytorchjob("train", masters=1, workers=3), framework="pytorch"),
            APPWRAPPER,
            {
                "train-master-0": torch_env("train-master-0.train", 4, 0),
                "train-worker-0": torch_env("train-master-0.train", 4, 1),
                "train-worker-1": torch_env("train-master-0.train", 4, 2),
                "train-worker-2": torch_env("train-master-0.train", 4, 3),
            },
            id="a wrapped PyTorchJob's replica types are its roles and its pods keep the operator's names",
        ),
        pytest.param(
            indexed_job("train", 4, framework="pytorch"),
            JOB,
            {f"train-{i}": torch_env("train-0.train", 4, i) for i in range(4)},
            id="a single Indexed Job is all workers with index 0 the master",
        ),
        pytest.param(
            master_and_workers_aw(args={"nprocPerNode": "8", "port": 29500}),
            APPWRAPPER,
            {
                "train-master-0": torch_env("train-master-0.train", 4, 0, "8", 29500),
                "train-worker-0": torch_env("train-master-0.train", 4, 1, "8", 29500),
                "train-worker-1": torch_env("train-master-0.train", 4, 2, "8", 29500),
                "train-worker-2": torch_env("train-master-0.train", 4, 3, "8", 29500),
            },
            id="nprocPerNode 8 counts processes per pod while WORLD_SIZE keeps counting pods",
        ),
        pytest.param(
            appwrapper(
                "ddp",
                indexed_job("lead", 1, role="leader"),
                indexed_job("crew", 2, role="follower"),
                framework="pytorch",
                args={"roles": {"master": "leader", "worker": "follower"}},
            ),
            APPWRAPPER,
            {
                "lead-0": torch_env("lead-0.ddp", 3, 0),
                "crew-0": torch_env("lead-0.ddp", 3, 1),
                "crew-1": torch_env("lead-0.ddp", 3, 2),
            },
            id="role names from the args map user labels onto master and worker",
        ),
    ],
)
def test_pytorch_env_per_pod(workload: dict[str, Any], kind: Any, expected: dict[str, dict[str, str]]) -> None:
    pods = admitted_pods(workload, kind)
    assert {host: env_of(pod) for host, pod in pods.items()} == expected
    assert {host: pod["metadata"]["annotations"]["batchgate.dev/rank"] for host, pod in pods.items()} == {
        host: env["RANK"] for host, env in expected.items()
    }


def tf_config(cluster: dict[str, list[str]], task: str, index: int) -> str:
    return json.dumps({"cluster": cluster, "task": {"type": task, "index": index}}, separators=(",", ":"))


PS_AND_TWO_WORKERS = {"ps": ["train-ps-0.train:2222"], "worker": ["train-worker-0.train:2222", "train-worker-1.train:2222"]}
FULL_CLUSTER = {
    "ps": ["train-ps-0.train:2222"],
    "worker": ["train-worker-0.train:2222"],
    "chief": ["train-chief-0.train:2222"],
    "evaluator": ["train-evaluator-0.train:2222"],
}


@pytest.mark.parametrize(
    "workload, kind, expected",
    [
        pytest.param(
            appwrapper(
                "train",
                indexed_job("train-ps", 1, role="ps"),
                indexed_job("train-worker", 2, role="worker"),
                framework="tensorflow",
            ),
            APPWRAPPER,
            {
                "train-ps-0": tf_config(PS_AND_TWO_WORKERS, "ps", 0),
                "train-worker-0": tf_config(PS_AND_TWO_WORKERS, "worker", 0),
                "train-worker-1": tf_config(PS_AND_TWO_WORKERS, "worker", 1),
            },
            id="ps x1 and worker x2 as section 3.3 but with Volcano's hosts and no environment key",
        ),
        pytest.param(
            appwrapper(
                "train",
                indexed_job("train-evaluator", 1, role="evaluator"),
                indexed_job("train-chief", 1, role="chief"),
                indexed_job("train-worker", 1, role="worker"),
                indexed_job("train-ps", 1, role="ps"),
                framework="tensorflow",
            ),
            APPWRAPPER,
            {
                f"train-{role}-0": tf_config(FULL_CLUSTER, role, 0)
                for role in ("ps", "worker", "chief", "evaluator")
            },
            id="the cluster lists ps, worker, chief, evaluator in Volcano's order and includes the evaluator",
        ),
        pytest.param(
            indexed_job("tf", 3, framework="tensorflow"),
            JOB,
            {
                f"tf-{i}": tf_config({"worker": ["tf-0.tf:2222", "tf-1.tf:2222", "tf-2.tf:2222"]}, "worker", i)
                for i in range(3)
            },
            id="a single Indexed Job is all TensorFlow workers",
        ),
    ],
)
def test_tensorflow_config_per_pod(workload: dict[str, Any], kind: Any, expected: dict[str, str]) -> None:
    pods = admitted_pods(workload, kind)
    assert {host: env_of(pod) for host, pod in pods.items()} == {
        host: {"TF_CONFIG": config} for host, config in expected.items()
    }


def test_a_one_pod_tensorflow_job_runs_undistributed_without_tf_config() -> None:
    pods = admitted_pods(indexed_job("solo", 1, framework="tensorflow", role="worker"), JOB)
    assert env_of(pods["solo-0"]) == {}


def test_mxnet_env_per_pod() -> None:
    aw = appwrapper(
        "mx",
        indexed_job("mx-scheduler", 1, role="scheduler"),
        indexed_job("mx-server", 2, role="server"),
        indexed_job("mx-worker", 3, role="worker"),
        framework="mxnet",
    )
    pods = admitted_pods(aw, APPWRAPPER)
    common = {"DMLC_PS_ROOT_URI": "mx-scheduler-0.mx", "DMLC_PS_ROOT_PORT": "9091",
              "DMLC_NUM_SERVER": "2", "DMLC_NUM_WORKER": "3"}
    assert {host: env_of(pod) for host, pod in pods.items()} == {
        "mx-scheduler-0": {**common, "DMLC_ROLE": "scheduler"},
        "mx-server-0": {**common, "DMLC_ROLE": "server"},
        "mx-server-1": {**common, "DMLC_ROLE": "server"},
        "mx-worker-0": {**common, "DMLC_ROLE": "worker"},
        "mx-worker-1": {**common, "DMLC_ROLE": "worker"},
        "mx-worker-2": {**common, "DMLC_ROLE": "worker"},
    }
