"""The monitoring overlay's Grafana dashboard and PrometheusRule read only what batchgate exports.

Every PromQL expression in them (panel targets, template queries, alert rules) is parsed with a
real PromQL parser; every metric it selects must be exposed by a live controller (on the local
cluster) or a live gateway (over TLS, after answering a review), and every label it matches,
groups or joins on must be one that metric carries. The alerts are also checked and unit-tested
with Prometheus's own promtool (Debian's `prometheus` package, which `make test` installs)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import promql_parser as promql
import pytest
import requests
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from batchgate import keys
from batchgate.clock import SystemClock
from certs.authority import service_names, write_serving_files
from controller.adapters.kube import KubeClient
from controller.adapters.metrics import ControllerMetrics, ProbeServer
from controller.decisions.quota.kueue_metrics import CQ_STATUSES
from tests.controller.cluster import kubectl, started_controller
from tests.localcluster_fixtures import local_cluster  # noqa: F401  (the session's local cluster)
from tests.manifests.kustomize import ROOT, build
from tests.builders import sample
from tests.webhook.helpers import review_for
from webhook.authorization.authorizer import AuthorizationMetrics
from webhook.serving.launch import start_gateway
from webhook.serving.metrics import GatewayMetrics

pytestmark = pytest.mark.timeout(120)
ALERT_CASES = Path(__file__).with_name("monitoring_alert_cases.yaml")
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}
"""Labels the Prometheus Operator's scrape adds to every series."""
KNOWN_VALUES = {
    ("appwrapper_phase_total", "phase"): {v for k, v in vars(keys).items() if k.startswith("PHASE_")},
    ("kueue_pending_workloads", "status"): {"active", "inadmissible"},
    ("kueue_cluster_queue_status", "status"): set(CQ_STATUSES),
}
"""Label values a selector may match exactly, from the code that sets them."""


# --- what the overlay ships ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def overlay() -> list[dict[str, Any]]:
    return build("monitoring")


