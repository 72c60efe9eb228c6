"""YAML that remembers where each field was written, so errors can name the line to fix.

`load_located(text)` decodes one document and maps every field path (`queues.defaultQueueName`,
`exempt.users[1]`) to the 1-based line of its key. Duplicate keys are errors here: YAML loaders
silently keep the last one, which hides typos in hand-edited files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

import yaml

from batchgate.api.errors import child


class LocatedYAMLError(ValueError):
    def __init__(self, line: int | None, path: str, detail: str) -> None:
        super().__init__(f"line {line}: {path}: {detail}" if path else f"line {line}: {detail}")
        self.line = line
        self.path = path
        self.detail = detail


@dataclass(frozen=True)
class LocatedDocument:
    value: Any
    lines: Mapping[str, int]
    """Field path -> 1-based line of its key ("" -> the document's first line)."""
    node: yaml.Node | None


def load_located(text: str, line_offset: int = 0) -> LocatedDocument:
    """Decode one YAML document; `line_offset` shifts lines when the text is embedded in a file."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        detail = ", ".join(part for part in (exc.context, exc.problem) if part)
        raise LocatedYAMLError(mark.line + 1 + line_offset if mark else None, "", f"invalid YAML: {detail}") from None
    except yaml.YAMLError as exc:
        raise LocatedYAMLError(None, "", f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    lines = _line_index(node, line_offset) if node is not None else {}
    return LocatedDocument(value, lines, node)


def _line_index(node: yaml.Node, offset: int) -> dict[str, int]:
    lines: dict[str, int] = {"": node.start_mark.line + 1 + offset}

    def walk(n: yaml.Node, path: str) -> None:
        if isinstance(n, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in n.value:
                key = str(key_node.value)
                sub = child(path, key)
                line = key_node.start_mark.line + 1 + offset
                if key in seen:
                    raise LocatedYAMLError(line, sub, "duplicate key")
                seen.add(key)
                lines[sub] = line
                walk(value_node, sub)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                lines[child(path, i)] = item.start_mark.line + 1 + offset
                walk(item, child(path, i))

    walk(node, "")
    return lines


_LAST_STEP = re.compile(r"(\.[^.\[\]]+|\[[^\]]*\])$")


def line_for(lines: Mapping[str, int], path: str) -> int | None:
    """The line of the deepest written prefix of `path` (a missing field points at its parent)."""
    candidate = path
    while candidate and candidate not in lines:
        shorter = _LAST_STEP.sub("", candidate)
        if shorter == candidate:
            break
        candidate = shorter
    return lines.get(candidate, lines.get(""))


def block_offset(node: yaml.Node | None, keys: tuple[str, ...]) -> int:
    """Lines before the content of a `key: |` block scalar at `keys`, so errors inside the
    embedded text can point into the outer file. 0 when it is not a block scalar."""
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return 0
        node = next((v for k, v in node.value if k.value == key), None)
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        return node.start_mark.line + 1
    return 0
