"""Container probes as the kubelet's prober decides them: when to probe, what to call, and how
results count against `successThreshold`/`failureThreshold`.

Readiness starts failed and liveness succeeded; while a startup probe has not yet succeeded,
neither of the others runs. A probe whose result flips needs `threshold` results in a row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

Obj = Mapping[str, Any]
Kind = Literal["startup", "liveness", "readiness"]
KINDS: tuple[Kind, ...] = ("startup", "liveness", "readiness")


class ProbeError(ValueError):
    """A probe that cannot be carried out (e.g. a named port the container does not declare)."""


@dataclass(frozen=True)
class HttpGet:
    scheme: str
    host: str
    port: int
    path: str
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def url(self) -> str:
        return f"{self.scheme.lower()}://{self.host}:{self.port}{self.path}"


@dataclass(frozen=True)
class TcpSocket:
    host: str
    port: int


@dataclass(frozen=True)
class Exec:
    command: tuple[str, ...]


Action = HttpGet | TcpSocket | Exec


@dataclass(frozen=True)
class ProbeSpec:
    kind: Kind
    action: Action
    initial_delay: dt.timedelta
    period: dt.timedelta
    timeout: dt.timedelta
    success_threshold: int
    failure_threshold: int


@dataclass(frozen=True)
class ProbeState:
    ok: bool
    successes: int = 0
    failures: int = 0
    last_message: str = ""


def _seconds(value: Any, default: int, minimum: int) -> int:
    return max(int(value), minimum) if isinstance(value, int) and not isinstance(value, bool) else default


def _port(value: Any, container: Obj) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    for port in container.get("ports") or []:
        if port.get("name") == value:
            return int(port["containerPort"])
    raise ProbeError(f"port {value!r} is not a named port of container {container.get('name', '')!r}")


def handler_action(probe: Obj, container: Obj, pod_ip: str, what: str) -> Action:
    """What a probe or lifecycle hook does: an HTTP GET, a TCP connect or a command."""
    action: Action
    if isinstance(probe.get("httpGet"), Mapping):
        get = probe["httpGet"]
        path = str(get.get("path") or "/")
        headers = tuple((str(h.get("name", "")), str(h.get("value", ""))) for h in get.get("httpHeaders") or [])
        action = HttpGet(str(get.get("scheme") or "HTTP").upper(), str(get.get("host") or pod_ip),
                         _port(get.get("port"), container), path if path.startswith("/") else "/" + path, headers)
    elif isinstance(probe.get("tcpSocket"), Mapping):
        tcp = probe["tcpSocket"]
        action = TcpSocket(str(tcp.get("host") or pod_ip), _port(tcp.get("port"), container))
    elif isinstance(probe.get("exec"), Mapping):
        action = Exec(tuple(str(a) for a in probe["exec"].get("command") or []))
    else:
        raise ProbeError(f"{what} of container {container.get('name', '')!r} has no handler")
    return action


def probe_spec(container: Obj, kind: Kind, pod_ip: str) -> ProbeSpec | None:
    """The container's `<kind>Probe` with the API's defaults, or None if it has none."""
    probe = container.get(f"{kind}Probe")
    if not isinstance(probe, Mapping):
        return None
    action = handler_action(probe, container, pod_ip, f"{kind} probe")
    success = _seconds(probe.get("successThreshold"), 1, 1)
    return ProbeSpec(kind, action,
                     dt.timedelta(seconds=_seconds(probe.get("initialDelaySeconds"), 0, 0)),
                     dt.timedelta(seconds=_seconds(probe.get("periodSeconds"), 10, 1)),
                     dt.timedelta(seconds=_seconds(probe.get("timeoutSeconds"), 1, 1)),
                     1 if kind != "readiness" else success,
                     _seconds(probe.get("failureThreshold"), 3, 1))


def initial(kind: Kind) -> ProbeState:
    """Before the first result: liveness passes, readiness and startup do not."""
    return ProbeState(ok=kind == "liveness")


def record(spec: ProbeSpec, state: ProbeState, ok: bool, message: str = "") -> ProbeState:
    """Count one result; the probe's outcome flips only after threshold results in a row."""
    if ok:
        successes = state.successes + 1
        return replace(state, ok=state.ok or successes >= spec.success_threshold, successes=successes, failures=0,
                       last_message="")
    failures = state.failures + 1
    return replace(state, ok=state.ok and failures < spec.failure_threshold, successes=0, failures=failures,
                   last_message=message)


def http_ok(status: int) -> bool:
    """The kubelet's httpGet verdict: 200 <= code < 400."""
    return 200 <= status < 400


def active(kind: Kind, startup_done: bool) -> bool:
    """Liveness and readiness wait for the startup probe; the startup probe stops once it passed."""
    return not startup_done if kind == "startup" else startup_done


def failure_event(kind: Kind, message: str) -> str:
    return f"{kind.capitalize()} probe failed: {message}"


def kill_reason(kind: Kind, container: str) -> str:
    return f"Container {container} failed {kind} probe, will be restarted"
