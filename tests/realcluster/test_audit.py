"""kube-apiserver's audit log read as recorded requests (realcluster/audit.py): each request
counted once, at ResponseComplete, as the user the authorizer judged, with its decision; a watch
still open is told apart; paths that name no resource left out, as the stand-in leaves them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from localcluster.authorization import RecordedRequest
from realcluster.audit import LOG_NAME, AuditLogError, apiserver_flags, events, read_log, summarize
from realcluster.cluster import RealCluster, RealClusterError

CONTROLLER = "system:serviceaccount:batchgate-system:batchgate-controller"


def event(audit_id: str, stage: str, verb: str, ref: dict[str, str] | None, *, user: str = CONTROLLER,
          decision: str = "allow", impersonated: str = "") -> str:
    """One line as kube-apiserver writes it at level Metadata."""
    line: dict[str, Any] = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
                            "auditID": audit_id, "stage": stage, "verb": verb, "requestURI": "/x",
                            "user": {"username": user, "groups": ["system:authenticated"]},
                            "annotations": {"authorization.k8s.io/decision": decision,
                                            "authorization.k8s.io/reason": ""}}
    if ref is not None:
        line["objectRef"] = {"apiVersion": "v1", **ref}
    if impersonated:
        line["impersonatedUser"] = {"username": impersonated}
    return json.dumps(line) + "\n"


JOBS = {"resource": "jobs", "apiGroup": "batch", "namespace": "team-a"}


def request(verb: str, group: str, resource: str, subresource: str = "", namespace: str = "team-a", *,
            user: str = CONTROLLER, allowed: bool = True) -> RecordedRequest:
    return RecordedRequest(user, verb, group, resource, subresource, namespace, allowed)


def test_a_request_counts_once_at_response_complete_whatever_stages_the_log_holds() -> None:
    lines = [event("a", "RequestReceived", "create", JOBS), event("a", "ResponseComplete", "create", JOBS),
             event("b", "ResponseComplete", "create", JOBS), event("b", "ResponseComplete", "create", JOBS)]
    assert summarize(events(lines)).completed == Counter({request("create", "batch", "jobs"): 2})


def test_a_watch_is_open_from_response_started_until_it_completes() -> None:
    pods = {"resource": "pods"}
    started = [event("w", "ResponseStarted", "watch", pods), event("v", "ResponseStarted", "watch", pods)]
    log = summarize(events([*started, event("w", "ResponseComplete", "watch", pods)]))
    watch = request("watch", "", "pods", namespace="")
    assert log.completed == Counter({watch: 1})
    assert log.open == Counter({watch: 1})


def test_the_decision_comes_from_the_authorizer_s_annotation() -> None:
    lines = [event("a", "ResponseComplete", "get", {"resource": "secrets", "namespace": "kube-system",
                                                      "name": "x"}, decision="forbid")]
    assert list(summarize(events(lines)).completed) == [request("get", "", "secrets", namespace="kube-system",
                                                                allowed=False)]


def test_the_record_keeps_the_subresource_and_the_impersonated_user() -> None:
    status = {"resource": "appwrappers", "apiGroup": "workload.codeflare.dev", "subresource": "status",
              "namespace": "team-a", "name": "aw"}
    lines = [event("a", "ResponseComplete", "patch", status, user="admin", impersonated=CONTROLLER)]
    assert list(summarize(events(lines)).completed) == [request("patch", "workload.codeflare.dev", "appwrappers",
                                                                "status")]


def test_requests_to_paths_that_name_no_resource_are_left_out() -> None:
    lines = [event("a", "ResponseComplete", "get", None), event("b", "ResponseComplete", "get", {"resource": ""})]
    assert not summarize(events(lines)).completed


def test_a_last_line_still_being_written_is_left_for_the_next_read() -> None:
    whole = event("a", "ResponseComplete", "create", JOBS)
    assert list(events([whole, whole[:40]])) == [json.loads(whole)]


@pytest.mark.parametrize("line, message", [
    ("I0101 not json\n", "kube-apiserver.log:1: not a JSON audit event: was the log written with "
     "--audit-log-format json?"),
    ('{"kind": "Policy"}\n', "kube-apiserver.log:1: not an audit event (kind Event with an auditID)"),
], ids=["a line that is not JSON", "JSON that is not an event"])
def test_a_line_that_is_no_audit_event_is_named_with_its_file_and_line(line: str, message: str) -> None:
    with pytest.raises(AuditLogError) as caught:
        list(events([line], "kube-apiserver.log"))
    assert str(caught.value) == message


def test_the_log_is_read_across_a_rotation_oldest_file_first(tmp_path: Path) -> None:
    pods = {"resource": "pods", "namespace": "team-a"}
    (tmp_path / "audit-2026-01-01T00-00-00.000.log").write_text(event("w", "ResponseStarted", "watch", pods))
    (tmp_path / LOG_NAME).write_text(event("w", "ResponseComplete", "watch", pods))
    log = read_log(tmp_path)
    assert log.completed == Counter({request("watch", "", "pods"): 1}) and not log.open


def test_kube_apiserver_gets_a_metadata_policy_for_every_request_and_a_rotated_json_log(tmp_path: Path) -> None:
    flags = apiserver_flags(tmp_path / "audit")
    options = dict(zip(flags[::2], flags[1::2]))
    policy = json.loads(Path(options["--audit-policy-file"]).read_text())
    assert policy["rules"] == [{"level": "Metadata"}] and policy["omitStages"] == ["RequestReceived"]
    assert options["--audit-log-path"] == str(tmp_path / "audit" / LOG_NAME)
    assert options["--audit-log-format"] == "json"
    assert int(options["--audit-log-maxsize"]) > 0 and int(options["--audit-log-maxbackup"]) > 0


def test_a_cluster_started_without_an_audit_log_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(RealClusterError) as caught:
        RealCluster(tmp_path, binaries={}).read_audit()
    assert str(caught.value) == "this cluster keeps no audit log: start it with RealCluster(..., audit=True)"


def test_a_directory_without_a_log_is_an_error_not_an_empty_log(tmp_path: Path) -> None:
    with pytest.raises(AuditLogError) as caught:
        read_log(tmp_path)
    assert str(caught.value) == f"no audit log in {tmp_path}: was kube-apiserver started with --audit-log-path there?"
