"""helm as the chart's tests run it: the binary built with the control plane, with its caches
and configuration in a directory of the test's (never ~/.cache/helm), and optionally a cluster."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[1] / "charts" / "batchgate"
RELEASE = "batchgate"
HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")
HELM_ANNOTATIONS = ("helm.sh/resource-policy",)
CALL_TIMEOUT_SECONDS = 180.0


@dataclass(frozen=True)
class Helm:
    binary: str
    home: Path
    kubeconfig: Path | None = None
    context: str = "admin"

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {f"HELM_{name}_HOME": str(self.home / name.lower()) for name in ("CACHE", "CONFIG", "DATA")}
        env["HOME"] = str(self.home)  # its discovery cache (~/.kube/cache) too: never the user's or the checkout's
        cluster = ["--kubeconfig", str(self.kubeconfig), "--kube-context", self.context] if self.kubeconfig else []
        done = subprocess.run([self.binary, *args, *cluster], capture_output=True, text=True,
                              timeout=CALL_TIMEOUT_SECONDS, env={"PATH": "/usr/bin:/bin", **env})
        if check and done.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def template(self, *args: str) -> list[dict[str, Any]]:
        """The chart's objects as `helm template` renders them with these value flags."""
        out = self.run("template", RELEASE, str(CHART), *args).stdout
        return [d for d in yaml.safe_load_all(out) if d]


def without_helm_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` less the labels and annotations the chart adds for helm (what kustomize never writes)."""
    meta = dict(obj["metadata"])
    for field, names in (("labels", HELM_LABELS), ("annotations", HELM_ANNOTATIONS)):
        kept = {k: v for k, v in meta.get(field, {}).items() if k not in names}
        meta.pop(field, None)
        if kept:
            meta[field] = kept
    return {**obj, "metadata": meta}
