"""The real kubectl, run as a given user of the demo cluster (one kubeconfig context per user)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KUBECTL = shutil.which("kubectl") or "kubectl"
"""The kubectl on the PATH, as a user runs it (the demo, the tests and the benchmarks all use this one)."""
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
