"""docs/architecture.md, "Layers and import rules": the pure layers import no I/O, the local cluster
nothing of ours, and the product nothing of the test beds."""

from __future__ import annotations

import ast
import functools
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IO_LIBRARIES = {"flask", "gunicorn", "kubernetes", "requests", "threading", "time", "socket", "aiohttp"}
PRODUCT = {"batchgate", "kubeapi", "webhook", "controller", "certs", "dashboard"}  # what the wheel and the image ship
TEST_BEDS = {"localcluster", "realcluster", "demo", "tests", "bench"}  # run from the checkout only


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute(path: Path, node: ast.ImportFrom) -> str:
    """The dotted name an ImportFrom refers to, relative imports resolved against `path`."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imported_modules(path: Path, with_names: bool = False) -> set[str]:
    """Every module `path` imports, relative imports included (so `from ..adapters` counts);
    `with_names`: as `module.name` for each name imported from it (`from batchgate import keys`
    is `batchgate.keys`)."""
    tree = syntax_tree(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and with_names:
            names.update(f"{absolute(path, node)}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(absolute(path, node))
    return names


def python_files(*packages: str) -> list[Path]:
    return [p for pkg in packages for p in sorted((ROOT / pkg).rglob("*.py"))]


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


# Every file is parsed once, at collection, before any test has started threads: in a full run,
# CPython 3.11's AST constructor once raised "recursion depth mismatch" parsing here mid-suite,
# with other tests' threads alive (the interpreter's recursion bookkeeping, not our code).
for _path in python_files(*sorted(PRODUCT), "localcluster", "realcluster", "demo"):
    syntax_tree(_path)


def top(name: str) -> str:
    return name.split(".")[0]


def offending(path: Path, forbidden: set[str], allowed_prefixes: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        name
        for name in imported_modules(path)
        if top(name) in forbidden and not name.startswith(allowed_prefixes)
    )


@pytest.mark.parametrize("path", python_files("batchgate"), ids=lambda p: str(p.relative_to(ROOT)))
def test_vocabulary_imports_no_io_framework_nor_product_layers(path: Path) -> None:
    forbidden = {"flask", "gunicorn", "kubernetes", "webhook", "controller", "localcluster", "aiohttp"}
    assert offending(path, forbidden, allowed_prefixes=("kubernetes.utils",)) == []


@pytest.mark.parametrize(
    "path",
    python_files("webhook/rules", "controller/state", "controller/decisions", "controller/check", "dashboard/views",
                 "localcluster/rbac") + [p for p in python_files("controller/plugin") if p.name != "cli.py"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_pure_layers_import_no_io_and_no_adapter(path: Path) -> None:
    bad = offending(path, IO_LIBRARIES)
    bad += sorted(n for n in imported_modules(path) if n.startswith("controller.adapters"))
    assert bad == []


# batchgate.frozen is the dataclass decorator of the hot values, itself built on the standard library alone.
KINDS_MAY_IMPORT = ("batchgate.kinds", "batchgate.api.", "batchgate.keys", "batchgate.frozen.", "__future__.",
                    "dataclasses.", "typing.", "urllib.parse.")


@pytest.mark.parametrize("path", python_files("batchgate/kinds"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_kind_registry_reads_only_the_api_vocabulary(path: Path) -> None:
    """The registry is read by the gateway, the controller, `check` and the dashboard alike, so it
    depends on nothing but the wire vocabulary (batchgate/api, keys), `@frozen` and the standard
    library."""
    assert sorted(n for n in imported_modules(path, with_names=True) if not n.startswith(KINDS_MAY_IMPORT)) == []


KUBERNETES_CLIENT_ADAPTERS = {
    "webhook/policy/reloader.py",  # list + watch of the policy ConfigMap and Namespaces, off the request path
    "webhook/authorization/kube.py",  # discovery + SubjectAccessReview for per-component authorization
}
"""The gateway's only modules that talk to the API server; everything else gets their answers."""


@pytest.mark.parametrize("path", python_files("localcluster/sim"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_local_clusters_decisions_import_no_io_and_no_runtime(path: Path) -> None:
    bad = offending(path, IO_LIBRARIES | {"asyncio", "subprocess"}, allowed_prefixes=("kubernetes.utils",))
    bad += sorted(n for n in imported_modules(path) if n.startswith("localcluster.runtime"))
    assert bad == []


def may_use_kubernetes_client(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return rel.startswith("controller/adapters/") or rel in KUBERNETES_CLIENT_ADAPTERS


@pytest.mark.parametrize(
    "path",
    [p for p in python_files("webhook", "controller") if not may_use_kubernetes_client(p)],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_only_the_adapters_use_the_kubernetes_client(path: Path) -> None:
    assert offending(path, {"kubernetes"}, allowed_prefixes=("kubernetes.utils",)) == []


@pytest.mark.parametrize("path", python_files("kubeapi"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_shared_api_edge_imports_only_the_vocabulary(path: Path) -> None:
    """kubeapi/ (the REST client and list + watch) serves the controller, the gateway, the keeper
    and the dashboard alike, so it knows none of them."""
    assert offending(path, {"webhook", "controller", "certs", "dashboard", "demo", "localcluster", "realcluster"}) == []


@pytest.mark.parametrize(
    ("path", "other"),
    [(p, "controller") for p in python_files("webhook")] + [(p, "webhook") for p in python_files("controller")],
    ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else v,
)
def test_the_gateway_and_the_controller_do_not_import_each_other(path: Path, other: str) -> None:
    """What both need (frameworks, keys, models) lives in batchgate/."""
    assert offending(path, {other}) == []


@pytest.mark.parametrize("path", python_files("dashboard"), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_dashboard_reads_through_the_controllers_adapters_and_writes_nothing_of_its_own(path: Path) -> None:
    """Only its watch edge talks to the API server, through the controller's client and informers."""
    if path.relative_to(ROOT).as_posix() != "dashboard/watch.py":
        assert offending(path, {"kubernetes"}) == []
    assert offending(path, {"webhook", "localcluster"}) == []


def test_relative_imports_are_resolved() -> None:
    names = imported_modules(ROOT / "webhook/rules/frameworks/__init__.py")
    assert "webhook.rules.review" in names


@pytest.mark.parametrize("path", python_files("localcluster"), ids=lambda p: str(p.relative_to(ROOT)))
def test_local_cluster_imports_nothing_from_the_product(path: Path) -> None:
    """It plays Kubernetes, which knows nothing of batchgate: its certificates included."""
    assert offending(path, PRODUCT | {"demo"}) == []


@pytest.mark.parametrize("path", python_files(*sorted(PRODUCT)), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_product_imports_nothing_from_the_test_beds_or_the_demo(path: Path) -> None:
    """The wheel and the image carry the product alone; `batchgate cluster` and `batchgate demo` are
    named as strings in the command line and say so where they are not installed."""
    assert offending(path, TEST_BEDS) == []


def test_the_wheel_and_the_image_ship_the_product_and_nothing_else() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = {line.split()[1] for line in (ROOT / "Dockerfile").read_text().splitlines()
              if line.startswith("COPY ") and "--from" not in line and line.split()[1].isidentifier()}
    assert {name.rstrip("*") for name in included} == PRODUCT
    assert copied == PRODUCT


def test_the_rules_are_checking_real_files() -> None:
    assert len(python_files("batchgate")) >= 5
    assert python_files("kubeapi")
    assert len(python_files("batchgate/kinds")) >= 5
    assert python_files("webhook/rules")
