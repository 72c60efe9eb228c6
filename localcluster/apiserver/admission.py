"""Call admission webhooks for every write, as kube-apiserver does.

Mutating configurations run first, sorted by name and their webhooks in order, each seeing the
previous one's patch; then validating webhooks run in parallel. The pure rules (matching, review
and reply checks, error wording) live in localcluster.apiserver.admission_match.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import errno
import os
import functools
import json
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from localcluster.apiserver.admission_match import (
    AdmissionAttributes,
    AdmissionDenied,
    Answer,
    BadPatch,
    CallError,
    apply_patch,
    conditions_hold,
    denial_status,
    dry_run_unsupported,
    in_version,
    internal_error,
    read_answer,
    review_request,
    review_version,
    sent_version,
    timeout_seconds,
    webhook_matches,
)
from localcluster.sim.endpoints import NoEndpoints

__all__ = ["AdmissionAttributes", "AdmissionDenied", "WebhookDispatcher"]

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
SAFE_ON_DRY_RUN = {"None", "NoneOnDryRun"}


class WebhookDispatcher:
    """Runs the configured webhooks for one request at a time (safe to share across requests)."""

    def __init__(
        self,
        list_configurations: Callable[[str], list[dict[str, Any]]],
        namespace_labels: Callable[[str], dict[str, str]],
        resolve_service: Callable[[str, str, int], list[tuple[str, int]]],
    ) -> None:
        """`resolve_service(namespace, name, port)` gives the local (host, port) addresses behind a
        Service reference, the preferred first; it raises `NoEndpoints` when the Service has no
        ready endpoint, LookupError when there is no such Service (the call fails as a DNS miss)."""
        self._configurations = list_configurations
        self._namespace_labels = namespace_labels
        self._resolve_service = resolve_service
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    async def close(self) -> None:
        """Close the kept-alive webhook connections (call on the loop that made the calls)."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    def _client(self) -> aiohttp.ClientSession:
        """One session per event loop, so connections to a webhook are kept alive as the apiserver does.
        Pooled connections are keyed by TLS context and server name, so no check is ever skipped."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            self._session = aiohttp.ClientSession()
            self._session_loop = loop
        return self._session

    async def admit(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                    old: dict[str, Any] | None, warnings: list[str] | None = None) -> dict[str, Any] | None:
        """Mutate then validate; return the (possibly patched) object or raise AdmissionDenied.

        Webhook warnings are appended to `warnings` for the caller's `Warning` headers.
        """
        obj = await self.mutate(attributes, obj, old, warnings)
        await self.validate(attributes, obj, old, warnings)
        return obj

    async def mutate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                     old: dict[str, Any] | None, warnings: list[str] | None = None) -> dict[str, Any] | None:
        """Mutating webhooks in name order; IfNeeded ones run once more if a later one changed the object."""
        hooks = self._matching(MUTATING, attributes, obj, old)
        after_call: dict[int, Any] = {}
        for index, hook in enumerate(hooks):
            obj = await self._mutate_once(hook, attributes, obj, old, warnings)
            if hook.get("reinvocationPolicy") == "IfNeeded":
                after_call[index] = copy.deepcopy(obj)
        for index, hook in enumerate(hooks):
            if index in after_call and after_call[index] != obj:
                obj = await self._mutate_once(hook, attributes, obj, old, warnings)
        return obj

    async def validate(self, attributes: AdmissionAttributes, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, warnings: list[str] | None = None) -> None:
        """Validating webhooks, all at once; the first refusal in configuration order wins."""
        hooks = self._matching(VALIDATING, attributes, obj, old)
        results = await asyncio.gather(
            *(self._consult(hook, attributes, obj, old, mutating=False) for hook in hooks),
            return_exceptions=True,
        )
        for hook, result in zip(hooks, results):
            if isinstance(result, BaseException):
                raise result
            if result is None:
                continue
            _collect(warnings, result)
            if not result.allowed:
                raise AdmissionDenied(denial_status(hook.get("name", ""), result.status))

    def _matching(self, kind: str, attrs: AdmissionAttributes, obj: dict[str, Any] | None,
                  old: dict[str, Any] | None) -> list[dict[str, Any]]:
        labels = self._namespace_labels(attrs.namespace) if attrs.namespace else None
        configurations = sorted(self._configurations(kind), key=lambda c: c.get("metadata", {}).get("name", ""))
        return [hook for configuration in configurations for hook in configuration.get("webhooks") or []
                if webhook_matches(hook, attrs, obj, old, labels)]

    async def _mutate_once(self, hook: dict[str, Any], attrs: AdmissionAttributes, obj: dict[str, Any] | None,
                           old: dict[str, Any] | None, warnings: list[str] | None) -> dict[str, Any] | None:
        name = hook.get("name", "")
        answer = await self._consult(hook, attrs, obj, old, mutating=True)
        if answer is None:
            return obj
        _collect(warnings, answer)
        if not answer.allowed:
            raise AdmissionDenied(denial_status(name, answer.status))
        if not answer.patch:
            return obj
        if obj is None or attrs.operation == "DELETE":
            raise AdmissionDenied(internal_error(f'admission webhook "{name}" returned a patch for a '
                                                 f"{attrs.operation} request, which has no object to patch"))
        sent = sent_version(hook, attrs)
        try:
            patched = apply_patch(in_version(obj, attrs.group, sent) or {}, answer.patch)
        except BadPatch as err:
            raise AdmissionDenied(internal_error(f'webhook "{name}": {err}')) from None
        return in_version(patched, attrs.group, attrs.version)

    async def _consult(self, hook: dict[str, Any], attrs: AdmissionAttributes, obj: dict[str, Any] | None,
                       old: dict[str, Any] | None, mutating: bool) -> Answer | None:
        """Call one webhook; None when a call failure is ignored by failurePolicy Ignore."""
        name = hook.get("name", "")
        sent = sent_version(hook, attrs)
        conditions = hook.get("matchConditions")
        if conditions:
            try:
                if not conditions_hold(conditions, review_request("v1", "", attrs, obj, old, sent)["request"]):
                    return None  # a false condition: the webhook is not called
            except CallError as err:
                return self._failed(hook, err)
        if attrs.dry_run and hook.get("sideEffects") not in SAFE_ON_DRY_RUN:
            raise AdmissionDenied(dry_run_unsupported(name))
        try:
            version = review_version(hook)
            uid = str(uuid.uuid4())
            body = json.dumps(review_request(version, uid, attrs, obj, old, sent)).encode()
            reply = await self._post(hook.get("clientConfig") or {}, body, timeout_seconds(hook))
            return read_answer(reply, version, uid, mutating)
        except BadPatch as err:
            raise AdmissionDenied(internal_error(f'webhook "{name}": {err}')) from None
        except CallError as err:
            return self._failed(hook, err)

    @staticmethod
    def _failed(hook: dict[str, Any], err: CallError) -> None:
        """A call failure: skipped with failurePolicy Ignore, else the request fails (500)."""
        if hook.get("failurePolicy") == "Ignore":
            return None
        raise AdmissionDenied(internal_error(f'failed calling webhook "{hook.get("name", "")}": {err}')) from None

    async def _post(self, client_config: dict[str, Any], body: bytes, timeout: int) -> bytes:
        target = self._target(client_config)
        url = f"{target.display}?timeout={timeout}s"
        if target.unavailable:
            raise CallError(f'failed to call webhook: Post "{url}": {target.unavailable}')
        if not target.dials:
            raise CallError(f'failed to call webhook: Post "{url}": dial tcp: lookup {target.server_name}: '
                            "no such host")
        ca_bundle = client_config.get("caBundle") or ""
        try:
            if not isinstance(ca_bundle, str):
                raise ValueError("caBundle must be a base64 string")
            context = _tls_context(ca_bundle)
        except (ValueError, ssl.SSLError) as err:
            raise CallError(f"invalid caBundle: {err}") from None
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*",
                   "Host": target.host_header}
        for index, dial in enumerate(target.dials):
            try:
                return await self._post_to(dial, url, body, headers, context, target.server_name, timeout)
            except _Refused as refused:
                if index == len(target.dials) - 1:  # every endpoint refused: report the last
                    raise CallError(f'failed to call webhook: Post "{url}": {refused}') from None
        raise CallError(f'failed to call webhook: Post "{url}": no address to dial')  # an empty address list

    async def _post_to(self, dial: str, url: str, body: bytes, headers: dict[str, str], context: ssl.SSLContext,
                       server_name: str, timeout: int) -> bytes:
        """One POST to one endpoint; a refused connection is `_Refused` so the next one is tried."""
        try:
            async with self._client().post(f"{dial}?timeout={timeout}s", data=body, headers=headers,
                                           ssl=context, server_hostname=server_name,
                                           timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                payload = await response.read()
                if not 200 <= response.status <= 206:
                    raise CallError(f'failed to call webhook: the server responded with HTTP '
                                    f'{response.status}: {payload[:200].decode("utf-8", "replace")}')
                content_type = response.headers.get("Content-Type", "")
                if not content_type.startswith("application/json"):
                    raise CallError(f"failed to call webhook: serializer for {content_type or 'an empty type'} "
                                    "doesn't exist")
                return payload
        except aiohttp.ClientConnectorError as err:
            if isinstance(err, aiohttp.ClientConnectorCertificateError) or \
                    getattr(err.os_error, "errno", None) != errno.ECONNREFUSED:
                raise CallError(f'failed to call webhook: Post "{url}": {_describe(err)}') from None
            raise _Refused(_describe(err)) from None
        except asyncio.TimeoutError:
            raise CallError(f'failed to call webhook: Post "{url}": context deadline exceeded') from None
        except aiohttp.ClientError as err:
            raise CallError(f'failed to call webhook: Post "{url}": {_describe(err)}') from None

    def _target(self, client_config: dict[str, Any]) -> "_Target":
        service = client_config.get("service")
        if isinstance(service, dict):
            namespace, name = service.get("namespace", ""), service.get("name", "")
            port = service.get("port") or 443
            path = service.get("path") or "/"
            server_name = f"{name}.{namespace}.svc"
            display = f"https://{server_name}:{port}{path}"
            try:
                addresses = self._resolve_service(namespace, name, port)
            except NoEndpoints as err:
                # kube-apiserver dials the Service's cluster IP (its default resolver), where
                # kube-proxy refuses a Service with no ready endpoint
                refused = f"dial tcp {err.cluster_ip}:{port}: connect: connection refused" if err.cluster_ip else str(err)
                return _Target(display, (), server_name, f"{server_name}:{port}", refused)
            except LookupError:
                return _Target(display, (), server_name, f"{server_name}:{port}")
            return _Target(display=display, dials=tuple(f"https://{h}:{p}{path}" for h, p in addresses),
                           server_name=server_name, host_header=f"{server_name}:{port}")
        url = client_config.get("url")
        if not isinstance(url, str) or not url:
            raise CallError("webhook has neither a service nor a url in clientConfig")
        parts = urlsplit(url)
        if parts.scheme != "https" or parts.query or parts.fragment or parts.username or not parts.hostname:
            raise CallError(f"webhook url {url!r} must be https with no user, query or fragment")
        return _Target(display=url, dials=(url,), server_name=parts.hostname, host_header=parts.netloc)


@dataclass(frozen=True)
class _Target:
    display: str  # the URL as kube-apiserver would dial it, for messages
    dials: tuple[str, ...]  # the URLs we actually connect to, in order; empty when there is no such service
    server_name: str  # the TLS name the certificate must carry
    host_header: str
    unavailable: str = ""  # the Service exists but has no ready endpoint: kube-apiserver's message


class _Refused(Exception):
    """A connection refused by one endpoint: the next one is tried, as through a Service."""


@functools.lru_cache(maxsize=64)
def _tls_context(ca_bundle: str) -> ssl.SSLContext:
    """Verify the webhook against caBundle (PEM, base64 in JSON) alone or, without one, the system
    roots; HTTP/1.1 forced by ALPN as kube-apiserver does. Cached: building one reads certificates."""
    if ca_bundle:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(cadata=base64.b64decode(ca_bundle, validate=True).decode("ascii"))
    else:
        context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


def _describe(err: aiohttp.ClientError) -> str:
    if isinstance(err, aiohttp.ClientConnectorCertificateError):
        return f"tls: failed to verify certificate: {err.certificate_error}"
    if isinstance(err, aiohttp.ClientConnectorError):
        code = getattr(err.os_error, "errno", None)
        reason = os.strerror(code).lower() if code else (err.os_error.strerror or str(err.os_error))
        return f"dial tcp {err.host}:{err.port}: connect: {reason}"  # Go's wording: "connection refused"
    return str(err) or type(err).__name__


def _collect(warnings: list[str] | None, answer: Answer) -> None:
    if warnings is not None:
        warnings.extend(answer.warnings)
