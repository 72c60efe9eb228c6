"""The shipped webhook manifests as the cluster would get them: built by the real `kubectl kustomize`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def build(directory: str) -> list[dict[str, Any]]:
    """`kubectl kustomize manifests/<directory>`, as documents."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl must be installed"
    out = subprocess.run([kubectl, "kustomize", str(ROOT / "manifests" / directory)],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def webhook_documents() -> list[dict[str, Any]]:
    return build("webhook")
