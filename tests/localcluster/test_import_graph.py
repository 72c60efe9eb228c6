"""The local cluster's modules import one another in one direction: the server imports its verbs,
the verbs take a `ServerState` and never import the server, and no import cycle exists at all,
counting imports made only for type checking or inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.localcluster_fixtures import repo_root

PACKAGE = repo_root() / "localcluster"
VERB_MODULES = ("reads", "writes", "watching", "patch_kinds", "special", "pipeline")


def module_name(path: Path) -> str:
    parts = path.relative_to(repo_root()).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def local_imports(source: str, module: str) -> set[str]:
    """Every localcluster module that `module` (with this source) imports, wherever the statement
    stands: at the top, under `if TYPE_CHECKING:` or inside a function."""
    package = module.rsplit(".", 1)[0] if MODULES.get(module, Path()).name != "__init__.py" else module
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                parent = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            found.update({base} & MODULES.keys())
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
    return found - {module}


GRAPH = {name: local_imports(path.read_text(), name) for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("verb", VERB_MODULES)
def test_a_verb_module_never_imports_the_api_server(verb: str) -> None:
    assert "localcluster.apiserver.server" not in GRAPH[f"localcluster.apiserver.{verb}"]


def test_the_local_cluster_has_no_import_cycle() -> None:
    assert cycles(GRAPH) == []


@pytest.mark.parametrize(("graph", "expected"), [
    pytest.param({"a": {"b"}, "b": {"c"}, "c": set()}, [], id="a chain has no cycle"),
    pytest.param({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]], id="two modules importing each other"),
    pytest.param({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]], id="a loop through three"),
])
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


@pytest.mark.parametrize(("source", "expected"), [
    pytest.param("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from localcluster.apiserver.server import ApiServer\n",
                  {"localcluster.apiserver.server"}, id="an import for type checking only"),
    pytest.param("def f():\n    from localcluster.apiserver import writes\n", {"localcluster.apiserver", "localcluster.apiserver.writes"},
                 id="an import inside a function"),
    pytest.param("from . import writes\nfrom .patching import apply\n",
                 {"localcluster.apiserver", "localcluster.apiserver.writes", "localcluster.apiserver.patching", "localcluster.apiserver.patching.apply"},
                 id="relative imports"),
    pytest.param("import localcluster.store\nimport json\n", {"localcluster.store"}, id="a plain import"),
])
def test_every_kind_of_import_statement_counts(source: str, expected: set[str]) -> None:
    assert local_imports(source, "localcluster.apiserver.reads") == expected
