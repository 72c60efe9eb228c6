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


MAX_DEPTH = 100
"""Nesting levels of mappings and lists; a policy or a manifest uses a dozen."""
MAX_VALUES = 100_000
"""Values (scalars, mappings, lists) with every alias expanded: a "billion laughs" of a few
hundred bytes is refused here instead of expanding, and no honest document comes close."""


def load_located(text: str, line_offset: int = 0) -> LocatedDocument:
    """Decode one YAML document; `line_offset` shifts lines when the text is embedded in a file.

    Bounded work: the document is scanned (without building it) for nesting and alias
    expansion first, so every input costs time proportional to its length.
    """
    documents = _load(text, line_offset, single=True)
    return documents[0] if documents else LocatedDocument(None, {}, None)


def load_located_all(text: str) -> list[LocatedDocument]:
    """Every non-empty document of a `---`-separated stream, each located like `load_located`'s
    (lines count from the start of the stream), with the same bounds over the whole stream."""
    return [d for d in _load(text, 0, single=False) if d.value is not None]


def _load(text: str, line_offset: int, single: bool) -> list[LocatedDocument]:
    loader: yaml.SafeLoader | None = None
    nodes: list[tuple[yaml.Node, Any]] = []
    try:
        check_bounds(text, line_offset)
        loader = yaml.SafeLoader(text)
        found: list[yaml.Node | None] = [loader.get_single_node()] if single else []
        while not single and loader.check_node():
            found.append(loader.get_node())
        nodes = [(node, loader.construct_document(node)) for node in found if node is not None]
    except LocatedYAMLError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        detail = ", ".join(part for part in (exc.context, exc.problem) if part)
        raise LocatedYAMLError(mark.line + 1 + line_offset if mark else None, "", f"invalid YAML: {detail}") from None
    except yaml.YAMLError as exc:
        raise LocatedYAMLError(None, "", f"invalid YAML: {_first_line(exc)}") from None
    except ValueError as exc:  # int() of a scalar with more digits than Python converts
        raise LocatedYAMLError(None, "", f"a value cannot be read: {_first_line(exc)}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return [LocatedDocument(value, _line_index(node, line_offset), node) for node, value in nodes]


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def check_bounds(text: str, line_offset: int = 0) -> None:
    """LocatedYAMLError when the document nests deeper than MAX_DEPTH or expands (aliases
    included) to more than MAX_VALUES values. Parse events only: nothing is built."""
    depth = 0
    expanded = 0
    started: list[tuple[str | None, int]] = []
    anchored: dict[str, int] = {}
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise LocatedYAMLError(_line(event) + 1 + line_offset, "", f"nested more than {MAX_DEPTH} levels deep")
            started.append((event.anchor, expanded))
            expanded += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            anchor, before = started.pop()
            if anchor:
                anchored[anchor] = expanded - before
        elif isinstance(event, yaml.ScalarEvent):
            expanded += 1
            if event.anchor:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent) and event.anchor is not None:
            expanded += anchored.get(event.anchor, 1)
        if expanded > MAX_VALUES:
            raise LocatedYAMLError(_line(event) + 1 + line_offset, "",
                                   f"expands to more than {MAX_VALUES} values (aliases included)")


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


def _line(event: yaml.Event) -> int:
    """0-based line where a parse event starts (0 when the parser gives no mark)."""
    return event.start_mark.line if event.start_mark is not None else 0
