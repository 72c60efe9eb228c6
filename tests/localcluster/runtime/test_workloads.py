"""We test Deployment -> ReplicaSet -> pods and Service endpoints (Endpoints and EndpointSlices,
ready and not-ready pods, named target ports, headless services, cluster IP allocation)."""

from __future__ import annotations

import pytest

from localcluster.sim.endpoints import allocate_cluster_ip, endpoint_slice_for, endpoints_for
from localcluster.sim.replicasets import HASH_LABEL, reconcile_deployment, reconcile_replicaset, template_hash
from tests.localcluster.runtime.builders import a_container, a_pod

TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}


def deployment(replicas=3, template=TEMPLATE):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template}}


def test_a_deployment_creates_its_replicaset_named_by_template_hash():
    step = reconcile_deployment(deployment(), [])
    rs = step.create
    digest = template_hash(TEMPLATE)
    assert rs["metadata"]["name"] == f"web-{digest}"
    assert rs["spec"]["replicas"] == 3
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", HASH_LABEL: digest}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == "d-uid"


CHANGED = {**TEMPLATE, "spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}


def rs_at(template, name, replicas, available, created):
    rs = reconcile_deployment(deployment(template=template), []).create
    rs["metadata"].update(uid=name, creationTimestamp=created)
    rs["spec"]["replicas"] = replicas
    rs["status"] = {"availableReplicas": available}
    return rs


def test_a_recreate_deployment_scales_the_old_replicaset_to_zero_at_once():
    old = rs_at(TEMPLATE, "rs-old", 3, 3, "t1")
    changed = deployment(template=CHANGED)
    changed["spec"]["strategy"] = {"type": "Recreate"}
    step = reconcile_deployment(changed, [old])
    assert step.create["spec"]["replicas"] == 3 and step.scale == {old["metadata"]["name"]: 0}


@pytest.mark.parametrize(("rolling", "new", "old", "expected_new", "expected_old"), [
    pytest.param({"maxUnavailable": 0, "maxSurge": 1}, None, (2, 2), 1, 2,
                 id="the new replicaset starts with the surge and the old one keeps every pod"),
    pytest.param({"maxUnavailable": 0, "maxSurge": 1}, (1, 0), (2, 2), 1, 2,
                 id="nothing old goes while the surge pod is not available"),
    pytest.param({"maxUnavailable": 0, "maxSurge": 1}, (1, 1), (2, 2), 1, 1,
                 id="one old pod goes once the surge pod is available"),
    pytest.param({"maxUnavailable": 0, "maxSurge": 1}, (1, 1), (1, 1), 2, 1,
                 id="the new replicaset grows into the room the old pod left"),
    pytest.param({"maxUnavailable": 0, "maxSurge": 1}, (2, 2), (1, 1), 2, 0,
                 id="the last old pod goes when the new ones are all available"),
    pytest.param({"maxUnavailable": 0, "maxSurge": 1}, (1, 1), (2, 1), 1, 1,
                 id="an old pod that is not available goes first"),
    pytest.param({}, None, (4, 4), 1, 4, id="the default surge is a quarter, rounded up"),
    pytest.param({"maxUnavailable": 0, "maxSurge": 0}, (0, 0), (2, 2), 0, 1,
                 id="no surge and no unavailability still lets one pod go"),
])
def test_a_rolling_update_keeps_availability_within_its_limits(rolling, new, old, expected_new, expected_old):
    replicas = 4 if old == (4, 4) else 2
    changed = deployment(replicas, template=CHANGED)
    changed["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    owned = [rs_at(TEMPLATE, "rs-old", *old, "t1")]
    if new is not None:
        owned.append(rs_at(CHANGED, "rs-new", *new, "t2"))
    step = reconcile_deployment(changed, owned)
    new_name = f"web-{template_hash(CHANGED)}"
    got_new = step.create["spec"]["replicas"] if step.create else step.scale.get(new_name, new[0])
    assert got_new == expected_new
    assert step.scale.get(owned[0]["metadata"]["name"], old[0]) == expected_old


def replicaset(replicas):
    rs = reconcile_deployment(deployment(replicas), []).create
    rs["metadata"]["uid"] = "rs-uid"
    return rs


def owned_pod(name, ready=True):
    pod = a_pod(name, labels={"app": "web"}, phase="Running")
    pod["metadata"]["ownerReferences"] = [{"uid": "rs-uid", "controller": True}]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return pod


@pytest.mark.parametrize(
    ("replicas", "pods", "creates", "deletes"),
    [
        pytest.param(3, [], 3, [], id="missing pods are created"),
        pytest.param(1, [owned_pod("a"), owned_pod("b", ready=False)], 0, ["b"], id="surplus pods go, not ready first"),
        pytest.param(2, [owned_pod("a"), owned_pod("b")], 0, [], id="the right count is left alone"),
    ],
)
def test_a_replicaset_keeps_its_replica_count(replicas, pods, creates, deletes):
    step = reconcile_replicaset(replicaset(replicas), pods)
    assert (len(step.creates), step.deletes) == (creates, deletes)
    if step.creates:
        assert step.creates[0]["metadata"]["generateName"].startswith("web-")


def service(**spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default", "uid": "s-uid"},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}], **spec}}


def serving(name, ip, ready=True):
    pod = a_pod(name, labels={"app": "web"}, phase="Running", node="n1",
                containers=[a_container("web", ports=[{"name": "http", "containerPort": 8080}])])
    pod["status"].update(podIP=ip, conditions=[{"type": "Ready", "status": "True" if ready else "False"}])
    return pod


def test_endpoints_list_ready_and_not_ready_pods_with_resolved_ports():
    pods = [serving("a", "10.1.0.2"), serving("b", "10.1.0.3", ready=False), a_pod("other", labels={"app": "db"})]
    subsets = endpoints_for(service(), pods)["subsets"]
    assert [a["ip"] for a in subsets[0]["addresses"]] == ["10.1.0.2"]
    assert [a["ip"] for a in subsets[0]["notReadyAddresses"]] == ["10.1.0.3"]
    assert subsets[0]["ports"] == [{"port": 8080, "protocol": "TCP", "name": "http"}]


def test_endpoint_slices_mirror_the_endpoints():
    slice_ = endpoint_slice_for(service(clusterIP="None"), [serving("a", "10.1.0.2"), serving("b", "10.1.0.3", ready=False)])
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
    assert [(e["addresses"][0], e["conditions"]["ready"]) for e in slice_["endpoints"]] == [("10.1.0.2", True), ("10.1.0.3", False)]


def test_a_service_without_selector_gets_no_endpoints():
    assert endpoints_for(service(selector=None), [serving("a", "10.1.0.2")])["subsets"] == []


def test_cluster_ips_are_allocated_from_the_service_range_without_reuse():
    assert allocate_cluster_ip([]) == "10.96.0.2"
    assert allocate_cluster_ip(["10.96.0.2", "10.96.0.3"]) == "10.96.0.4"
