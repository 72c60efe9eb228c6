"""We run tiny fixture commands as process pods and check what a container would see and how
the kubelet treats it: env and $(VAR), volumes and in-place Secret updates, FailedMount and
CreateContainerConfigError, probes failing and recovering, crash-loop backoff, graceful
deletion order, kubectl logs (--previous, -c, --tail, deploy/NAME), the in-cluster client, and
the program, its interpreter and its packages staying visible under a volume mounted above them."""

from __future__ import annotations

import json
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client as k8s

from tests.localcluster.processes.conftest import IMAGE
from tests.localcluster.runtime.conftest import eventually
from tests.localcluster_fixtures import repo_root

PY = sys.executable


def python(script: str) -> list[str]:
    return [PY, "-u", "-c", textwrap.dedent(script)]


def a_pod(name: str, namespace: str, command: list[str], **spec) -> dict:
    container = {"name": spec.pop("container_name", "main"), "image": IMAGE, "command": command,
                 **spec.pop("container", {})}
    containers = [container, *spec.pop("containers_extra", [])]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {"containers": containers, "terminationGracePeriodSeconds": 5, **spec}}


def apply(pk, obj: dict) -> None:
    pk("apply", "-f", "-", input=json.dumps(obj))


def pod(proc_api, namespace: str, name: str):
    return k8s.CoreV1Api(proc_api).read_namespaced_pod(name, namespace)


def logs(pk, namespace: str, *args: str) -> str:
    return pk("logs", "-n", namespace, *args, check=False).stdout


def events(pk, namespace: str) -> str:
    return pk("get", "events", "-n", namespace, "-o", "custom-columns=REASON:.reason,MESSAGE:.message").stdout


def test_a_process_sees_env_volumes_and_the_service_account_as_in_a_container(pk, proc_api, pns):
    pk("create", "configmap", "cfg", "-n", pns, "--from-literal=mode=fast")
    pk("create", "secret", "generic", "creds", "-n", pns, "--from-literal=password=s3cret")
    apply(pk, a_pod("env", pns, python("""
        import os, pathlib
        print("ip", os.environ["POD_IP"], os.environ["GREETING"], os.environ["CFG_mode"])
        print("secret", pathlib.Path("/tmp/lc-pods/creds/password").read_text())
        print("downward", pathlib.Path("/tmp/lc-pods/info/labels").read_text())
        print("cwd", os.getcwd())
        from kubernetes import client, config
        config.load_incluster_config()
        review = client.AuthenticationV1Api().create_self_subject_review({"apiVersion": "authentication.k8s.io/v1",
                                                                         "kind": "SelfSubjectReview"})
        print("whoami", review.status.user_info.username, sorted(review.status.user_info.groups))
        import time; time.sleep(60)
        """), container={
            "workingDir": "/tmp/pp-workdir",
            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "GREETING", "value": "hello-$(POD_IP)-$$(POD_IP)"}],
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
            "volumeMounts": [{"name": "creds", "mountPath": "/tmp/lc-pods/creds"}, {"name": "info", "mountPath": "/tmp/lc-pods/info"}]},
        volumes=[{"name": "creds", "secret": {"secretName": "creds"}},
                 {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]))
    def finished() -> str:
        text = logs(pk, pns, "env")
        assert "whoami" in text, text + events(pk, pns)
        return text

    out = eventually(finished, timeout=60)
    ip = pod(proc_api, pns, "env").status.pod_ip
    assert ip.startswith("127.")
    assert f"ip {ip} hello-{ip}-$(POD_IP) fast" in out
    assert "secret s3cret" in out and 'downward app="env"' in out and "cwd /tmp/pp-workdir" in out
    assert (f"whoami system:serviceaccount:{pns}:default ['system:authenticated', 'system:serviceaccounts', "
            f"'system:serviceaccounts:{pns}']") in out


def test_a_secret_change_reaches_the_running_process_in_place(pk, pns):
    pk("create", "secret", "generic", "rotating", "-n", pns, "--from-literal=value=one")
    apply(pk, a_pod("watcher", pns, python("""
        import pathlib, time
        seen = None
        while True:
            now = pathlib.Path("/tmp/lc-pods/data/value").read_text()
            if now != seen:
                print("value", now, flush=True); seen = now
            time.sleep(0.1)
        """), container={"volumeMounts": [{"name": "s", "mountPath": "/tmp/lc-pods/data"}]},
        volumes=[{"name": "s", "secret": {"secretName": "rotating"}}]))
    eventually(lambda: "value one" in logs(pk, pns, "watcher"), timeout=60)
    pk("patch", "secret", "rotating", "-n", pns, "-p", json.dumps({"stringData": {"value": "two"}}))
    eventually(lambda: "value two" in logs(pk, pns, "watcher"), timeout=30)
    assert pk("get", "pod", "watcher", "-n", pns, "-o", "jsonpath={.status.containerStatuses[0].restartCount}").stdout == "0"


