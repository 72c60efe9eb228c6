"""The HTTP edge: a threaded WSGI server (one thread per viewer, as each holds an event stream open).

werkzeug's threaded server, not gunicorn: the dashboard is one process whose watches and digest
all viewers share, and a handful of long-lived event streams is what it serves.
"""

from __future__ import annotations

import logging
import threading

from werkzeug.serving import BaseWSGIServer, make_server

from dashboard.app import Source, create_app


class Server:
    def __init__(self, wsgi: BaseWSGIServer) -> None:
        self._wsgi = wsgi
        self._thread = threading.Thread(target=wsgi.serve_forever, name="dashboard-http", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._wsgi.server_port)

    def wait(self) -> None:
        self._thread.join()

    def close(self) -> None:
        self._wsgi.shutdown()
        self._wsgi.server_close()


def serve(source: Source, address: str, port: int, log_requests: bool = False) -> Server:
    """Start serving `source`'s pages in a background thread; a line per request only if asked."""
    logging.getLogger("werkzeug").setLevel(logging.INFO if log_requests else logging.WARNING)
    return Server(make_server(address, port, create_app(source), threaded=True))  # daemon request threads
