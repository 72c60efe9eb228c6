"""Kept-alive connections are spread over the gateway's workers (webhook/serving/balance.py).

We test these aspects: the accept decision (pure, table-driven and as an invariant), the shared
connection table across a real fork, and a real 2-worker gateway that ends up holding the
connections of one client half each, told apart by the `pid` of the audit lines.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import sample
from tests.webhook.helpers import ALICE, review_for
from webhook.serving.balance import ACCEPT_DEFER_LIMIT, UNUSED, ConnectionTable, defer_accept

BOOT_TIMEOUT_SECONDS = 30.0
CLOSE_SETTLE_SECONDS = 0.5
"""Time for the workers to see the clients' closes (each worker's poller wakes on them)."""


@pytest.mark.parametrize(
    ("mine", "peers", "waited", "deferred"),
    [
        pytest.param(0, [0], 0.0, False, id="a tie accepts so a burst is taken in turns"),
        pytest.param(1, [0], 0.0, True, id="one more than the only peer leaves the connection to it"),
        pytest.param(3, [5, 2, UNUSED], 0.0, True, id="more than the least-loaded live peer defers"),
        pytest.param(2, [5, 2, UNUSED], 0.0, False, id="as few as the least-loaded peer accepts"),
        pytest.param(4, [UNUSED, UNUSED], 0.0, False, id="no live peer means accepting at once"),
        pytest.param(4, [], 0.0, False, id="a lone worker always accepts"),
        pytest.param(9, [0], ACCEPT_DEFER_LIMIT, False, id="after the limit the busier worker takes it anyway"),
        pytest.param(9, [0], ACCEPT_DEFER_LIMIT / 2, True, id="before the limit it keeps waiting for the peer"),
    ],
)
def test_defer_accept(mine: int, peers: list[int], waited: float, deferred: bool) -> None:
    assert defer_accept(mine, peers, waited) is deferred


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=16))
def test_the_least_loaded_worker_always_accepts(counts: list[int]) -> None:
    least = counts.index(min(counts))
    assert not defer_accept(counts[least], counts[:least] + counts[least + 1:], waited=0.0)


@given(st.integers(min_value=0, max_value=10_000), st.lists(st.integers(min_value=UNUSED, max_value=10_000)),
       st.floats(min_value=ACCEPT_DEFER_LIMIT, max_value=1e6))
def test_no_connection_waits_past_the_limit(mine: int, peers: list[int], waited: float) -> None:
    assert not defer_accept(mine, peers, waited)


def test_slots_are_claimed_released_and_reused() -> None:
    table = ConnectionTable(2)
    first, second = table.claim(), table.claim()
    assert (first, second, table.claim()) == (0, 1, None)
    table.publish(0, 7)
    assert table.peers(1) == [7]
    table.release(0)
    assert table.peers(1) == [UNUSED]
    assert table.claim() == 0 and table.count(0) == 0


def test_reserved_slots_count_as_idle_workers_until_handed_out() -> None:
    table = ConnectionTable(3, reserved=2)
    assert table.peers(2) == [0, 0]
    assert [table.claim(), table.claim(), table.claim(), table.claim()] == [0, 1, 2, None]
    table.release(1)
    assert table.claim() == 1


@pytest.mark.parametrize(("slots", "reserved"), [
    pytest.param(0, 0, id="no slots"),
    pytest.param(-3, 0, id="negative slots"),
    pytest.param(2, 3, id="more reserved than slots"),
    pytest.param(2, -1, id="negative reserved"),
])
def test_a_table_without_slots_is_refused(slots: int, reserved: int) -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        ConnectionTable(slots, reserved)


def _publish_in_child(table: ConnectionTable, slot: int, count: int) -> None:
    table.publish(slot, count)


def test_counts_written_in_a_forked_worker_are_seen_by_its_peers() -> None:
    table = ConnectionTable(3)
    parent_slot, child_slot = table.claim(), table.claim()
    assert parent_slot is not None and child_slot is not None
    child = multiprocessing.get_context("fork").Process(target=_publish_in_child, args=(table, child_slot, 5))
    child.start()
    child.join(timeout=20)
    assert child.exitcode == 0
    assert table.peers(parent_slot) == [5, UNUSED]


def _reviews_per_worker(gateway, audit: Path, connections: int) -> Counter[int]:
    """Open `connections` one at a time (each answers before the next opens), review twice on
    each, close them all; the number of connections each worker held, by audit-line pid."""
    obj = sample("alice/appwrapper-pytorchjob.yaml")
    clients = [gateway.client() for _ in range(connections)]
    uids: list[str] = []
    try:
        for client in clients:
            review = review_for(obj, ALICE)
            status, reply = client.review("/mutate", review)
            assert status == 200 and reply["response"]["allowed"], reply
            uids.append(review["request"]["uid"])
        # Again on the same connections: a kept-alive connection stays with the worker that took it.
        for client, uid in zip(clients, uids):
            review = review_for(obj, ALICE)
            review["request"]["uid"] = uid
            status, _ = client.review("/mutate", review)
            assert status == 200
    finally:
        for client in clients:
            client.close()
    pid_of: dict[str, set[int]] = {}
    for line in audit.read_text().splitlines():
        record = json.loads(line)
        pid_of.setdefault(record["uid"], set()).add(record["pid"])
    assert all(len(pid_of[uid]) == 1 for uid in uids), pid_of
    return Counter(next(iter(pid_of[uid])) for uid in uids)


def test_a_two_worker_gateway_holds_half_the_connections_each(cert_dir: Path, launch, tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    gateway = launch(cert_dir, "--workers", "2", "--threads", "2", "--audit-log", str(audit))
    # Both workers up (each logs its first policy after fork), so neither takes all by being first.
    deadline = time.monotonic() + BOOT_TIMEOUT_SECONDS
    while sum("loaded from built-in defaults" in line for line in list(gateway.stderr_lines)) < 2:
        assert time.monotonic() < deadline, gateway.stderr_lines
        time.sleep(0.05)
    first = _reviews_per_worker(gateway, audit, 8)
    assert sorted(first.values()) == [4, 4], first
    # Closed connections are no longer counted: a second client's connections are split again.
    time.sleep(CLOSE_SETTLE_SECONDS)
    second = _reviews_per_worker(gateway, audit, 8)
    assert sorted(second.values()) == [4, 4], second