def test_a_missing_secret_holds_the_pod_in_container_creating_until_it_exists(pk, proc_api, pns):
    apply(pk, a_pod("waiting", pns, python("print('up'); import time; time.sleep(60)"),
                    container={"volumeMounts": [{"name": "s", "mountPath": "/certs"}]},
                    volumes=[{"name": "s", "secret": {"secretName": "later"}}]))
    eventually(lambda: 'MountVolume.SetUp failed for volume "s" : secret "later" not found' in events(pk, pns), timeout=30)
    state = pod(proc_api, pns, "waiting").status
    assert state.phase == "Pending" and state.container_statuses[0].state.waiting.reason == "ContainerCreating"
    pk("create", "secret", "generic", "later", "-n", pns, "--from-literal=k=v")
    eventually(lambda: pod(proc_api, pns, "waiting").status.phase == "Running", timeout=30)


def test_an_env_reference_to_a_missing_key_is_create_container_config_error(pk, proc_api, pns):
    pk("create", "configmap", "partial", "-n", pns, "--from-literal=a=1")
    apply(pk, a_pod("badenv", pns, ["true"], container={"env": [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "partial", "key": "b"}}}]}))

    def waiting():
        statuses = pod(proc_api, pns, "badenv").status.container_statuses or []
        return statuses and statuses[0].state.waiting and statuses[0].state.waiting

    state = eventually(lambda: (w := waiting()) and w.reason == "CreateContainerConfigError" and w, timeout=30)
    assert state.message == f"couldn't find key b in ConfigMap {pns}/partial"


def _covering_dirs() -> list:
    """Directories whose emptyDir would hide the program: the checkout's parent (a clone under /tmp
    with an emptyDir at /tmp), and the interpreter install's parent where that is not `/`."""
    found = [pytest.param(repo_root().parent, id="an emptyDir above the checkout and its virtualenv")]
    base = Path(sys.base_prefix).resolve()
    if base.parent != Path("/"):
        found.append(pytest.param(base.parent, id="an emptyDir above the interpreter's install"))
    return found


@pytest.mark.parametrize("covering", _covering_dirs())
def test_a_volume_above_the_program_hides_none_of_it(pk, proc_api, pns, covering: Path):
    mount = {"volumeMounts": [{"name": "scratch", "mountPath": str(covering)}]}
    scratch = {"name": "scratch", "emptyDir": {}}
    entry = {"name": "entry", "image": IMAGE, "args": ["--help"], **mount}  # the checkout's `batchgate`
    script = python(f"""
        import os, pathlib, localcluster
        pathlib.Path({str(covering / "written-in-the-pod")!r}).write_text("x")
        print("imports from", pathlib.Path(localcluster.__file__).parent.parent, "sees", sorted(os.listdir({str(covering)!r})))
    """)
    apply(pk, a_pod("covered", pns, script, container=mount, containers_extra=[entry], volumes=[scratch],
                    restartPolicy="Never"))
    eventually(lambda: pod(proc_api, pns, "covered").status.phase in ("Succeeded", "Failed"), timeout=60)
    said = logs(pk, pns, "covered", "-c", "entry"), logs(pk, pns, "covered", "-c", "main")
    assert pod(proc_api, pns, "covered").status.phase == "Succeeded", said
    assert said[0].startswith("usage: batchgate <command>")
    assert said[1].startswith(f"imports from {repo_root()} sees ") and "'written-in-the-pod'" in said[1]
    assert not (covering / "written-in-the-pod").exists(), "the emptyDir must cover the host's directory"


def test_a_crashing_command_backs_off_and_its_previous_logs_stay(pk, proc_api, pns):
    apply(pk, a_pod("crash", pns, python("import sys; print('attempt'); sys.exit(3)")))

    def looping():
        cs = (pod(proc_api, pns, "crash").status.container_statuses or [None])[0]
        return cs and cs.restart_count >= 2 and cs.state.waiting and cs.state.waiting.reason == "CrashLoopBackOff" and cs

    cs = eventually(looping, timeout=60)
    assert cs.last_state.terminated.exit_code == 3 and cs.last_state.terminated.reason == "Error"
    assert logs(pk, pns, "crash", "--previous") == "attempt\n"
    assert "Back-off restarting failed container main" in events(pk, pns)


