"""`batchgate generate pytorchjob`: the AppWrapper MLBatch's pytorchjob-generator would render.

Reads the generator's settings file and prints the AppWrapper. Bad settings print one located
line each on stderr and nothing on stdout (exit 2). `--settings-schema` prints the settings'
JSON Schema instead.
"""

from __future__ import annotations

import argparse

from batchgate.api.output import FORMATS, render
from batchgate.command_line import ArgumentParser, Refused, read_source, run_command
from batchgate.generator.pytorchjob import generate_appwrapper
from batchgate.generator.settings import SettingsError, parse_settings, settings_schema


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="batchgate generate", description=__doc__.splitlines()[0])
    generators = p.add_subparsers(dest="generator", required=True, metavar="GENERATOR")
    pytorchjob = generators.add_parser(
        "pytorchjob", help="an AppWrapper holding a PyTorchJob, from a pytorchjob-generator settings file")
    source = pytorchjob.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--filename", help="the settings file (YAML); - for stdin")
    source.add_argument("--settings-schema", action="store_true", help="print the settings' JSON Schema")
    pytorchjob.add_argument("-o", "--output", choices=FORMATS,
                            help="yaml (the default for the AppWrapper) or json (the default for the schema)")
    return p


def run(argv: list[str]) -> str:
    """What to print for `argv`; BadInput or Refused (the settings' located lines) when there is nothing."""
    args = parser().parse_args(argv)
    if args.settings_schema:
        return render(settings_schema(), args.output or "json")
    source = "<stdin>" if args.filename == "-" else args.filename
    try:
        settings = parse_settings(read_source(args.filename), source)
    except SettingsError as exc:
        raise Refused(exc.lines) from None
    return render(generate_appwrapper(settings), args.output or "yaml")


def main(argv: list[str] | None = None) -> int:
    return run_command("batchgate generate", run, argv)
