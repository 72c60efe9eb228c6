"""Fair-sharing preemption by a ClusterQueue that stays within its nominal quota (kubernetes-sigs/kueue#9494,
batchgate's named fix behind the policy switch `fairSharing.preemptWithinNominal`, on by default as
Kueue v0.17's gate FairSharingPreemptWithinNominal): such a preemptor takes victims of borrowing
queues without the share strategies, as InCohortReclamation; switched off, the strategies decide
(Kueue v0.10). The first case is the differential's seed 180 written small."""

from __future__ import annotations

import pytest

from controller.simulation import run_trace
from tests.controller.decisions.scenario_check import check, expect
from tests.controller.decisions.trace_builders import cluster_queue, flavor, group, local_queue, workload


def cohort(borrower_cpu: int, owner_cpu: int) -> list[dict]:
    """ClusterQueues `borrower` and `owner` in cohort c, one flavor, the owner reclaiming from anyone."""
    return [flavor(), cluster_queue("borrower", cpu=borrower_cpu, cohort="c"),
            cluster_queue("owner", cpu=owner_cpu, cohort="c", reclaim="Any"),
            local_queue("lq-borrower", "borrower"), local_queue("lq-owner", "owner")]


def held(name: str, cq: str, cpu: int, flavor_name: str = "default") -> dict:
    return workload(name, queue=f"lq-{cq}", cpu=cpu, admitted_to=cq, flavors={"cpu": flavor_name})


def incoming(cq: str, cpu: int) -> dict:
    return workload("new", queue=f"lq-{cq}", cpu=cpu, created=10)


# Seed 180: the owner (6 CPUs) holds 1 and wants 3 more while the borrower (nominal 0) holds 4 of
# its CPUs; 4 of 6 stays within the owner's nominal quota. The strategies would allow the victim too
# (the owner borrows nothing), so only the reason tells the two apart.
SEED_180 = [*cohort(0, 6), held("small", "owner", 1), held("borrowed", "borrower", 4), incoming("owner", 3)]

# The owner borrows all of f1 (the largest share in the cohort) and wants 1 CPU of f0, which keeps
# it within its nominal f0 quota; the borrower's share, one CPU of f0, is below the owner's, so
# neither strategy lets it go. f1 has nobody to take (the owner's own workload is not a candidate).
STRATEGIES_REFUSE = [
    flavor("f0"), flavor("f1"),
    cluster_queue("owner", group({"f0": {"cpu": 3}, "f1": {"cpu": 0}}), cohort="c", reclaim="Any"),
    cluster_queue("borrower", group({"f0": {"cpu": 0}, "f1": {"cpu": 6}}), cohort="c"),
    local_queue("lq-owner", "owner"), local_queue("lq-borrower", "borrower"),
    held("mine1", "owner", 1, "f0"), held("mine2", "owner", 1, "f0"), held("all-of-f1", "owner", 6, "f1"),
    held("borrowed", "borrower", 1, "f0"), incoming("owner", 1)]

# The owner (nominal 4) holds 2 and wants 3: 5 would borrow one CPU, as much as the borrower
# (nominal 2, holding 3) borrows, so neither strategy lets the borrower's workload go.
OVER_NOMINAL_REFUSED = [*cohort(2, 4), held("mine", "owner", 2), held("borrowed", "borrower", 3), incoming("owner", 3)]

# The owner (nominal 4) holds 1 and wants 4: 5 borrows one CPU, less than the borrower's three.
OVER_NOMINAL_ALLOWED = [*cohort(2, 4), held("mine", "owner", 1), held("borrowed", "borrower", 5), incoming("owner", 4)]

CASES = [
    pytest.param(SEED_180, True, "InCohortReclamation",
                 id="seed 180 with the switch on the borrower's workload goes as InCohortReclamation"),
    pytest.param(SEED_180, False, "InCohortFairSharing",
                 id="seed 180 with the switch off the strategies take it as InCohortFairSharing"),
    pytest.param(STRATEGIES_REFUSE, True, "InCohortReclamation",
                 id="a preemptor within nominal takes a victim the strategies refuse with the switch on"),
    pytest.param(STRATEGIES_REFUSE, False, None,
                 id="with the switch off the strategies refuse it and nobody is preempted"),
    *(pytest.param(OVER_NOMINAL_REFUSED, switch, None,
                   id=f"a preemptor that would exceed nominal is refused by the strategies (switch {word})")
      for switch, word in ((True, "on"), (False, "off"))),
    *(pytest.param(OVER_NOMINAL_ALLOWED, switch, "InCohortFairSharing",
                   id=f"a preemptor that would exceed nominal takes what the strategies allow (switch {word})")
      for switch, word in ((True, "on"), (False, "off"))),
]


@pytest.mark.parametrize(("objects", "switch", "reason"), CASES)
def test_preemption_within_nominal(objects: list[dict], switch: bool, reason: str | None) -> None:
    reports = run_trace({"fairSharing": {"enable": True, "preemptWithinNominal": switch}, "objects": objects,
                         "steps": [{"cycles": 1}, {}]})
    if reason is None:
        check(reports[0], expect(admitted=[], preempted=[]))
        check(reports[1], expect(admitted=[], preempted=[]))
        return
    check(reports[0], expect(admitted=[], preempted=[("ns/borrowed", reason, "ns/new")]))
    check(reports[1], expect(admitted=["ns/new"], into={"ns/new": "owner"}))