def test_an_entry_point_that_does_not_exist_is_an_error_not_a_hang(pk, proc_api, pns):
    apply(pk, a_pod("noexec", pns, ["no-such-program"], restartPolicy="Never"))
    eventually(lambda: pod(proc_api, pns, "noexec").status.phase == "Failed", timeout=30)
    terminated = pod(proc_api, pns, "noexec").status.container_statuses[0].state.terminated
    assert terminated.exit_code == 128
    assert 'exec: "no-such-program": executable file not found in $PATH' in logs(pk, pns, "noexec")


def test_probes_drive_readiness_and_a_failed_liveness_probe_restarts(pk, proc_api, proc_cluster, pns):
    apply(pk, a_pod("probed", pns, python("import time; time.sleep(600)"), container={
        "volumeMounts": [{"name": "scratch", "mountPath": "/tmp/lc-pods/scratch"}],
        "readinessProbe": {"exec": {"command": ["test", "-e", "/tmp/lc-pods/scratch/ready"]}, "periodSeconds": 1,
                           "failureThreshold": 1},
        "livenessProbe": {"tcpSocket": {"port": 1}, "initialDelaySeconds": 30, "periodSeconds": 1,
                          "failureThreshold": 2}},
        volumes=[{"name": "scratch", "emptyDir": {}}]))
    uid = eventually(lambda: pod(proc_api, pns, "probed").status.phase == "Running" and
                     pod(proc_api, pns, "probed").metadata.uid, timeout=30)
    ready = lambda: pod(proc_api, pns, "probed").status.container_statuses[0].ready  # noqa: E731
    assert not ready()
    flag = proc_cluster.workdir / "kubelet" / "pods" / uid / "volumes" / "scratch" / "ready"
    flag.touch()
    eventually(ready, timeout=30)
    flag.unlink()
    eventually(lambda: not ready(), timeout=30)
    eventually(lambda: pod(proc_api, pns, "probed").status.container_statuses[0].restart_count >= 1, timeout=60)
    text = events(pk, pns)
    assert "Readiness probe failed" in text and "Liveness probe failed: dial tcp 127.1." in text
    assert ":1: connect: connection refused" in text
    assert "Container main failed liveness probe, will be restarted" in text


def test_graceful_deletion_runs_pre_stop_then_sigterm_and_the_pod_goes_after_the_process(pk, proc_api, proc_cluster, pns):
    apply(pk, a_pod("graceful", pns, python("""
        import signal, sys, time
        def bye(*_):
            open("/tmp/lc-pods/scratch/order", "a").write("term\\n"); time.sleep(0.5); sys.exit(0)
        signal.signal(signal.SIGTERM, bye)
        print("serving", flush=True)
        while True: time.sleep(0.1)
        """), container={"volumeMounts": [{"name": "scratch", "mountPath": "/tmp/lc-pods/scratch"}],
                         "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo prestop >> /tmp/lc-pods/scratch/order"]}}}},
        volumes=[{"name": "scratch", "emptyDir": {}}]))
    eventually(lambda: "serving" in logs(pk, pns, "graceful"), timeout=30)
    uid = pod(proc_api, pns, "graceful").metadata.uid
    pk("delete", "pod", "graceful", "-n", pns)
    order = proc_cluster.workdir / "kubelet" / "pods" / uid / "volumes" / "scratch" / "order"
    assert order.read_text() == "prestop\nterm\n"
    assert "Stopping container main" in events(pk, pns)


def test_kubectl_logs_by_container_tail_and_deployment(pk, pns):
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "talker", "namespace": pns},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "talker"}},
                       "template": {"metadata": {"labels": {"app": "talker"}}, "spec": {"containers": [
                           {"name": "one", "image": IMAGE, "command": python("print('1a\\n1b\\n1c'); import time; time.sleep(600)")},
                           {"name": "two", "image": IMAGE, "command": python("print('two'); import time; time.sleep(600)")}]}}}}
    apply(pk, deploy)
    eventually(lambda: "1c" in logs(pk, pns, "deploy/talker", "-c", "one"), timeout=60)
    assert logs(pk, pns, "deploy/talker", "-c", "one", "--tail", "2") == "1b\n1c\n"
    assert logs(pk, pns, "deploy/talker", "-c", "two") == "two\n"


def test_follow_streams_until_the_container_ends(pk, pns):
    apply(pk, a_pod("short", pns, python("import time\nfor i in range(3):\n print(i, flush=True); time.sleep(0.3)"),
                    restartPolicy="Never"))
    eventually(lambda: "0" in logs(pk, pns, "short"), timeout=30)
    assert pk("logs", "-n", pns, "short", "-f", timeout=30).stdout == "0\n1\n2\n"


def test_service_account_token_files_are_left_out_when_automount_is_off(pk, pns):
    apply(pk, a_pod("notoken", pns, python(
        "import os; print(os.path.exists('/var/run/secrets/kubernetes.io/serviceaccount/token'))"),
        restartPolicy="Never", automountServiceAccountToken=False))
    eventually(lambda: logs(pk, pns, "notoken") == "False\n", timeout=30)


