"""Per-pod request arithmetic, as the scheduler charges it: containers, init containers, sidecars,
overhead, limits standing in for missing requests."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.decisions.jobs.pod_requests import PodSpecError, pod_requests, with_limits_as_requests


def c(cpu: str | None = None, memory: str | None = None, *, limit_cpu: str | None = None,
      limit_gpu: str | None = None, sidecar: bool = False) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    limits = {k: v for k, v in (("cpu", limit_cpu), ("nvidia.com/gpu", limit_gpu)) if v is not None}
    container: dict[str, Any] = {"name": "c", "resources": {}}
    if requests:
        container["resources"]["requests"] = requests
    if limits:
        container["resources"]["limits"] = limits
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def D(text: str) -> Decimal:
    return Decimal(text)


@pytest.mark.parametrize(
    "spec,expected",
    [
        pytest.param({"containers": [c("1", "1Gi")]}, {"cpu": D("1"), "memory": D(2**30)},
                     id="one container is charged its requests"),
        pytest.param({"containers": [c("500m"), c("250m")]}, {"cpu": D("0.75")},
                     id="containers run together so their requests add up"),
        pytest.param({"containers": [c(limit_cpu="2", limit_gpu="4")]}, {"cpu": D("2"), "nvidia.com/gpu": D("4")},
                     id="a limit without a request is charged as the request"),
        pytest.param({"containers": [c("1", limit_cpu="3")]}, {"cpu": D("1")},
                     id="a request below its limit is charged the request"),
        pytest.param({"initContainers": [c("4")], "containers": [c("1")]}, {"cpu": D("4")},
                     id="a big init container sets the peak"),
        pytest.param({"initContainers": [c("1"), c("2")], "containers": [c("3")]}, {"cpu": D("3")},
                     id="init containers run one at a time so only the largest counts"),
        pytest.param({"initContainers": [c("1", sidecar=True)], "containers": [c("2")]}, {"cpu": D("3")},
                     id="a sidecar keeps running beside the containers"),
        pytest.param({"initContainers": [c("1", sidecar=True), c("5")], "containers": [c("2")]}, {"cpu": D("6")},
                     id="an init container after a sidecar runs beside it"),
        pytest.param({"initContainers": [c("5"), c("1", sidecar=True)], "containers": [c("2")]}, {"cpu": D("5")},
                     id="an init container before a sidecar does not overlap it"),
        pytest.param({"containers": [c("1")], "overhead": {"cpu": "250m", "memory": "120Mi"}},
                     {"cpu": D("1.25"), "memory": D(120 * 2**20)}, id="pod overhead is added on top"),
        pytest.param({"containers": [c()]}, {}, id="a container without resources asks for nothing"),
    ],
)
def test_pod_requests(spec: dict[str, Any], expected: dict[str, Decimal]) -> None:
    assert pod_requests(spec) == expected


@pytest.mark.parametrize(
    "spec,message",
    [
        pytest.param({"containers": [c("lots")]}, "spec.containers[0].resources.requests.cpu: invalid quantity 'lots'",
                     id="an unparsable quantity names the container"),
        pytest.param({"containers": [c("-1")]}, "spec.containers[0].resources.requests.cpu: must not be negative, got '-1'",
                     id="a negative request is refused"),
        pytest.param({"containers": [c("4", limit_cpu="2")]},
                     "spec.containers[0].resources.requests.cpu: must be less than or equal to the limit",
                     id="a request above its limit is refused"),
        pytest.param({"containers": "nginx"}, "spec.containers: must be a list, got string",
                     id="containers that are not a list are refused"),
        pytest.param({"containers": [c("1")], "overhead": {"cpu": "x"}}, "spec.overhead.cpu: invalid quantity 'x'",
                     id="an unparsable overhead is refused"),
    ],
)
def test_bad_pod_specs_get_a_clear_error(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(PodSpecError) as info:
        pod_requests(spec)
    assert str(info.value) == message


def test_the_stored_template_requests_what_it_only_limits() -> None:
    template = {"spec": {"containers": [c("1", limit_cpu="2", limit_gpu="8")]}}
    adjusted = with_limits_as_requests(template)
    assert adjusted["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "nvidia.com/gpu": "8"}
    assert "nvidia.com/gpu" not in template["spec"]["containers"][0]["resources"]["requests"]


millicores = st.integers(min_value=0, max_value=64_000).map(lambda m: f"{m}m")


@given(
    containers=st.lists(millicores, min_size=1, max_size=4),
    inits=st.lists(st.tuples(millicores, st.booleans()), max_size=4),
)
def test_a_pod_never_asks_less_than_any_phase_of_its_life(containers: list[str], inits: list[tuple[str, bool]]) -> None:
    spec = {"containers": [c(x) for x in containers], "initContainers": [c(x, sidecar=s) for x, s in inits]}
    total = pod_requests(spec).get("cpu", Decimal(0))
    sidecars = sum((Decimal(x[:-1]) / 1000 for x, s in inits if s), Decimal(0))
    steady = sum((Decimal(x[:-1]) / 1000 for x in containers), Decimal(0)) + sidecars
    assert total >= steady
    assert all(total >= Decimal(x[:-1]) / 1000 for x, _ in inits)
    assert total <= steady + max((Decimal(x[:-1]) / 1000 for x, _ in inits), default=Decimal(0))
