"""The pure decision bench (bench/admission_decisions.py) on a scenario small enough to run here:
every workload admitted and finished, with parked workloads asked back at once or after a
requeue batch (the bench must wake when a batch is due, or parked workloads would wait forever),
and its arguments checked."""

from __future__ import annotations

import pytest

from bench.admission_decisions import Config, WorkloadClass, main, run

SMALL = Config("small", cohorts=1, queues=2, nominal=2, borrowing_limit=2, classes=(
    WorkloadClass("small", 12, 10, 200, 50, 1),
    WorkloadClass("large", 2, 100, 400, 200, 3)))


@pytest.mark.parametrize("batch_ms", [0, 1000])
def test_every_workload_is_admitted_and_finished_with_or_without_a_requeue_batch(batch_ms: int) -> None:
    result = run(SMALL, requeue_batch_ms=batch_ms)
    assert result["workloads"] == 2 * (12 + 2)
    assert result["requeueBatchMs"] == batch_ms
    times = result["meanTimeToAdmissionSeconds"]
    assert isinstance(times, dict) and set(times) == {"small", "large"}


def test_a_requeue_batch_delays_what_parked_workloads_wait_for() -> None:
    at_once, batched = run(SMALL), run(SMALL, requeue_batch_ms=1000)
    assert batched["simulatedSeconds"] > at_once["simulatedSeconds"]  # type: ignore[operator]
    assert batched["cycles"] <= at_once["cycles"]  # type: ignore[operator]


@pytest.mark.parametrize("argv, message", [
    (["bogus"], "unknown config bogus: choose from baseline, large-scale or all"),
    (["--requeue-batch", "-1"], "--requeue-batch must not be negative"),
])
def test_bad_arguments_end_in_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith(message)