def test_processes_stop_with_the_cluster(tmp_path):
    from localcluster.controllers import DEFAULT_CONTROLLERS
    from localcluster.runner import LocalCluster
    from localcluster.sim.nodes import nodes_from_flags
    from tests.localcluster_fixtures import api_client

    pidfile = tmp_path / "pid"
    with LocalCluster(tmp_path / "c", controllers=DEFAULT_CONTROLLERS, nodes=nodes_from_flags(1, "4", "8Gi", 0),
                      run_images=[IMAGE]) as cluster, api_client(cluster) as api:
        body = a_pod("sleeper", "default", python(f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(600)"))
        k8s.CoreV1Api(api).create_namespaced_pod("default", body)
        eventually(lambda: pidfile.exists() and pidfile.read_text(), timeout=60)
        pid = int(pidfile.read_text())
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text().lower()


def test_draining_the_node_stops_the_process_as_eviction_does(pk, proc_api, pns, tmp_path):
    pidfile = tmp_path / "pid"
    apply(pk, a_pod("drained", pns, python(f"""
        import os, time
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        time.sleep(600)
        """)))
    pid = int(eventually(lambda: pidfile.exists() and pidfile.read_text(), timeout=30))
    node = pod(proc_api, pns, "drained").spec.node_name
    try:
        pk("drain", node, "--force", "--ignore-daemonsets", "--delete-emptydir-data", "--pod-selector", "app=drained",
           "--timeout=60s")
        assert pk("get", "pod", "drained", "-n", pns, "--ignore-not-found", "-o", "name").stdout == ""
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "zombie" in status.read_text().lower()
    finally:
        pk("uncordon", node)


def test_two_pods_serving_on_the_wildcard_address_and_one_port_are_each_reached_at_their_pod_ip(pk, proc_api, pns):
    server = python("""
        import os
        from http.server import BaseHTTPRequestHandler, HTTPServer
        class Hello(BaseHTTPRequestHandler):
            def do_GET(self):
                body = os.environ["HOSTNAME"].encode()
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
        HTTPServer(("0.0.0.0", 8080), Hello).serve_forever()
        """)
    for name in ("web-a", "web-b"):
        apply(pk, a_pod(name, pns, server, container={"readinessProbe": {"httpGet": {"path": "/", "port": 8080},
                                                                         "periodSeconds": 1}}))
    for name in ("web-a", "web-b"):
        eventually(lambda: pod(proc_api, pns, name).status.container_statuses and
                   pod(proc_api, pns, name).status.container_statuses[0].ready, timeout=30)
        ip = pod(proc_api, pns, name).status.pod_ip
        with urllib.request.urlopen(f"http://{ip}:8080/", timeout=10) as reply:
            assert reply.read().decode() == name


def test_a_process_that_ignores_sigterm_is_killed_when_the_grace_period_ends(pk, proc_api, pns, tmp_path):
    pidfile = tmp_path / "pid"
    apply(pk, a_pod("stubborn", pns, python(f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        while True: time.sleep(0.1)
        """), terminationGracePeriodSeconds=10))
    pid = int(eventually(lambda: pidfile.exists() and pidfile.read_text(), timeout=30))
    pk("delete", "pod", "stubborn", "-n", pns, "--timeout=60s")  # 10 s of grace at 10x speed: one second
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text().lower()


def test_a_sub_path_mounts_one_key_as_a_file_and_a_projected_token_has_its_audience(pk, proc_cluster, pns):
    pk("create", "configmap", "one", "-n", pns, "--from-literal=app.yaml=port: 80")
    apply(pk, a_pod("subpath", pns, python("""
        import base64, json, pathlib
        print(pathlib.Path("/tmp/lc-pods/sub/app.yaml").read_text())
        token = pathlib.Path("/tmp/lc-pods/vault/token").read_text()
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        print(claims["aud"], claims["kubernetes.io"]["pod"]["name"])
        """), restartPolicy="Never", container={"volumeMounts": [
            {"name": "cfg", "mountPath": "/tmp/lc-pods/sub/app.yaml", "subPath": "app.yaml"},
            {"name": "vault", "mountPath": "/tmp/lc-pods/vault"}]},
        volumes=[{"name": "cfg", "configMap": {"name": "one"}},
                 {"name": "vault", "projected": {"sources": [{"serviceAccountToken": {
                     "path": "token", "audience": "vault", "expirationSeconds": 600}}]}}]))
    eventually(lambda: logs(pk, pns, "subpath") == "port: 80\n['vault'] subpath\n", timeout=30)
