"""`batchgate generate pytorchjob`: the AppWrapper on stdout, or located lines on stderr and nothing
on stdout (exit 2); the output passes `batchgate review` under the default policy."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from batchgate.cli import main as batchgate
from batchgate.generator.pytorchjob import generate_appwrapper
from batchgate.generator.settings import parse_settings, settings_schema
from webhook.review_cli import main as review

SETTINGS = """\
jobName: my-job
namespace: team-a
numPods: 3
numGpusPerPod: 8
containerImage: ghcr.io/foundation-model-stack/base:pytorch-latest-nightly-20230126
setupCommands: [git clone https://github.com/dbarnett/python-helloworld, cd python-helloworld]
mainProgram: helloworld.py
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = batchgate(["generate", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def settings_file(tmp_path: Path) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(SETTINGS)
    return path


def test_yaml_is_the_default_and_json_the_same_object(capsys: pytest.CaptureFixture[str], settings_file: Path) -> None:
    expected = generate_appwrapper(parse_settings(SETTINGS))
    code, out, err = run(capsys, "pytorchjob", "-f", str(settings_file))
    assert (code, err, yaml.safe_load(out)) == (0, "", expected)
    assert "      echo executing: torchrun" in out  # the script is a readable `|` block, not one escaped line
    code, out, _ = run(capsys, "pytorchjob", "-f", str(settings_file), "-o", "json")
    assert (code, json.loads(out)) == (0, expected)


def test_settings_can_come_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("jobName: x\ncontainerImage: i\nnumPods: 0\n"))
    assert run(capsys, "pytorchjob", "-f", "-") == (2, "", "<stdin>:3: numPods: must be at least 1, got 0\n")


def test_the_output_passes_review_under_the_default_policy(capsys: pytest.CaptureFixture[str], settings_file: Path,
                                                           tmp_path: Path) -> None:
    _, out, _ = run(capsys, "pytorchjob", "-f", str(settings_file))
    generated = tmp_path / "aw.yaml"
    generated.write_text(out)
    assert review(["-f", str(generated), "--user", "alice"]) == 0
    reviewed = yaml.safe_load(capsys.readouterr().out)
    assert reviewed["metadata"]["labels"]["workload.codeflare.dev/user"] == "alice"


def test_settings_schema_is_json_or_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pytorchjob", "--settings-schema")
    assert (code, json.loads(out)) == (0, settings_schema())
    code, out, _ = run(capsys, "pytorchjob", "--settings-schema", "-o", "yaml")
    assert (code, yaml.safe_load(out)) == (0, settings_schema())


BAD = [
    ([], "batchgate generate: the following arguments are required: GENERATOR", "no generator"),
    (["tfjob"], "batchgate generate: argument GENERATOR: invalid choice: 'tfjob' (choose from ", "a generator there is not"),
    (["pytorchjob"], "batchgate generate: one of the arguments -f/--filename --settings-schema is required",
     "no settings"),
    (["pytorchjob", "-f", "s.yaml", "--settings-schema"],
     "batchgate generate: argument --settings-schema: not allowed with argument -f/--filename", "both"),
    (["pytorchjob", "--settings-schema", "-o", "xml"],
     "batchgate generate: argument -o/--output: invalid choice: 'xml' (choose from ", "an unknown format"),
    (["pytorchjob", "-f", "/nonexistent/settings.yaml"],
     "batchgate generate: cannot read /nonexistent/settings.yaml: No such file or directory", "a missing file"),
]


@pytest.mark.parametrize(("args", "message"), [pytest.param(a, m, id=i) for a, m, i in BAD])
def test_bad_arguments_get_one_line_and_print_nothing(capsys: pytest.CaptureFixture[str], args: list[str],
                                                      message: str) -> None:
    """(How argparse quotes the choices it lists depends on the Python version.)"""
    code, out, err = run(capsys, *args)
    assert (code, out, len(err.splitlines())) == (2, "", 1)
    assert err.startswith(message)


def test_bad_settings_print_every_line_and_nothing_else(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(SETTINGS.replace("numPods: 3", "numPods: 0").replace("team-a", "Team A"))
    code, out, err = run(capsys, "pytorchjob", "-f", str(path))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"{path}:2: namespace: 'Team A' is not a lowercase RFC 1123 label (letters, digits and '-', starting with a "
        "letter, ending with a letter or digit)",
        f"{path}:3: numPods: must be at least 1, got 0"]


def test_the_command_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert batchgate(["--help"]) == 0
    assert "  generate " in capsys.readouterr().out
