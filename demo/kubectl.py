"""The real kubectl, run as a given user of the demo cluster (one kubeconfig context per user)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any



def _kubectl() -> str:
    """The kubectl on the PATH, as a user runs it; on a machine without one, the kubectl that
    `make` built with the real control plane (realcluster/), else the bare name (its error says so)."""
    from realcluster import toolchain

    on_path = shutil.which("kubectl")
    if on_path:
        return on_path
    built = toolchain.locate()
    return str(built["kubectl"]) if built else "kubectl"


KUBECTL = _kubectl()
"""The kubectl the demo, the tests and the benchmarks run on the stand-in (on the real control
plane they run the kubectl of its release: tests/clusters.py)."""
CALL_TIMEOUT_SECONDS = 60.0


class KubectlError(RuntimeError):
    """kubectl exited non-zero where the demo needed it to succeed; carries what it printed."""


@dataclass(frozen=True)
class Kubectl:
    kubeconfig: Path
    binary: str = KUBECTL

    def run(self, *args: str, user: str = "admin", stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [self.binary, "--kubeconfig", str(self.kubeconfig), "--context", user, *args]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=CALL_TIMEOUT_SECONDS)
        if check and done.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} (as {user}) failed: {done.stderr.strip()}")
        return done

    def get_json(self, *args: str, user: str = "admin") -> dict[str, Any]:
        return json.loads(self.run("get", *args, "-o", "json", user=user).stdout)
