"""Start `batchgate webhook` as a child process and wait until it serves (demo, tests, bench).

The child binds port 0 and prints the address it got, so nothing races for a fixed port.
Its stderr is drained by a thread (kept for error messages), so a chatty child never blocks.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from webhook.serving.client import GatewayClient

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"batchgate webhook serving https://(?P<host>[^:]+):(?P<port>\d+)")
START_TIMEOUT_SECONDS = 30.0


@dataclass
class RunningGateway:
    process: subprocess.Popen[bytes]
    host: str
    port: int
    cert_dir: Path
    stderr_lines: list[str] = field(default_factory=list)

    def client(self) -> GatewayClient:
        return GatewayClient(self.host, self.port, self.cert_dir / "ca.crt")

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode


def start_gateway(cert_dir: Path, *args: str, stdout: int | IO[bytes] = subprocess.DEVNULL,
                  timeout: float = START_TIMEOUT_SECONDS) -> RunningGateway:
    """`batchgate webhook --cert-dir DIR --port 0 --host 127.0.0.1 ARGS...`, once it listens."""
    command = [sys.executable, "-m", "batchgate.cli", "webhook", "--cert-dir", str(cert_dir),
               "--port", "0", "--host", "127.0.0.1", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, env=env)
    lines: list[str] = []
    found: dict[str, str] = {}
    ready = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace").rstrip()
            lines.append(line)
            match = SERVING.search(line)
            if match and not ready.is_set():
                found.update(match.groupdict())
                ready.set()
        ready.set()

    threading.Thread(target=drain, name="gateway-stderr", daemon=True).start()
    if not ready.wait(timeout) or not found:
        process.kill()
        process.wait()
        raise RuntimeError("batchgate webhook did not start:\n" + "\n".join(lines[-20:]))
    return RunningGateway(process, found["host"], int(found["port"]), cert_dir, lines)