def dashboard_of(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap"
                    and d["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    (text,) = configmap["data"].values()
    return json.loads(text)


def rules_of(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def expressions(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(where, PromQL) for every query the overlay runs; Grafana's label_values(metric, label)
    becomes the selector `metric{label!=""}` it amounts to."""
    dashboard = dashboard_of(docs)
    out = [(f"panel {p['title']!r}", t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["query"]["query"])
            assert m, f"variable {variable['name']}: only label_values(metric, label) is expected"
            out.append((f"variable {variable['name']}", f'{m[1]}{{{m[2]}!=""}}'))
    out += [(f"alert {r['alert']}", r["expr"]) for r in rules_of(docs)]
    return out


# --- reading PromQL -----------------------------------------------------------------------------
@dataclass
class Use:
    """A metric a query selects and the labels it needs it to have."""

    where: str
    metric: str
    labels: set[str] = field(default_factory=set)
    values: dict[str, str] = field(default_factory=dict)  # exact matches


def nodes(expr: Any) -> list[Any]:
    found: list[Any] = []
    promql.walk(expr, lambda node: found.append(node))
    return found


def uses(where: str, text: str) -> list[Use]:
    for variable, value in GRAFANA_VARIABLES.items():
        text = text.replace(variable, value)
    tree = promql.parse(text)
    out: dict[str, Use] = {}  # by the selector's text: the same selector needs the same labels
    for selector in (n for n in nodes(tree) if isinstance(n, promql.VectorSelector)):
        assert selector.name, f"{where}: every selector names its metric: {text}"
        use = out.setdefault(str(selector), Use(where, selector.name))
        for matcher in selector.matchers.matchers:
            if matcher.name != "__name__":
                use.labels.add(matcher.name)
                if matcher.op == promql.MatchOp.Equal:
                    use.values[matcher.name] = matcher.value
    # Labels an aggregation groups by, or a binary operation joins on, must exist beneath it.
    for node in nodes(tree):
        if isinstance(node, promql.AggregateExpr) and node.modifier is not None:
            beneath, needed = [node.expr], set(node.modifier.labels)
        elif isinstance(node, promql.BinaryExpr) and node.modifier is not None and node.modifier.matching is not None:
            beneath, needed = [node.lhs, node.rhs], set(node.modifier.matching.labels)
        else:
            continue
        for side in beneath:
            below = [out[str(n)] for n in nodes(side) if isinstance(n, promql.VectorSelector)]
            for use in below:
                use.labels |= {label for label in needed if label not in TARGET_LABELS}
    return list(out.values())


# --- what batchgate exports ---------------------------------------------------------------------
@dataclass(frozen=True)
class Exported:
    """A metric family as scraped: its type and the label names it carries."""

    kind: str
    labels: frozenset[str]


def declared_labels(registry: CollectorRegistry) -> dict[str, set[str]]:
    """Family name -> the label names the code declares for it (prometheus_client keeps them on the
    metric object; a labelled family with no series yet shows none in a scrape)."""
    out: dict[str, set[str]] = {}
    for collector in list(registry._collector_to_names):  # noqa: SLF001 (the registry's own index)
        if hasattr(collector, "_labelnames"):
            out[collector._name] = set(collector._labelnames)  # noqa: SLF001
    return out


def exposed(text: str, declared: dict[str, set[str]]) -> dict[str, Exported]:
    """Every name a query can select, as Prometheus stores it (counter `_total`, histogram
    `_bucket`/`_sum`/`_count`), with the labels of its series or, with none, its declared ones."""
    out = {}
    for family in text_string_to_metric_families(text):
        labels = set().union(*(s.labels for s in family.samples)) if family.samples else set()
        labels |= declared.get(family.name, set())
        names = {"counter": [family.name + "_total"],
                 "histogram": [family.name + s for s in ("_bucket", "_sum", "_count")]}.get(family.type, [family.name])
        for name in names:
            out[name] = Exported(family.type, frozenset(labels | ({"le"} if name.endswith("_bucket") else set())))
    return out


@pytest.fixture(scope="module")
def controller_metrics(local_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Exported]:  # noqa: F811
    """Scraped from a real controller's /metrics, running against the local cluster."""
    kubectl(local_cluster.kubeconfig, "apply", "-k", str(ROOT / "manifests" / "crds"))
    running = started_controller(local_cluster)
    controller = next(running)
    probes = ProbeServer(controller.metrics, controller.healthy, controller.ready, "127.0.0.1", 0)
    probes.start()
    try:
        text = requests.get(f"http://127.0.0.1:{probes.port}/metrics", timeout=10).text
    finally:
        probes.stop()
        next(running, None)  # stops the controller
    return exposed(text, declared_labels(controller.metrics.registry))


@pytest.fixture(scope="module")
def gateway_metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Exported]]:
    """Scraped from a real gateway (two gunicorn workers, TLS) after it answered a review."""
    certs = tmp_path_factory.mktemp("gateway") / "certs"
    write_serving_files(certs, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    gateway = start_gateway(certs, "--workers", "2")
    try:
        with requests.Session() as session:
            session.verify, session.trust_env = str(certs / "ca.crt"), False
            base = f"https://{gateway.host}:{gateway.port}"
            obj = sample("alice/appwrapper-job.yaml")
            for endpoint in ("mutate", "validate"):
                session.post(f"{base}/{endpoint}", json=review_for(obj), timeout=10).raise_for_status()
            text = session.get(f"{base}/metrics", timeout=10).text
    finally:
        gateway.stop()
    declared = GatewayMetrics()
    AuthorizationMetrics(declared.registry)
    yield exposed(text, declared_labels(declared.registry))


# --- the tests ----------------------------------------------------------------------------------
def test_the_dashboard_ships_as_a_configmap_the_grafana_sidecar_loads(overlay: list[dict[str, Any]]) -> None:
    dashboard = dashboard_of(overlay)
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"]), "panel ids are unique"
    assert all(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in panels)
    assert all(p.get("description") and p.get("targets") for p in panels), "every panel says what it shows"
    assert dashboard["uid"] == "batchgate-overview"
    cells = [{(p["gridPos"]["x"] + dx, p["gridPos"]["y"] + dy) for dx in range(p["gridPos"]["w"])
              for dy in range(p["gridPos"]["h"])} for p in dashboard["panels"]]
    assert sum(map(len, cells)) == len(set().union(*cells)), "no panel covers another"


@pytest.mark.parametrize(("where", "metrics"), [
    pytest.param("dashboard", {"kueue_admission_wait_time_seconds_bucket", "kueue_pending_workloads",
                               "kueue_admitted_active_workloads", "kueue_cluster_queue_resource_usage",
                               "kueue_cluster_queue_nominal_quota", "kueue_evicted_workloads_total",
                               "kueue_preempted_workloads_total", "appwrapper_phase_total",
                               "batchgate_webhook_reviews_total", "batchgate_webhook_review_duration_seconds_bucket",
                               "batchgate_webhook_certificate_expiry_timestamp_seconds"},
                 id="the dashboard shows queue wait, queues, quota, evictions, AppWrappers, gateway and certificate"),
    pytest.param("alert", {"kueue_admission_wait_time_seconds_bucket", "kueue_pending_workloads",
                           "kueue_admission_attempts_total", "kueue_admitted_workloads_total",
                           "appwrapper_phase_total", "batchgate_webhook_reviews_total",
                           "batchgate_webhook_review_duration_seconds_bucket",
                           "batchgate_webhook_certificate_expiry_timestamp_seconds"},
                 id="the alerts cover queue wait, stuck admission, resets, gateway errors and latency, certificates"),
])
def test_the_overlay_covers_what_the_issue_asks_for(overlay: list[dict[str, Any]], where: str,
                                                    metrics: set[str]) -> None:
    used = {u.metric for w, text in expressions(overlay) for u in uses(w, text)
            if w.startswith("alert" if where == "alert" else ("panel", "variable"))}
    assert metrics <= used, f"not used: {sorted(metrics - used)}"


def test_every_alert_has_a_severity_and_a_runbook(overlay: list[dict[str, Any]]) -> None:
    for rule in rules_of(overlay):
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"] and len(rule["annotations"]["description"]) > 200, rule["alert"]


def test_every_metric_and_label_the_overlay_reads_is_exported(overlay: list[dict[str, Any]],
                                                              controller_metrics: dict[str, Exported],
                                                              gateway_metrics: dict[str, Exported]) -> None:
    exported = {**controller_metrics, **gateway_metrics}
    problems = []
    for where, text in expressions(overlay):
        for use in uses(where, text):
            found = exported.get(use.metric)
            if found is None:
                problems.append(f"{where}: {use.metric} is not exported")
                continue
            missing = use.labels - found.labels
            if missing:
                problems.append(f"{where}: {use.metric} has no label {sorted(missing)} (it has {sorted(found.labels)})")
            for label, value in use.values.items():
                allowed = KNOWN_VALUES.get((use.metric, label))
                if allowed is not None and value not in allowed:
                    problems.append(f"{where}: {use.metric}{{{label}={value!r}}} never happens ({sorted(allowed)})")
    assert problems == []


def test_the_check_reads_the_live_processes_not_a_list(controller_metrics: dict[str, Exported],
                                                       gateway_metrics: dict[str, Exported]) -> None:
    """The scrapes hold what the code registers: the check above cannot pass on an empty scrape."""
    declared = {name for name in declared_labels(ControllerMetrics().registry)}
    assert {n.removesuffix("_total").removesuffix("_bucket") for n in controller_metrics} >= declared
    assert gateway_metrics["batchgate_webhook_certificate_expiry_timestamp_seconds"].labels == {"certificate"}
    assert {"endpoint", "code"} <= gateway_metrics["batchgate_webhook_reviews_total"].labels


PROMTOOL = shutil.which("promtool")


def test_promtool_accepts_the_rules_and_every_alert_fires_on_its_cases(overlay: list[dict[str, Any]],
                                                                       tmp_path: Path) -> None:
    assert PROMTOOL is not None, "promtool is not installed: `make test` installs it (Debian package prometheus)"
    (rule,) = [d for d in overlay if d["kind"] == "PrometheusRule"]
    groups = rule["spec"]["groups"]
    (tmp_path / "full.yaml").write_text(yaml.safe_dump({"groups": groups}))
    check = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "full.yaml")], capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    # The unit cases compare labels; annotations (checked as templates above) are left out.
    bare = [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]} for g in groups]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": bare}))
    shutil.copy(ALERT_CASES, tmp_path / "cases.yaml")
    result = subprocess.run([PROMTOOL, "test", "rules", "cases.yaml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = yaml.safe_load(ALERT_CASES.read_text())
    tested = {t["alertname"] for case in cases["tests"] for t in case["alert_rule_test"] if t.get("exp_alerts")}
    assert tested == {r["alert"] for r in rules_of(overlay)}, "every alert has a case where it fires"
