"""The preview `batchgate review` shows equals what the Pod phase gives each pod."""

from __future__ import annotations

import pytest

from tests.webhook.rules.frameworks.builders import (
    APPWRAPPER,
    JOB,
    admitted_pods,
    appwrapper,
    env_of,
    indexed_job,
)
from webhook.rules.frameworks.preview import preview_pods, workload_layout


@pytest.mark.parametrize(
    "workload, kind",
    [
        pytest.param(appwrapper("aw", indexed_job("m", 1, role="master"), indexed_job("x", 2), framework="pytorch"),
                     APPWRAPPER, id="a PyTorch master Job plus a worker Job"),
        pytest.param(indexed_job("tf", 3, framework="tensorflow"), JOB, id="a TensorFlow Indexed Job"),
        pytest.param(appwrapper("m", indexed_job("m-l", 1, role="master"), indexed_job("m-w", 3), framework="mpi"),
                     APPWRAPPER, id="an MPI launcher and three workers"),
    ],
)
def test_the_preview_of_a_workload_is_what_each_of_its_pods_gets(workload, kind) -> None:
    pods = admitted_pods(workload, kind)
    layout = workload_layout(workload)
    previews = preview_pods(layout)
    assert [p.rank for p in previews] == list(range(len(pods)))
    assert {p.hostname: dict(p.env) for p in previews} == {host: env_of(pod) for host, pod in pods.items()}
    assert {p.hostname: p.host for p in previews} == {
        host: f"{host}.{pod['spec']['subdomain']}" for host, pod in pods.items()
    }


def test_a_workload_that_was_not_laid_out_has_no_preview() -> None:
    assert workload_layout(indexed_job("plain", 2)) is None
