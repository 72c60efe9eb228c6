"""Carrying out one probe or preStop hook against a process pod, as the kubelet's prober does:
httpGet (HTTPS without certificate checks), tcpSocket, or exec inside the pod's mount namespace.
Each returns (ok, message); nothing here raises for a dead or silent target."""

from __future__ import annotations

import asyncio
import os
import ssl

import aiohttp

from localcluster.sim.probes import Action, Exec, HttpGet, TcpSocket, http_ok

_UNVERIFIED = ssl.create_default_context()
_UNVERIFIED.check_hostname = False
_UNVERIFIED.verify_mode = ssl.CERT_NONE


def _reason(err: OSError) -> str:
    """Go's wording for a socket error: `connection refused`, not Python's `Connect call failed`."""
    return os.strerror(err.errno).lower() if err.errno else str(err)


async def _http(action: HttpGet, timeout: float) -> tuple[bool, str]:
    headers = {"User-Agent": "kube-probe/1.32", "Accept": "*/*", **dict(action.headers)}
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(action.url, headers=headers, allow_redirects=False,
                                   ssl=_UNVERIFIED if action.scheme == "HTTPS" else True,
                                   timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                body = (await response.content.read(1024)).decode("utf-8", "replace")
                if http_ok(response.status):
                    return True, ""
                return False, f"HTTP probe failed with statuscode: {response.status}{': ' + body if body else ''}"
    except asyncio.TimeoutError:
        return False, (f'Get "{action.url}": context deadline exceeded (Client.Timeout exceeded while awaiting '
                       "headers)")
    except aiohttp.ClientConnectorError as err:
        return False, f'Get "{action.url}": dial tcp {action.host}:{action.port}: connect: {_reason(err.os_error)}'
    except aiohttp.ClientError as err:
        return False, f'Get "{action.url}": {err or type(err).__name__}'


async def _tcp(action: TcpSocket, timeout: float) -> tuple[bool, str]:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(action.host, action.port), timeout)
    except asyncio.TimeoutError:
        return False, f"dial tcp {action.host}:{action.port}: i/o timeout"
    except OSError as err:
        return False, f"dial tcp {action.host}:{action.port}: connect: {_reason(err)}"
    writer.close()
    return True, ""


async def _exec(action: Exec, timeout: float, pid: int, env: dict[str, str]) -> tuple[bool, str]:
    if not action.command:
        return False, "exec probe has no command"
    try:
        proc = await asyncio.create_subprocess_exec("nsenter", "-m", "-t", str(pid), "--", *action.command, env=env,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    except OSError as err:
        return False, f"exec failed: {err.strerror or err}"
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return False, f"command timed out: \"{' '.join(action.command)}\" timed out after {timeout:g}s"
    if proc.returncode == 0:
        return True, ""
    text = output.decode("utf-8", "replace").strip()
    return False, f"command \"{' '.join(action.command)}\" exited with {proc.returncode}{': ' + text if text else ''}"


async def run(action: Action, timeout: float, pid: int, env: dict[str, str]) -> tuple[bool, str]:
    """One probe result; `pid` is the container's main process (exec runs in its namespaces)."""
    if isinstance(action, HttpGet):
        return await _http(action, timeout)
    if isinstance(action, TcpSocket):
        return await _tcp(action, timeout)
    return await _exec(action, timeout, pid, env)
