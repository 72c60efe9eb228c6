"""The strict PodSpec field table is derived from the official kubernetes client's models.

`batchgate/` may not import the client, so the table is committed as JSON; this test rebuilds
it from the client and fails when they drift. Regenerate with
`.venv/bin/python -m tests.batchgate.api.test_pod_spec`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kubernetes import client

from batchgate.api import pod_spec

QUANTITY_FIELDS = {"limits", "requests", "overhead", "sizeLimit", "divisor"}


def _shape(type_text: str, field_name: str) -> list[str]:
    if field_name in QUANTITY_FIELDS:
        return ["map", "quantity"] if type_text.startswith("Dict") else ["quantity"]
    if match := re.fullmatch(r"List\[(.+)\]", type_text):
        return ["list", _scalar(match.group(1))]
    if match := re.fullmatch(r"Dict\[str, (.+)\]", type_text):
        return ["map", _scalar(match.group(1))]
    return [_scalar(type_text)]


def _scalar(type_text: str) -> str:
    return {"str": "string", "int": "integer", "bool": "boolean", "float": "number",
            "object": "int-or-string", "datetime": "string"}.get(type_text, type_text)


def build_schema() -> dict[str, dict[str, list[str]]]:
    types: dict[str, dict[str, list[str]]] = {}
    pending = ["V1PodSpec"]
    while pending:
        name = pending.pop()
        if name in types:
            continue
        model = getattr(client, name)
        fields: dict[str, list[str]] = {}
        for attr, type_text in model.openapi_types.items():
            wire = model.attribute_map[attr]
            shape = _shape(type_text, wire)
            fields[wire] = shape
            if hasattr(client, shape[-1]):
                pending.append(shape[-1])
        types[name] = dict(sorted(fields.items()))
    return dict(sorted(types.items()))


def test_committed_table_matches_the_kubernetes_client_models() -> None:
    committed = json.loads(Path(pod_spec.SCHEMA_FILE).read_text())
    assert committed == build_schema()


def test_table_covers_the_fields_manifests_use_most() -> None:
    schema = build_schema()
    assert {"containers", "schedulerName", "nodeSelector", "tolerations"} <= set(schema["V1PodSpec"])
    assert schema["V1Container"]["resources"] == ["V1ResourceRequirements"]


if __name__ == "__main__":
    Path(pod_spec.SCHEMA_FILE).write_text(json.dumps(build_schema(), indent=0, sort_keys=True) + "\n")
