"""MPI (hostfile, mount, launcher wait) and the objects a framework job needs besides its pods."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from batchgate import keys
from tests.webhook.rules.frameworks.builders import (
    APPWRAPPER,
    JOB,
    admit,
    admitted_pods,
    appwrapper,
    env_of,
    indexed_job,
)
from batchgate.frameworks import headless_service_for, hostfile_configmap_for


def mpi_aw(**kwargs):
    return appwrapper(
        "hvd",
        indexed_job("hvd-launcher", 1, role="master"),
        indexed_job("hvd-worker", 2, role="worker"),
        framework="mpi",
        **kwargs,
    )


def components_by_kind(aw):
    return {c["template"]["kind"]: c["template"] for c in aw["spec"]["components"] if c["template"]["kind"] != "Job"}


def test_an_mpi_appwrapper_gets_a_headless_service_and_a_hostfile_configmap() -> None:
    aw = mpi_aw()
    assert admit(aw, APPWRAPPER).error is None
    extra = components_by_kind(aw)
    assert extra["Service"] == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hvd", "labels": {keys.FRAMEWORK_LABEL: "mpi"}},
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {keys.SUBDOMAIN_LABEL: "hvd"}},
    }
    assert extra["ConfigMap"]["metadata"]["name"] == "hvd-hostfile"
    assert extra["ConfigMap"]["data"] == {"hostfile": "hvd-worker-0.hvd slots=1\nhvd-worker-1.hvd slots=1\n"}


def test_slots_per_host_and_hostfile_path_come_from_the_args() -> None:
    aw = mpi_aw(args={"slotsPerHost": 8, "hostfilePath": "/opt/mpi/hosts"})
    pods = admitted_pods(aw, APPWRAPPER)
    assert components_by_kind(aw)["ConfigMap"]["data"]["hostfile"] == (
        "hvd-worker-0.hvd slots=8\nhvd-worker-1.hvd slots=8\n"
    )
    mount = pods["hvd-worker-1"]["spec"]["containers"][0]["volumeMounts"]
    assert mount == [{"name": "batchgate-mpi-hostfile", "mountPath": "/opt/mpi/hosts", "subPath": "hostfile",
                      "readOnly": True}]
    assert env_of(pods["hvd-worker-1"]) == {"OMPI_MCA_orte_default_hostfile": "/opt/mpi/hosts"}


def test_components_the_user_already_wrote_are_not_added_twice() -> None:
    aw = mpi_aw()
    aw["spec"]["components"].append({"template": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hvd"}}})
    aw["spec"]["components"].append(
        {"template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hvd-hostfile"}, "data": {}}}
    )
    assert admit(aw, APPWRAPPER).error is None
    assert [c["template"]["kind"] for c in aw["spec"]["components"]] == ["Job", "Job", "Service", "ConfigMap"]


def test_a_pytorch_appwrapper_gets_a_service_but_no_hostfile() -> None:
    aw = appwrapper("t", indexed_job("t-a", 1, role="master"), indexed_job("t-b", 1), framework="pytorch")
    assert admit(aw, APPWRAPPER).error is None
    assert sorted(components_by_kind(aw)) == ["Service"]


def test_every_mpi_pod_mounts_the_hostfile_and_only_the_launcher_waits_for_the_workers() -> None:
    pods = admitted_pods(mpi_aw(), APPWRAPPER)
    for pod in pods.values():
        assert pod["spec"]["volumes"] == [{"name": "batchgate-mpi-hostfile", "configMap": {"name": "hvd-hostfile"}}]
        assert env_of(pod) == {"OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile"}
    init = pods["hvd-launcher-0"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["wait-for-workers"]
    assert init[0]["image"] == "busybox:1.36.1"
    assert "hvd-worker-0.hvd hvd-worker-1.hvd" in init[0]["command"][2]
    assert "initContainers" not in pods["hvd-worker-0"]["spec"]


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
@pytest.mark.parametrize(
    "resolvable, timeout, exit_code",
    [
        pytest.param("hvd-worker-0.hvd hvd-worker-1.hvd", 30, 0, id="the launcher starts once every worker resolves"),
        pytest.param("hvd-worker-0.hvd", 1, 1, id="the launcher fails after the timeout when a worker never resolves"),
    ],
)
def test_the_wait_script_runs_in_a_real_shell(tmp_path, resolvable: str, timeout: int, exit_code: int) -> None:
    """Run the init container's script with an `nslookup` that knows only some names, and `sleep` fast."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nslookup").write_text(f'#!/bin/sh\nfor h in {resolvable}; do [ "$h" = "$1" ] && exit 0; done\nexit 1\n')
    (fake / "sleep").write_text("#!/bin/sh\nexec /bin/sleep 0.2\n")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    pods = admitted_pods(mpi_aw(args={"waitTimeoutSeconds": timeout}), APPWRAPPER)
    command = pods["hvd-launcher-0"]["spec"]["initContainers"][0]["command"]
    done = subprocess.run(command, env={"PATH": f"{fake}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=20)
    assert done.returncode == exit_code, done.stderr
    if exit_code:
        assert "timed out after 1s waiting for hvd-worker-1.hvd" in done.stderr


def test_the_controller_builds_a_top_level_jobs_service_and_hostfile_owned_by_the_job() -> None:
    job = indexed_job("solver", 3, framework="mpi")
    job["metadata"]["uid"] = "uid-1"
    assert admit(job, JOB).error is None
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "solver", "uid": "uid-1", "controller": True,
             "blockOwnerDeletion": True}
    service = headless_service_for(job)
    assert service["metadata"] == {"name": "solver", "labels": {keys.FRAMEWORK_LABEL: "mpi"}, "namespace": "team1",
                                   "ownerReferences": [owner]}
    assert service["spec"]["selector"] == {keys.SUBDOMAIN_LABEL: "solver"}
    configmap = hostfile_configmap_for(job)
    assert configmap["metadata"]["ownerReferences"] == [owner]
    assert configmap["data"]["hostfile"] == "solver-1.solver slots=1\nsolver-2.solver slots=1\n"


def test_a_job_without_a_framework_needs_no_service() -> None:
    job = indexed_job("plain", 3)
    assert headless_service_for(job) is None
    assert hostfile_configmap_for(job) is None


def test_a_pytorch_job_needs_a_service_but_no_hostfile() -> None:
    job = indexed_job("t", 2, framework="pytorch")
    admit(job, JOB)
    assert headless_service_for(job) is not None
    assert hostfile_configmap_for(job) is None
