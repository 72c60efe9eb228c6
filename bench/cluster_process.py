"""`batchgate cluster` (or a command that prints the same ready line) in its own process, and how
the end-to-end benchmarks call it: as the admin its kubeconfig names, over its TLS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parents[1]


class ClusterProcess:
    """Started and ready (it has printed "press Ctrl-C"); `url` and `token` come from its kubeconfig,
    `ca_file` is the self-signed serving certificate it keeps in `workdir`."""

    def __init__(self, arguments: list[str], workdir: Path, kubeconfig: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.kubeconfig = kubeconfig
        self.process = subprocess.Popen([sys.executable, *arguments], stdout=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("press Ctrl-C"):
                break
        self.document = yaml.safe_load(kubeconfig.read_text())
        self.url: str = self.document["clusters"][0]["cluster"]["server"]
        self.token: str = next(u["user"]["token"] for u in self.document["users"] if u["name"] == "admin")
        self.ca_file = str(workdir / "pki" / "serving.crt")


def cluster_command(workdir: Path, kubeconfig: Path, *options: str) -> list[str]:
    """The arguments of `batchgate cluster` writing to `workdir` and `kubeconfig`."""
    return ["-m", "batchgate.cli", "cluster", "--workdir", str(workdir), "--kubeconfig", str(kubeconfig), *options]


def admin_session(token: str, ca_file: str | Path) -> requests.Session:
    """A session as the cluster's admin, trusting `ca_file`, ignoring proxy settings from the environment."""
    session = requests.Session()
    session.trust_env = False
    session.verify = str(ca_file)
    session.headers.update({"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    return session
