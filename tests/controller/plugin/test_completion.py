"""Shell completion: the candidates read off the argparse tree, which list object names come from,
and bash and kubectl asking the installed program for them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from batchgate.cli import COMMANDS
from controller.plugin.args import Connection, parser
from controller.plugin.completion import NO_FILE_COMP, NO_SPACE, Completion, Names, answer, complete, completable
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
    pytest.param(["stop", "wl", "w", "-o", ""], ["json", "name", "yaml"], id="stop's outputs complete"),
    pytest.param(["-n", "team", "li"], ["list"], id="a verb completes after flags before it"),
    pytest.param(["-n", "team", "list", "workloads", "-o", "n"], ["name"], id="flags before the verb do not hide its own"),
    pytest.param(["stop", "cq", "a", ""], [], id="nothing after the last name"),
    pytest.param(["completion", ""], ["bash", "zsh"], id="completion completes the shells"),
])
def test_words_from_the_tree(words: list[str], expected: list[str]) -> None:
    assert complete(parser(), COMMANDS, words) == Completion(tuple(expected), NO_FILE_COMP)


def test_another_commands_words_are_left_to_the_shell() -> None:
    """check, review, ...: their own --help lists their flags, and a file name may come next."""
    assert complete(parser(), COMMANDS, ["review", "-f", ""]) == Completion()


def test_why_completes_a_kind_up_to_its_slash() -> None:
    assert complete(parser(), COMMANDS, ["why", "j"]) == Completion(("job/",), NO_FILE_COMP | NO_SPACE)


@pytest.mark.parametrize("words, names", [
    pytest.param(["stop", "workload", ""], Names("Workload", "stop", ""), id="stop workload lists the Workloads"),
    pytest.param(["resume", "cq", "te"], Names("ClusterQueue", "resume", "te"), id="resume cq lists the ClusterQueues"),
    pytest.param(["-n", "team-a", "--context", "alice", "stop", "lq", ""],
                 Names("LocalQueue", "stop", "", connection=Connection(None, "alice", "team-a", False)),
                 id="the flags before the verb choose the context and namespace"),
    pytest.param(["stop", "wl", "--namespace=team-a", "--kubeconfig", "/k", ""],
                 Names("Workload", "stop", "", connection=Connection("/k", None, "team-a", False)),
                 id="the flags after the verb too, either form"),
    pytest.param(["why", "job/tr"], Names("Job", "why", "tr", "job/"), id="why job/ lists the Jobs"),
    pytest.param(["why", "-n", "x", "appwrappers.workload.codeflare.dev/"],
                 Names("AppWrapper", "why", "", "appwrappers.workload.codeflare.dev/", Connection(None, None, "x", False)),
                 id="why completes after the kind as it was typed"),
    pytest.param(["list", "wl", "-n", "te"], Names("Namespace", "", "te"), id="a namespace flag lists the namespaces"),
    pytest.param(["--context", "alice", "-n", ""], Names("Namespace", "", "", connection=Connection(None, "alice", None, False)),
                 id="a namespace before the verb too"),
])
def test_names_come_from_one_list(words: list[str], names: Names) -> None:
    assert complete(parser(), COMMANDS, words) == Completion(names=names)


def _object(name: str, **spec: object) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize("names, objects, expected", [
    pytest.param(Names("Workload", "stop", ""), [_object("a"), _object("b", active=False)], ["a"],
                 id="stop offers the active workloads, as kueuectl"),
    pytest.param(Names("Workload", "resume", ""), [_object("a"), _object("b", active=False)], ["b"],
                 id="resume offers the stopped workloads"),
    pytest.param(Names("ClusterQueue", "stop", ""), [_object("a", stopPolicy="Hold"), _object("b", stopPolicy="None")],
                 ["b"], id="stop offers the queues with no stop policy"),
    pytest.param(Names("LocalQueue", "resume", ""), [_object("a", stopPolicy="HoldAndDrain"), _object("b")], ["a"],
                 id="resume offers the stopped queues"),
    pytest.param(Names("Job", "why", "t", "job/"), [_object("tune"), _object("train"), _object("eval")],
                 ["job/train", "job/tune"], id="why offers every name typed so far, after its kind"),
])
def test_which_names_are_offered(names: Names, objects: list[dict[str, object]], expected: list[str]) -> None:
    assert completable(names, objects) == expected


@pytest.mark.parametrize("completion, names, text", [
    pytest.param(Completion(("a", "b"), NO_FILE_COMP), [], "a\nb\n:4\n", id="words then cobra's directive"),
    pytest.param(Completion(names=Names("Job", "why", "")), ["job/x"], "job/x\n:4\n", id="names are no file names"),
    pytest.param(Completion(), [], ":0\n", id="nothing known leaves the shell its default"),
])
def test_answers_read_as_cobras(completion: Completion, names: list[str], text: str) -> None:
    assert answer(completion, names) == text


def test_an_unreachable_cluster_completes_no_name_and_prints_no_error(tmp_path: Path) -> None:
    """One list, given up fast: a closed port answers at once, and nothing reaches the shell's stderr."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {}}]}))
    done = subprocess.run([str(BIN / "kubectl-batchgate"), "__complete", "stop", "workload", "--kubeconfig",
                           str(kubeconfig), ""], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, ":4\n", "")


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


