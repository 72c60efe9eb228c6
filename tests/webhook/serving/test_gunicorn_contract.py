"""The gunicorn internals our worker is written against have not changed (issue 26, section 7).

`webhook/serving/readahead.py` and `webhook/serving/worker.py` subclass gunicorn's gthread worker
and use parts of it that gunicorn does not document (`TConn`, `nr_conns`, `poller`,
`keepalived_conns`, `murder_pending`, the parser's unreader...). A supported worker class was
measured instead and did not hold up (docs/webhook.md, "Why not another worker class"), so we keep
the subclass and pin what it relies on: each function or class below is fingerprinted by its code
(comments, docstrings and layout left out), and a gunicorn upgrade that changes one fails here,
naming it, its gunicorn file and our module to re-read. When both agree again, record the new
fingerprint the message gives. The behaviour itself is tested over real sockets next door
(test_readahead.py, test_balance.py, test_framing.py).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

import gunicorn
import pytest

READAHEAD = "webhook/serving/readahead.py"
WORKER = "webhook/serving/worker.py"
SERVER = "webhook/serving/server.py"


@dataclass(frozen=True)
class Reliance:
    """One gunicorn function or class, the module of ours written against it, and its fingerprint."""

    target: str
    ours: str
    fingerprint: str
    why: str


CONTRACT = (
    Reliance("gunicorn.workers.gthread.TConn", READAHEAD, "bba1c7fa7e8f642e",
             "we build TConn ourselves; init() must skip a connection marked initialized"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.__init__", READAHEAD, "0ec3008899431030",
             "nr_conns, worker_connections, keepalived_conns, pending_conns"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.init_process", READAHEAD, "b6a5e63016f74e65",
             "the poller exists once init_process ran"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.run", READAHEAD, "70776b86df57c940",
             "accepting stops at worker_connections; murder_keepalived and murder_pending run every second"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.accept", READAHEAD, "118e95e74610e53f",
             "replaced: ours must keep its accounting"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.enqueue_req", WORKER, "8b3cd948afa0561c",
             "a connection goes to a thread here, and comes back through finish_request"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.on_client_socket_readable", READAHEAD, "1281ce8ebfabbba1",
             "replaced: a kept-alive connection's next request is read in the poller"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.finish_request", READAHEAD, "d3123b8d512a7efc",
             "replaced: keep-alive, pending and closing connections"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.murder_keepalived", WORKER, "f3703d3ebb57379a",
             "extended: closes idle connections and keeps nr_conns"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.murder_pending", READAHEAD, "2d860224723271c1",
             "extended: our deadlines are checked when gunicorn checks its own"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.handle", READAHEAD, "73f7f3f1bfa32460",
             "a connection marked initialized and data_ready is parsed at once, without waiting"),
    Reliance("gunicorn.workers.gthread.ThreadWorker._keepalive_after", READAHEAD, "79ed58b8a9da9326",
             "what it reads past the request stays in the unreader, taken back by take_buffered"),
    Reliance("gunicorn.workers.gthread.ThreadWorker.handle_request", WORKER, "df013597451df37d",
             "keep-alive is decided from the Response, which honour_connection_close can force closed"),
    Reliance("gunicorn.http.get_parser", READAHEAD, "4bbc8cc982321cad",
             "the parser of a connection whose request the poller read"),
    Reliance("gunicorn.http.unreader.Unreader.unread", READAHEAD, "a1bcd9908da6cc3e",
             "the bytes the poller read are handed back to the parser"),
    Reliance("gunicorn.http.unreader.Unreader.take_buffered", READAHEAD, "e190c45f3e23c1c6",
             "what a thread read ahead of the next request"),
    Reliance("gunicorn.sock.ssl_context", READAHEAD, "8c1ed60e0f263b9f",
             "the context (our ssl_context hook) the poller wraps new connections with"),
    Reliance("gunicorn.http.wsgi.Response.force_close", WORKER, "b9dd75837f2c1f9f",
             "honour_connection_close closes a connection the app gave up on"),
    Reliance("gunicorn.workers.base.Worker.load_wsgi", WORKER, "a90a40624ca17792",
             "self.wsgi is the app, wrapped by ours after it loads"),
    Reliance("gunicorn.arbiter.Arbiter.spawn_worker", SERVER, "eb24221da95c37a0",
             "pre_fork gets the worker object before the fork: its connection slot is set there"),
)


def resolve(target: str) -> tuple[str, Any]:
    """The longest importable module of a dotted path, and the object at the path (a class's own
    attribute, not an inherited one); LookupError naming that module when the object is gone."""
    parts = target.split(".")
    for split in range(len(parts), 0, -1):
        module = ".".join(parts[:split])
        try:
            found: Any = importlib.import_module(module)
        except ImportError:
            continue
        try:
            for name in parts[split:]:
                found = found.__dict__[name] if isinstance(found, type) else getattr(found, name)
        except (AttributeError, KeyError):
            raise LookupError(module) from None
        return module, found
    raise LookupError(parts[0])


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def fingerprint_source(source: str) -> str:
    """The code of a function or class, without comments, docstrings or layout, hashed."""
    tree = _without_docstrings(ast.parse(textwrap.dedent(source)))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def _source_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


@pytest.mark.parametrize("reliance", CONTRACT, ids=lambda r: f"{r.target} is as {r.ours} was written against")
def test_gunicorn_internals_are_what_our_worker_was_written_against(reliance: Reliance) -> None:
    version = gunicorn.__version__
    try:
        module, code = resolve(reliance.target)
    except LookupError as gone:
        pytest.fail(f"gunicorn {version} has no {reliance.target} any more ({reliance.why}): re-read "
                    f"{_source_file(str(gone))} and rework {reliance.ours}, or move to a supported worker "
                    f"(docs/webhook.md)", pytrace=False)
    found = fingerprint_source(inspect.getsource(code))
    if found != reliance.fingerprint:
        pytest.fail(f"gunicorn {version} changed {reliance.target} ({reliance.why}): re-read {_source_file(module)} "
                    f"against {reliance.ours}; when they agree, record its fingerprint {found!r} in "
                    f"tests/webhook/serving/test_gunicorn_contract.py", pytrace=False)


ORIGINAL = 'def f(x):\n    """Why."""\n    return x + 1\n'


@pytest.mark.parametrize(("other", "same"), [
    pytest.param('def f(x):\n    """Reworded."""\n    # a comment\n    return (x\n            + 1)\n', True,
                 id="a reworded docstring, a comment and a line break keep the fingerprint"),
    pytest.param('def f(x):\n    return x + 1\n', True, id="a docstring removed keeps it"),
    pytest.param('def f(x):\n    """Why."""\n    return x + 2\n', False, id="a changed expression changes it"),
    pytest.param('def f(x, y=0):\n    """Why."""\n    return x + 1\n', False, id="a new parameter changes it"),
])
def test_the_fingerprint_follows_the_code_and_ignores_the_words(other: str, same: bool) -> None:
    assert (fingerprint_source(other) == fingerprint_source(ORIGINAL)) is same


@pytest.mark.parametrize(("target", "module"), [
    pytest.param("gunicorn.http.unreader.Unreader.gone", "gunicorn.http.unreader",
                 id="a method gunicorn no longer has names the module to re-read"),
    pytest.param("gunicorn.workers.gthread.ThreadWorker.load_wsgi", "gunicorn.workers.gthread",
                 id="a method only inherited is not taken for the class's own"),
    pytest.param("gunicorn.workers.gthread.Gone", "gunicorn.workers.gthread", id="a class gone names its module"),
])
def test_a_name_gone_from_gunicorn_is_reported_with_its_module(target: str, module: str) -> None:
    with pytest.raises(LookupError) as gone:
        resolve(target)
    assert str(gone.value) == module
