"""We deploy a run image's repository under a tag the local registry does not hold (a kustomize
`images:` typo) and watch what a user would: `kubectl get pod` shows ErrImagePull then
ImagePullBackOff, `kubectl describe pod` the kubelet's Events, the real client the waiting state
and conditions; `kubectl set image` to the run image then brings up a running pod."""

from __future__ import annotations

import json

from kubernetes import client as k8s

from tests.localcluster.processes.conftest import IMAGE
from tests.localcluster.processes.test_process_pods import python
from tests.localcluster.runtime.conftest import eventually

TYPO = IMAGE.split(":")[0] + ":typo"


def only_pod(proc_api, namespace: str):
    pods = [p for p in k8s.CoreV1Api(proc_api).list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp]
    return pods[0] if len(pods) == 1 else None


def _backing_off(pod):
    """`pod` while its container waits in ImagePullBackOff, else None."""
    statuses = pod.status.container_statuses if pod is not None else None
    waiting = statuses[0].state.waiting if statuses else None
    return pod if waiting is not None and waiting.reason == "ImagePullBackOff" else None


def test_an_image_the_registry_lacks_waits_in_image_pull_back_off_until_the_image_is_fixed(pk, proc_api, pns):
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": pns},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "app"}},
                       "template": {"metadata": {"labels": {"app": "app"}}, "spec": {
                           "terminationGracePeriodSeconds": 1,
                           "containers": [{"name": "main", "image": TYPO,
                                           "command": python("import time; time.sleep(600)")}]}}}}
    pk("apply", "-f", "-", input=json.dumps(deploy))

    eventually(lambda: " ErrImagePull " in pk("get", "pods", "-n", pns, "--no-headers").stdout, timeout=60)
    eventually(lambda: " ImagePullBackOff " in pk("get", "pods", "-n", pns, "--no-headers").stdout, timeout=60)
    # read in back-off: once it ends the kubelet pulls again and shows ErrImagePull, as a real one does
    bad = eventually(lambda: _backing_off(only_pod(proc_api, pns)), timeout=60)
    assert bad.status.phase == "Pending"
    waiting = bad.status.container_statuses[0].state.waiting
    assert (waiting.reason, waiting.message) == ("ImagePullBackOff", f'Back-off pulling image "{TYPO}"')
    conditions = {c.type: c.status for c in bad.status.conditions}
    assert conditions["Ready"] == conditions["ContainersReady"] == "False"
    described = pk("describe", "pod", "-n", pns, bad.metadata.name).stdout
    for line in (f'Pulling image "{TYPO}"', f'Failed to pull image "{TYPO}": ', "not found", "Error: ErrImagePull",
                 f'Back-off pulling image "{TYPO}"', "Error: ImagePullBackOff"):
        assert line in described, line

    pk("set", "image", "-n", pns, "deployment/app", f"main={IMAGE}")
    eventually(lambda: (p := only_pod(proc_api, pns)) is not None and p.metadata.name != bad.metadata.name
               and p.status.phase == "Running", timeout=60)