ZSH_STUBS = ('compdef() { :; }; compadd() { local name=${@[-1]}; print -r -- "${(P)name}"; }; '
             '_files() { print -r -- "(files)"; }; ')
"""zsh's completion system stood in for: `compadd -a NAME` prints the array it is offered, `_files` says so."""


@pytest.mark.parametrize("line, expected", [
    pytest.param(["kubectl-batchgate", "li"], "list", id="zsh completes a verb"),
    pytest.param(["kubectl-batchgate", "list", "resourcef"], "resourceflavor resourceflavors", id="zsh completes a resource"),
    pytest.param(["kubectl-batchgate", "review", "-f", ""], "(files)", id="zsh leaves a file to its own completion"),
])
def test_zsh_completes_through_the_installed_program(line: list[str], expected: str) -> None:
    """zsh is installed by `make test-tools` (Debian's package), as on CI's fresh machine."""
    words = " ".join(f"'{w}'" for w in line)
    probe = (f"{ZSH_STUBS}source <(kubectl-batchgate completion zsh); words=({words}); CURRENT={len(line)}; "
             "_batchgate_complete")
    done = subprocess.run(["zsh", "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert (done.stdout.strip(), done.stderr) == (expected, "")


def test_kubectls_own_completion_asks_the_installed_plugin() -> None:
    """`kubectl batchgate <TAB>`: kubectl runs `kubectl_complete-batchgate WORDS` from PATH (kubectl 1.26+)."""
    done = subprocess.run([real_kubectl(), "__complete", "batchgate", "list", "c"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.stdout.splitlines() == ["clusterqueue", "clusterqueues", "cq", ":4"], done.stderr


@pytest.mark.parametrize("program, words, expected", [
    pytest.param("kubectl-batchgate", ["nope"], (1, "error: unknown command 'nope': run `kubectl batchgate --help` for "
                                                    "the commands\n"), id="an unknown command under the plugin name"),
    pytest.param("kubectl-batchgate", ["-o", "name", "list"], (1, "error: unknown flag before the command: -o (there: "
                 "--kubeconfig, --context, -n, --namespace, -A; the others after the command)\n"),
                 id="a verb's flag before it under the plugin name"),
    pytest.param("batchgate", ["check", "--bogus"], (2, "batchgate check: unrecognized arguments: --bogus\n"),
                 id="batchgate's own name keeps its commands' form"),
])
def test_errors_read_as_the_program_run(program: str, words: list[str], expected: tuple[int, str]) -> None:
    """The installed entry points: the plugin is known by the name kubectl runs it by (argv[0])."""
    done = subprocess.run([str(BIN / program), *words], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == expected and done.stdout == ""
