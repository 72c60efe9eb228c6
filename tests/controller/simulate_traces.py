"""Every `batchgate simulate` trace the test suite runs, gathered from the tests that own them, so
one test can replay them all through another world (the controller's admission loop)."""

from __future__ import annotations

from typing import Any

import yaml

from tests.controller import test_simulate_cli as cli
from tests.controller.state import test_requeue_batch as batch
from tests.controller.decisions.quota import (
    test_fair_sharing as fair, test_flavor_assignment as flavors, test_preemption as preemption,
    test_reclaimable_pods as reclaimable,
    test_single_queue as single, test_upstream_integration as integration, test_upstream_preemption as upstream,
)


def all_traces() -> list[tuple[str, dict[str, Any]]]:
    """(id, trace) for every good trace, ids as the owning test names them."""
    out: list[tuple[str, dict[str, Any]]] = []
    scenario_lists = [single.SCENARIOS, flavors.FLAVOR_SCENARIOS, flavors.AFFINITY_SCENARIOS, flavors.COHORT_SCENARIOS,
                      preemption.PREEMPTION_SCENARIOS, preemption.UPSTREAM_SCENARIOS, preemption.STOP_SCENARIOS,
                      integration.SCENARIOS, reclaimable.RECLAIMABLE_SCENARIOS]
    for scenarios in scenario_lists:
        out += [(p.id, p.values[0]) for p in scenarios]
    out += [(f"preemption: {p.id}", upstream.preemption_trace(*p.values[:2])) for p in upstream.CASES]
    out += [(f"fair sharing: {p.id}", fair.entry_order_trace(p.values[0])) for p in fair.ENTRY_ORDER_CASES]
    out += [("fair sharing: preempt from the ClusterQueue with the highest share", fair.HIGHEST_SHARE)]
    out += [(f"fair sharing: {p.id}", fair.fair_preemption_trace(*p.values[:2])) for p in fair.FAIR_PREEMPTION_CASES]
    out += [("simulate: the JSON example", cli.PREEMPTION), ("simulate: the table example", cli.TOO_BIG),
            ("simulate: late arrivals", cli.LATE_ARRIVALS),
            ("simulate: the documented example", yaml.safe_load(cli.EXAMPLE.read_text()))]
    out += [("requeue batch: a trace sets the period", batch.BATCHED_TRACE)]
    out += [(f"requeue batch: a victim and its parked neighbour, {period}", batch.victim_and_parked_neighbour(period))
            for period in ("0s", "1s")]
    return out
