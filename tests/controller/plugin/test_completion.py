"""Shell completion: the candidates read off the argparse tree, and bash asking the installed
program for them through the script `completion bash` prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from batchgate.cli import COMMANDS
from controller.plugin.args import parser
from controller.plugin.completion import candidates
from tests.realcluster_fixtures import real_kubectl

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("words, expected", [
    pytest.param(["w"], ["webhook", "why", "wrap"], id="a first word completes among every command"),
    pytest.param(["list", "c"], ["clusterqueue", "clusterqueues", "cq"], id="list completes kueuectl's resource names"),
    pytest.param(["list", "workloads", "-o", ""], ["json", "name", "table", "wide", "yaml"],
                 id="an option's value completes among its choices"),
    pytest.param(["list", "workloads", "--status", "p"], ["pending"], id="a status completes"),
    pytest.param(["list", "workloads", "--sel"], ["--selector"], id="a flag completes"),
    pytest.param(["stop", ""], ["clusterqueue", "cq", "kwl", "localqueue", "lq", "wl", "workload"],
                 id="stop completes the kinds it stops"),
    pytest.param(["stop", "-n", "team", "cq", ""], [], id="a name is not guessed after a flag's value"),
    pytest.param(["completion", ""], ["bash", "zsh"], id="completion completes the shells"),
    pytest.param(["check", "--"], [], id="another command's words are left to its --help"),
])
def test_candidates(words: list[str], expected: list[str]) -> None:
    assert candidates(parser(), COMMANDS, words) == expected


@pytest.mark.parametrize("line, expected", [
    pytest.param(["kubectl-batchgate", "li"], "list", id="bash completes a verb"),
    pytest.param(["kubectl-batchgate", "list", "resourcef"], "resourceflavor resourceflavors", id="bash completes a resource"),
])
def test_bash_completes_through_the_installed_program(line: list[str], expected: str) -> None:
    assert (BIN / "kubectl-batchgate").exists(), "kubectl-batchgate is not installed: run make .venv/.installed"
    words = " ".join(line)
    probe = (f'source <(kubectl-batchgate completion bash); COMP_WORDS=({words}); COMP_CWORD={len(line) - 1}; '
             f'_batchgate_complete; echo "${{COMPREPLY[*]}}"')
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert (done.stdout.strip(), done.stderr) == (expected, "")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_the_zsh_script_parses() -> None:
    script = subprocess.run([sys.executable, "-m", "batchgate.cli", "completion", "zsh"], capture_output=True,
                            text=True, timeout=60, check=True).stdout
    assert subprocess.run(["zsh", "-n"], input=script, capture_output=True, text=True, timeout=60).returncode == 0


def test_kubectls_own_completion_asks_the_installed_plugin() -> None:
    """`kubectl batchgate <TAB>`: kubectl runs `kubectl_complete-batchgate WORDS` from PATH (kubectl 1.26+)."""
    done = subprocess.run([real_kubectl(), "__complete", "batchgate", "list", "c"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.stdout.splitlines() == ["clusterqueue", "clusterqueues", "cq", ":0"], done.stderr
