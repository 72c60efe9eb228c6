"""We test Deployments and Services on the running cluster: a Deployment gets a ReplicaSet and
ready pods, scaling follows, and a Service gets a cluster IP, Endpoints and an EndpointSlice."""

from __future__ import annotations

from kubernetes import client

from tests.localcluster.runtime.conftest import eventually

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        ports: [{name: http, containerPort: 8080}]
        resources: {requests: {cpu: 100m}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""


def test_a_deployment_gets_ready_pods_and_its_service_endpoints(sim_api, sim_kubectl, ns):
    sim_kubectl("apply", "-n", ns, "-f", "-", input=DEPLOYMENT)
    apps = client.AppsV1Api(sim_api)
    # A Deployment the deployment controller has not yet seen has no status.
    deployment = eventually(lambda: (d := apps.read_namespaced_deployment_status("web", ns)).status
                            and d.status.ready_replicas == 3 and d)
    assert {c.type: c.status for c in deployment.status.conditions}["Available"] == "True"
    replicasets = apps.list_namespaced_replica_set(ns).items
    assert len(replicasets) == 1 and replicasets[0].metadata.name.startswith("web-")
    pods = client.CoreV1Api(sim_api).list_namespaced_pod(ns, label_selector="app=web").items
    assert all(p.metadata.name.startswith(replicasets[0].metadata.name + "-") for p in pods)
    service = eventually(lambda: (s := client.CoreV1Api(sim_api).read_namespaced_service("web", ns)).spec.cluster_ip and s)
    assert service.spec.cluster_ip.startswith("10.96.")
    endpoints = eventually(lambda: (e := client.CoreV1Api(sim_api).read_namespaced_endpoints("web", ns)).subsets
                           and len(e.subsets[0].addresses or []) == 3 and e)
    assert sorted(a.ip for a in endpoints.subsets[0].addresses) == sorted(p.status.pod_ip for p in pods)
    assert endpoints.subsets[0].ports[0].port == 8080
    slices = client.DiscoveryV1Api(sim_api).list_namespaced_endpoint_slice(ns, label_selector="kubernetes.io/service-name=web").items
    assert len(slices) == 1 and len(slices[0].endpoints) == 3

    sim_kubectl("patch", "-n", ns, "deployment/web", "-p", '{"spec": {"replicas": 1}}')
    assert eventually(lambda: len([p for p in client.CoreV1Api(sim_api).list_namespaced_pod(ns, label_selector="app=web").items
                                   if not p.metadata.deletion_timestamp]) == 1)
    assert eventually(lambda: len(client.CoreV1Api(sim_api).read_namespaced_endpoints("web", ns).subsets[0].addresses) == 1)
