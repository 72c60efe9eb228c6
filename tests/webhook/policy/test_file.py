"""Policy hot reload from a file: in-place rewrites and kubelet-style `..data` symlink swaps.

The watcher is tested alone (each poll driven by hand) and inside the real server, where both
gunicorn workers must pick the new policy up without a restart.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.webhook.helpers import RELOAD_TIMEOUT_SECONDS, policy_text, run_cli, wait_until_every_worker_injects
from webhook.serving.launch import RunningGateway
from webhook.policy.file import PolicyFileWatcher
from webhook.policy.store import PolicyStore



class ConfigMapVolume:
    """The layout kubelet writes for a ConfigMap volume, and its atomic update."""

    def __init__(self, root: Path):
        self.root = root
        self.generation = 0
        root.mkdir(parents=True, exist_ok=True)

    @property
    def path(self) -> Path:
        return self.root / "policy.yaml"

    def publish(self, text: str) -> None:
        self.generation += 1
        target = self.root / f"..2026_11_23_12_00_00.{self.generation}"
        target.mkdir()
        (target / "policy.yaml").write_text(text)
        tmp_link = self.root / "..data_tmp"
        tmp_link.symlink_to(target.name)
        os.replace(tmp_link, self.root / "..data")  # the atomic rename kubelet does
        if not self.path.is_symlink():
            self.path.symlink_to("..data/policy.yaml")


def queue_injected(store: PolicyStore) -> str:
    assert store.current is not None
    return store.current.policy.queues.default_queue_name


@pytest.mark.parametrize("layout", ["plain file", "configmap volume"])
def test_the_watcher_installs_each_new_valid_policy(tmp_path: Path, layout: str) -> None:
    store = PolicyStore()
    if layout == "plain file":
        path = tmp_path / "policy.yaml"
        path.write_text(policy_text("q-one"))
        publish: Callable[[str], None] = lambda text: (path.write_text(text), os.utime(path, ns=(1, time.time_ns())))
    else:
        volume = ConfigMapVolume(tmp_path / "volume")
        volume.publish(policy_text("q-one"))
        path, publish = volume.path, volume.publish
    watcher = PolicyFileWatcher(path, store)
    assert watcher.check() and queue_injected(store) == "q-one"
    assert not watcher.check(), "nothing changed, nothing reloaded"
    publish(policy_text("q-two"))
    assert watcher.check() and queue_injected(store) == "q-two"


def test_an_invalid_policy_is_rejected_and_the_last_good_one_stays(tmp_path: Path) -> None:
    volume = ConfigMapVolume(tmp_path / "volume")
    volume.publish(policy_text("q-one"))
    rejected: list[str] = []
    store = PolicyStore(on_rejected=lambda source, error: rejected.append(error))
    watcher = PolicyFileWatcher(volume.path, store)
    watcher.check()
    volume.publish("queues:\n  defaultQueueName: [not, a, name]\n")
    assert not watcher.check()
    assert queue_injected(store) == "q-one"
    assert len(rejected) == 1 and "queues.defaultQueueName" in rejected[0] and ":2:" in rejected[0]
    assert store.last_error == rejected[0]
    volume.publish(policy_text("q-three"))
    assert watcher.check() and queue_injected(store) == "q-three" and store.last_error == ""


def test_a_vanished_file_is_reported_once_and_the_policy_kept(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(policy_text("q-one"))
    rejected: list[str] = []
    store = PolicyStore(on_rejected=lambda source, error: rejected.append(error))
    watcher = PolicyFileWatcher(path, store)
    watcher.check()
    path.unlink()
    assert not watcher.check() and not watcher.check()
    assert len(rejected) == 1 and "cannot read policy file" in rejected[0]
    assert queue_injected(store) == "q-one"


def test_the_running_server_follows_rewrites_and_symlink_swaps_without_restarting(
        tmp_path: Path, cert_dir: Path, launch: Callable[..., RunningGateway]) -> None:
    volume = ConfigMapVolume(tmp_path / "volume")
    volume.publish(policy_text("q-one"))
    gateway = launch(cert_dir, "--workers", "2", "--policy-file", str(volume.path))
    wait_until_every_worker_injects(gateway, "q-one")
    volume.publish(policy_text("q-two"))
    wait_until_every_worker_injects(gateway, "q-two")
    (volume.root / "..data" / "policy.yaml").write_text(policy_text("q-three"))  # an in-place rewrite
    wait_until_every_worker_injects(gateway, "q-three")
    volume.publish("queues: {defaultQueueName: 42}\n")
    deadline = time.monotonic() + RELOAD_TIMEOUT_SECONDS
    while policy_errors_counted(gateway) < 2:  # each worker polls, sees the bad version, counts it once
        assert time.monotonic() < deadline, "a worker never reported the invalid policy"
        time.sleep(0.1)
    wait_until_every_worker_injects(gateway, "q-three")
    assert any("invalid policy" in line and "queues.defaultQueueName" in line for line in gateway.stderr_lines)
    assert sum("Booting worker" in line for line in gateway.stderr_lines) == 2, "no worker was restarted"
    time.sleep(1.5)  # more polls of the same bad file count nothing more
    assert policy_errors_counted(gateway) == 2


def policy_errors_counted(gateway: RunningGateway) -> float:
    client = gateway.client()
    _, metrics, _ = client.request("GET", "/metrics")
    client.close()
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.decode().splitlines()
               if line.startswith("batchgate_policy_errors_total{"))


def test_the_server_refuses_to_start_on_an_invalid_policy_file(tmp_path: Path, cert_dir: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("scheduling:\n  gang: maybe\n")
    result = run_cli("webhook", "--cert-dir", str(cert_dir), "--port", "0", "--policy-file", str(bad))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "scheduling.gang" in result.stderr and ":2:" in result.stderr
    assert "Traceback" not in result.stderr
