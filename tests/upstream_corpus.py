"""Upstream's own samples: `shared/corpus` beside the clone (or beside a parent, for a worktree),
the MLBatch and AppWrapper projects' manifests kept verbatim outside this repository.

The tests that check batchgate against them are marked `upstream_corpus` (every helper here
marks what it hands out); where the corpus is absent, as in a clone alone, they are skipped with
REASON and `make test` says so in one line (tests/conftest.py). Nothing else in the repository
reads outside it: the demo, the benchmarks and every other test use demo/samples.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
MARKER = "upstream_corpus"
upstream = pytest.mark.upstream_corpus


def _find() -> Path | None:
    return next((folder / "shared" / "corpus" for folder in REPO_ROOT.parents
                 if (folder / "shared" / "corpus").is_dir()), None)


CORPUS = _find()
REASON = f"the upstream samples are absent: no shared/corpus beside {REPO_ROOT} or a parent of it"


def corpus_dir() -> Path:
    """The corpus; inside a test where it is absent, the test is skipped."""
    if CORPUS is None:
        pytest.skip(REASON)
    return CORPUS


def generator_fixtures() -> Path:
    """The pytorchjob-generator's settings files and helm-unittest suite; skips where absent."""
    return corpus_dir() / "mlbatch" / "pytorchjob-generator"


def corpus(name: str) -> dict[str, Any]:
    """The first document of one corpus file (`mlbatch/job.yaml`); skips where absent."""
    return next(d for d in yaml.safe_load_all((corpus_dir() / name).read_text()) if d)


def corpus_manifests() -> list[tuple[str, int, dict[str, Any]]]:
    """(file relative to the corpus, index, object) for every Kubernetes object of every YAML file
    (the generator's settings files hold none); none where the corpus is absent (the tests
    parametrized with them are marked and skipped)."""
    if CORPUS is None:
        return []
    return [(str(path.relative_to(CORPUS)), i, doc)
            for path in sorted(CORPUS.rglob("*.yaml"))
            for i, doc in enumerate(yaml.safe_load_all(path.read_text()))
            if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc]


def corpus_documents() -> list[tuple[str, dict[str, Any]]]:
    """Every manifest as (id, object), the helm-unittest snapshot's AppWrappers included (keyed by
    test name: `<test>: {1: |-\\n<yaml>}`); none where the corpus is absent."""
    out = [(f"{name}#{i}", doc) for name, i, doc in corpus_manifests()]
    for path in sorted(CORPUS.rglob("*.snap")) if CORPUS else []:
        snapshot = yaml.safe_load(path.read_text())
        for test_name, documents in snapshot.items():
            for index, text in documents.items():
                out.append((f"{path.name}:{test_name}#{index}", yaml.safe_load(text)))
    return out


def corpus_rows(rows: Iterable[tuple[str, tuple[Any, ...]]], width: int) -> list[Any]:
    """Table rows (id, values) made from the corpus, marked; where it is absent, one row of `width`
    Nones, `upstream's samples`, which is skipped, so the summary names the test."""
    found = [pytest.param(*values, id=row_id, marks=upstream) for row_id, values in rows]
    return found or [pytest.param(*[None] * width, id="upstream's samples", marks=upstream)]


def corpus_param(name: str, *values: Any, id: str) -> Any:
    """A table row whose first value is the corpus file `name`, marked; where the corpus is absent
    the row holds an empty object and is skipped."""
    obj = next(d for d in yaml.safe_load_all((CORPUS / name).read_text()) if d) if CORPUS else {}
    return pytest.param(obj, *values, id=id, marks=upstream)
