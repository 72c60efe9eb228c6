"""We test the process kubelet's decisions: which pods run for real, probe counting, restarts
and backoff after an exit, the pod status it posts, loopback IPs and Service backends."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localcluster.sim import probes
from localcluster.sim.endpoints import NoEndpoints, allocate_loopback, service_backends
from localcluster.sim.process_pod import ContainerRecord, after_exit, image_matches, pod_status, runs_as_processes

T0 = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
S = dt.timedelta(seconds=1)


@pytest.mark.parametrize(("image", "wanted", "expected"), [
    pytest.param("batchgate:0.3.0", ["batchgate:0.3.0"], True, id="the exact image"),
    pytest.param("batchgate:0.3.0", ["batchgate"], True, id="a run image without a tag matches any tag"),
    pytest.param("ghcr.io/x/batchgate:1", ["batchgate"], False, id="another repository does not match"),
    pytest.param("batchgate:0.2.0", ["batchgate:0.3.0"], False, id="another tag does not match"),
    pytest.param("localhost:5000/batchgate", ["localhost:5000/batchgate"], True, id="a registry port is not a tag"),
])
def test_image_matching(image, wanted, expected):
    assert image_matches(image, wanted) is expected


def test_a_pod_mixing_images_stays_simulated():
    pod = {"spec": {"containers": [{"image": "batchgate:1"}, {"image": "envoy:1"}]}}
    assert not runs_as_processes(pod, ["batchgate:1"])
    assert runs_as_processes({"spec": {"containers": [{"image": "batchgate:1"}] * 2}}, ["batchgate:1"])


def readiness(**probe):
    container = {"name": "c", "ports": [{"name": "https", "containerPort": 9443}],
                 "readinessProbe": {"httpGet": {"path": "readyz", "port": "https", "scheme": "HTTPS"}, **probe}}
    return probes.probe_spec(container, "readiness", "127.1.0.3")


def test_a_probe_takes_the_api_defaults_and_resolves_named_ports():
    spec = readiness()
    assert spec.action == probes.HttpGet("HTTPS", "127.1.0.3", 9443, "/readyz")
    assert (spec.period, spec.timeout, spec.failure_threshold, spec.success_threshold) == (10 * S, S, 3, 1)


def test_a_probe_on_a_port_the_container_does_not_name_is_an_error():
    with pytest.raises(probes.ProbeError, match="not a named port"):
        probes.probe_spec({"name": "c", "livenessProbe": {"tcpSocket": {"port": "metrics"}}}, "liveness", "127.1.0.3")


@pytest.mark.parametrize(("results", "expected"), [
    pytest.param([], False, id="readiness starts failed"),
    pytest.param([True], False, id="one success is not enough with successThreshold 2"),
    pytest.param([True, True], True, id="two in a row make it ready"),
    pytest.param([True, True, False], True, id="one failure does not flip it back"),
    pytest.param([True, True, False, False], False, id="failureThreshold failures in a row do"),
    pytest.param([True, False, True], False, id="a failure resets the success count"),
])
def test_probe_results_count_against_thresholds(results, expected):
    spec = readiness(successThreshold=2, failureThreshold=2)
    state = probes.initial("readiness")
    for ok in results:
        state = probes.record(spec, state, ok, "" if ok else "refused")
    assert state.ok is expected


def test_liveness_and_readiness_wait_for_the_startup_probe():
    assert [probes.active(k, False) for k in probes.KINDS] == [True, False, False]
    assert [probes.active(k, True) for k in probes.KINDS] == [False, True, True]


def running(restarts=0, since=T0):
    return ContainerRecord("c", "img", restarts=restarts, running_since=since, started=True, ready=True)


@pytest.mark.parametrize(("restarts", "ran", "code", "policy", "expected"), [
    pytest.param(0, 5 * S, 1, "Always", (0 * S, "ContainerCreating"), id="the first restart is immediate"),
    pytest.param(1, 5 * S, 1, "Always", (10 * S, "CrashLoopBackOff"), id="the second waits 10s"),
    pytest.param(3, 5 * S, 0, "Always", (40 * S, "CrashLoopBackOff"), id="Always restarts a clean exit too, doubling"),
    pytest.param(9, 5 * S, 1, "Always", (300 * S, "CrashLoopBackOff"), id="the backoff stops at five minutes"),
    pytest.param(4, 11 * 60 * S, 1, "Always", (0 * S, "ContainerCreating"), id="a ten minute run resets it"),
    pytest.param(0, 5 * S, 0, "OnFailure", None, id="OnFailure keeps a clean exit"),
    pytest.param(0, 5 * S, 2, "Never", None, id="Never never restarts"),
])
def test_what_follows_an_exit(restarts, ran, code, policy, expected):
    outcome = after_exit(running(restarts), code, T0 + ran, policy, "p", "ns", "u")
    assert outcome.record.last_exit.code == code
    if expected is None:
        assert outcome.at is None and outcome.record.final
    else:
        assert (outcome.at - (T0 + ran), outcome.record.waiting_reason) == expected


def status_of(*records, previous=None):
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}
    return pod_status(pod, records, start_time=T0, host_ip="10.0.0.1", pod_ip="127.1.0.2",
                      previous=previous or {}, now=T0 + 5 * S, mounted=True)


def test_a_pod_is_ready_only_when_every_container_is():
    status = status_of(running(), ContainerRecord("d", "img", running_since=T0, started=True, ready=False))
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (status["phase"], ready["status"], ready["message"]) == ("Running", "False",
                                                                    "containers with unready status: [d]")


def test_a_crash_looping_container_shows_its_last_exit():
    looping = after_exit(running(2), 3, T0 + 2 * S, "Always", "p", "ns", "u").record
    (cs,) = status_of(looping)["containerStatuses"]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert (cs["lastState"]["terminated"]["exitCode"], cs["lastState"]["terminated"]["reason"]) == (3, "Error")


def test_a_condition_keeps_its_transition_time_while_unchanged():
    first = status_of(running())
    later = pod_status({"metadata": {"uid": "u"}}, [running()], start_time=T0, host_ip="h", pod_ip="i",
                       previous=first, now=T0 + 60 * S, mounted=True)
    assert later["conditions"] == first["conditions"]


@pytest.mark.parametrize(("records", "phase"), [
    pytest.param([ContainerRecord("c", "i")], "Pending", id="nothing started yet"),
    pytest.param([after_exit(running(), 0, T0, "Never", "p", "n", "u").record], "Succeeded", id="all exited cleanly"),
    pytest.param([after_exit(running(), 0, T0, "Never", "p", "n", "u").record,
                  after_exit(running(), 1, T0, "Never", "p", "n", "u").record], "Failed", id="one failed"),
])
def test_phase(records, phase):
    assert status_of(*records)["phase"] == phase


@given(st.sets(st.integers(min_value=1, max_value=300)), st.integers(min_value=0, max_value=70000))
def test_loopback_ips_are_unique_and_loopback_from_any_start(taken_hosts, start):
    used = {f"127.1.{n // 254}.{n % 254 + 1}" for n in taken_hosts}
    address = allocate_loopback(used, start)
    assert address.startswith("127.1.") and address not in used


SERVICE = {"metadata": {"name": "hook"}, "spec": {"ports": [{"name": "https", "port": 443, "targetPort": "https"}]}}


def endpoints(*ips, not_ready=()):
    subset = {"ports": [{"name": "https", "port": 9443}], "addresses": [{"ip": ip} for ip in ips]}
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return {"subsets": [subset]}


@pytest.mark.parametrize("turn", [0, 1, 2, 3])
def test_calls_start_at_successive_endpoints_and_fall_back_to_the_others(turn):
    got = service_backends(SERVICE, endpoints("127.1.0.1", "127.1.0.2"), 443, turn)
    assert sorted(got) == [("127.1.0.1", 9443), ("127.1.0.2", 9443)]
    assert got[0] == [("127.1.0.1", 9443), ("127.1.0.2", 9443)][turn % 2]


@pytest.mark.parametrize(("eps", "port", "message"), [
    pytest.param(endpoints(not_ready=("127.1.0.1",)), 443, 'no endpoints available for service "hook"',
                 id="only not-ready addresses"),
    pytest.param(None, 443, 'no endpoints available for service "hook"', id="no Endpoints object yet"),
    pytest.param(endpoints("127.1.0.1"), 8443, 'no service port 8443 found for service "hook"',
                 id="a port the Service does not have"),
])
def test_no_usable_endpoint(eps, port, message):
    with pytest.raises(NoEndpoints, match=message):
        service_backends(SERVICE, eps, port, 0)


def test_a_terminating_pod_leaves_the_ready_addresses_but_keeps_serving_in_its_slice():
    from localcluster.sim.endpoints import endpoint_slice_for, endpoints_for

    service = {"metadata": {"name": "hook", "namespace": "ns", "uid": "s"},
               "spec": {"selector": {"app": "hook"}, "ports": [{"name": "https", "port": 443, "targetPort": 9443}]}}
    pods = [{"metadata": {"name": name, "namespace": "ns", "labels": {"app": "hook"}, **extra},
             "status": {"podIP": ip, "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
            for name, ip, extra in (("a", "127.1.0.1", {}), ("b", "127.1.0.2", {"deletionTimestamp": "2026-11-26T12:00:00Z"}))]
    (subset,) = endpoints_for(service, pods)["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["127.1.0.1"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["127.1.0.2"]
    conditions = [e["conditions"] for e in endpoint_slice_for(service, pods)["endpoints"]]
    assert conditions == [{"ready": True, "serving": True, "terminating": False},
                          {"ready": False, "serving": True, "terminating": True}]
