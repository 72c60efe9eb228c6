"""Serving certificates that follow rotation without restarting anything.

gunicorn asks its `ssl_context` hook for a context on every new connection. `ReloadingContext`
answers with a cached `SSLContext` and rebuilds it when tls.crt or tls.key changed on disk
(`batchgate certs rotate`, or a Secret volume's `..data` swap). Connections already open keep
their session; the next handshake presents the new certificate. Both writers switch the pair
with one rename, and the pair is resolved to one directory before it is loaded, so a reader never
sees a new certificate with the old key; a pair written otherwise (two plain files, one after the
other) may still be caught half-way: it fails to load and the previous context is kept.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from pathlib import Path
from typing import Callable

log = logging.getLogger("batchgate.webhook.tls")

Signature = tuple[tuple[int, int, int, int], ...]


def _signature(paths: tuple[Path, ...]) -> Signature:
    stats = [os.stat(p) for p in paths]
    return tuple((s.st_dev, s.st_ino, s.st_mtime_ns, s.st_size) for s in stats)


class ReloadingContext:
    """A server SSLContext for a cert/key pair, rebuilt when either file changes."""

    def __init__(self, certfile: str | os.PathLike[str], keyfile: str | os.PathLike[str],
                 build: Callable[[], ssl.SSLContext] | None = None):
        self.paths = (Path(certfile), Path(keyfile))
        self._build = build or self._default_build
        self._lock = threading.Lock()
        self._signature: Signature | None = None
        self._context: ssl.SSLContext | None = None
        self.reloads = 0

    def _resolved(self) -> tuple[str, str]:
        """The files the pair points at now. Written as `batchgate certs rotate` or kubelet write
        them, tls.crt and tls.key are symlinks through one `..data` link that a rename switches;
        resolved at two moments they can straddle a switch, so look again until both lie in one
        directory (whose files never change)."""
        for _ in range(3):
            cert, key = (os.path.realpath(p) for p in self.paths)
            if os.path.dirname(cert) == os.path.dirname(key):
                break
        return cert, key

    def _default_build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load_pair(context)
        context.set_alpn_protocols(["http/1.1"])
        return context

    def _load_pair(self, context: ssl.SSLContext, attempts: int = 3) -> None:
        """Load the pair the links point at. A writer removes the pair before last once a new one
        is in place (as kubelet does), so a directory resolved just before two quick rotations can
        be gone when it is read: resolve again rather than report a load that was only late."""
        for attempt in range(attempts):
            certfile, keyfile = self._resolved()
            try:
                context.load_cert_chain(certfile=certfile, keyfile=keyfile)
                return
            except FileNotFoundError:
                if attempt == attempts - 1 or os.path.dirname(certfile) == os.path.dirname(self._resolved()[0]):
                    raise

    def get(self) -> ssl.SSLContext:
        """The context for the files as they are now (the previous one if they do not load)."""
        try:
            signature = _signature(self.paths)
        except OSError as exc:
            if self._context is None:
                raise
            log.error("cannot stat serving certificate, keeping the loaded one: %s", exc)
            return self._context
        if signature == self._signature and self._context is not None:
            return self._context
        with self._lock:
            if signature != self._signature or self._context is None:
                try:
                    context = self._build()
                except (OSError, ssl.SSLError) as exc:
                    if self._context is None:
                        raise
                    log.error("serving certificate did not load, keeping the previous one: %s", exc)
                    return self._context
                if self._context is not None:
                    self.reloads += 1
                    log.info("serving certificate reloaded from %s", self.paths[0])
                self._context, self._signature = context, signature
        return self._context
