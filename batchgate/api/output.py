"""Objects printed the way users read and pipe them: YAML (multi-line strings as `|` blocks, keys
in the order built) or JSON."""

from __future__ import annotations

import json
from typing import Any

import yaml

FORMATS = ("yaml", "json")


class _Dumper(yaml.SafeDumper):
    pass


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _string)


def render(obj: Any, output: str) -> str:
    """`obj` as `output` (one of FORMATS), ending in a newline."""
    if output == "json":
        return json.dumps(obj, indent=2) + "\n"
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False)
