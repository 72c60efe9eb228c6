"""`batchgate cluster` as a user runs it: prints how to use it, serves kubectl, stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from demo.kubectl import KUBECTL

ROOT = Path(__file__).resolve().parents[2]


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "batchgate.cli", "cluster", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_cluster_command_serves_kubectl_and_exits_cleanly_on_ctrl_c_leaving_the_requests_it_recorded(
        tmp_path: Path) -> None:
    users = tmp_path / "users.yaml"
    users.write_text("users:\n- name: carol\n  username: carol@example.com\n  uid: '42'\n  groups: [ml]\n")
    kubeconfig = tmp_path / "out" / "kubeconfig"
    recorded = tmp_path / "requests.json"
    process = start("--kubeconfig", str(kubeconfig), "--users-file", str(users), "--workdir", str(tmp_path / "work"),
                    "--record-requests", str(recorded))
    try:
        lines = []
        while process.stdout is not None:
            line = process.stdout.readline()
            lines.append(line)
            if line.startswith("press Ctrl-C") or not line:
                break
        assert f"export KUBECONFIG={kubeconfig}\n" in lines, lines
        whoami = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--context", "carol", "auth",
                                 "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"],
                                capture_output=True, text=True, timeout=30)
        assert whoami.stdout == 'carol@example.com ["ml","system:authenticated"]', whoami.stderr
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "Traceback" not in err and "local cluster stopped" in out
    carols = [r for r in json.loads(recorded.read_text()) if r["user"] == "carol@example.com"]
    assert [(r["verb"], r["resource"], r["count"]) for r in carols] == [("create", "selfsubjectreviews", 1)], carols


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--speed", "0"], "--speed must be positive", id="a speed that is not positive"),
    pytest.param(["--users-file", "/nonexistent/users.yaml"], "users.yaml", id="a users file that does not exist"),
])
def test_bad_arguments_are_reported_without_a_traceback(args: list[str], message: str) -> None:
    process = start(*args)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize(("hidden", "message"), [
    pytest.param("celpy", "command 'cluster' needs the Python module 'celpy', which is not installed",
                 id="without cel-python the command names the missing module"),
    pytest.param("localcluster", "command 'cluster' is not available in this build",
                 id="without the local cluster package the command is not in this build"),
])
def test_a_missing_module_is_named_without_a_traceback(hidden: str, message: str) -> None:
    """The image installs requirements.txt only; cel-python and aiohttp come with requirements-test.txt."""
    hide = f"import sys; sys.modules[{hidden!r}] = None; from batchgate.cli import main; sys.exit(main(['cluster']))"
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
