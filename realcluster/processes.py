"""The control plane's programs as child processes: started with their log in the work dir,
ready when their health endpoint says so, stopped (TERM, then KILL) with nothing left behind.

A program that exits before it is ready fails the start with one line that names the cause as
its log gives it (a port taken, a data dir left by a crash) and where the whole log is.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STOP_SECONDS = 10.0
POLL_SECONDS = 0.1
HEALTH_CALL_SECONDS = 2.0


class StartError(RuntimeError):
    """A program did not become ready; the message says why in one line."""


_HANDED_OUT: set[int] = set()
_HANDED_OUT_LOCK = threading.Lock()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now and never handed out before in this process: a port is only bound when its
    program starts, so the kernel may offer a just-released one twice (a full run once gave etcd and
    kube-apiserver the same port)."""
    with _HANDED_OUT_LOCK:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether `port` cannot be bound on `host`; "0.0.0.0" asks as a program that listens on every
    address does (":9443"), which any listener on that port, at any loopback address, blocks."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def listeners(port: int, tables: Sequence[Path] = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))) -> list[str]:
    """The local addresses listening on `port`, as the kernel's socket tables list them: what a
    "port taken" message names, so that the holder can be found."""
    found = []
    for table in tables:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: TCP_LISTEN
                host = _address(address)
                found.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return sorted(set(found))


def _address(hex_address: str) -> str:
    """/proc/net/tcp's address: 32-bit words in host (little-endian) order."""
    raw = b"".join(int(hex_address[i:i + 8], 16).to_bytes(4, "little") for i in range(0, len(hex_address), 8))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


_CAUSES = (
    (re.compile(r"address already in use", re.I), "a port it needs is taken"),
    (re.compile(r"(?:resource temporarily unavailable|lock).*(?:member|\.lock|data)", re.I),
     "its data dir is locked by another etcd"),
)


def cause(log_tail: str) -> str:
    """The one line of a failed program's log that says why, with a known cause named. The frames
of a Go stack trace (an indented file line, or a function name with no space) are not reasons."""
    lines = [line.strip() for line in log_tail.splitlines() if " " in line.strip() and not line[:1].isspace()]
    for pattern, meaning in _CAUSES:
        for line in reversed(lines):
            if pattern.search(line):
                return f"{meaning}: {line[-300:]}"
    errors = [line for line in lines if re.search(r"\b(error|fatal|failed|panic)\b", line, re.I)]
    return (errors or lines or ["no output"])[-1][-300:]


@dataclass
class Program:
    name: str
    argv: Sequence[str]
    log: Path
    health_url: str
    ca_file: Path | None = None  # verify the health endpoint against this CA; None: no TLS check
    token: str = ""
    env: Mapping[str, str] | None = None  # its whole environment; None: this process's
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Program:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(list(self.argv), stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            env=None if self.env is None else dict(self.env))
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def healthy(self) -> bool:
        request = urllib.request.Request(self.health_url)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        context = None
        if self.health_url.startswith("https"):
            context = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else \
                ssl._create_unverified_context()  # noqa: S323 - a component's self-signed health port
        try:
            with urllib.request.urlopen(request, timeout=HEALTH_CALL_SECONDS, context=context) as reply:
                return bool(reply.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise StartError(f"{self.name} exited ({self.exit_code()}): {cause(self.log_tail())} "
                                 f"(log: {self.log})")
            if self.healthy():
                return
            time.sleep(POLL_SECONDS)
        raise StartError(f"{self.name} was not ready after {timeout:.0f} s: {cause(self.log_tail())} (log: {self.log})")

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_tail(self, size: int = 8192) -> str:
        try:
            with open(self.log, "rb") as handle:
                handle.seek(max(handle.seek(0, os.SEEK_END) - size, 0))
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, grace: float = STOP_SECONDS) -> None:
        """TERM the program's whole process group, KILL it after `grace` seconds."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
            try:
                os.killpg(process.pid, signum)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue

    def kill(self) -> None:
        """As a crash: KILL at once, nothing flushed."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self.process.wait(timeout=STOP_SECONDS)
