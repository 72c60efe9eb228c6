"""The comparison peer: a kopf mutating webhook doing the same mutation (our rules) over TLS.

Run by bench/webhook_load.py with a Python that has kopf (bench/requirements.txt), the
repository on PYTHONPATH:

    python bench/peer_kopf_webhook.py CERT_DIR    # prints: peer serving https://127.0.0.1:PORT/mutate

kopf normally needs a cluster (API discovery) before it serves webhooks. Here its registry,
insights (AppWrappers marked as served), memories and indices are wired by hand and kopf's own
`serve_admission_request` answers through `kopf.WebhookServer` (aiohttp, one process). These
are kopf internals, valid for the pinned kopf version. The handler runs `webhook.rules.mutate`
and hands the result to kopf's patch, which kopf turns into a JSON Patch by diffing, so both
gateways do the same work per review and differ only in the server around it.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import sys
from pathlib import Path
from typing import Any

import kopf
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.engines import admission, indexing
from kopf._core.intents import registries
from kopf._core.reactor import inventory

from batchgate.policy import DEFAULT_POLICY
from webhook import rules
from webhook.rules.review import AdmissionRequest, GroupVersionKind, UserInfo

APPWRAPPERS = references.Resource(group="workload.codeflare.dev", version="v1beta2", plural="appwrappers",
                                  kind="AppWrapper", namespaced=True, verbs=frozenset({"create", "update"}))
registry = registries.OperatorRegistry()


@kopf.on.mutate("workload.codeflare.dev", "v1beta2", "appwrappers", id="mutate", registry=registry)
def mutate(body: Any, patch: Any, userinfo: Any, operation: str, **_: Any) -> None:
    request = AdmissionRequest(
        uid="", kind=GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper"), operation=operation,
        user=UserInfo(userinfo.get("username", ""), userinfo.get("uid", ""), tuple(userinfo.get("groups") or ())),
        namespace=body.metadata.namespace or "default", name=body.metadata.name or "", object=dict(body))
    mutated = rules.mutate(request, DEFAULT_POLICY).object
    for key, value in (mutated or {}).items():
        if body.get(key) != value:
            patch[key] = value  # a merge patch of the changed subtrees; kopf diffs it into a JSON Patch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def serve(cert_dir: Path) -> None:
    settings = configuration.OperatorSettings()
    insights = references.Insights()
    insights.webhook_resources.add(APPWRAPPERS)
    insights.ready_resources.set()
    webhookfn = functools.partial(admission.serve_admission_request, settings=settings, registry=registry,
                                  insights=insights, memories=inventory.ResourceMemories(), memobase=kopf.Memo(),
                                  indices=indexing.OperatorIndexers().indices)
    port = free_port()
    server = kopf.WebhookServer(addr="127.0.0.1", port=port, certfile=str(cert_dir / "tls.crt"),
                                pkeyfile=str(cert_dir / "tls.key"))
    async for _ in server(webhookfn):
        print(f"peer serving https://127.0.0.1:{port}/mutate", file=sys.stderr, flush=True)


if __name__ == "__main__":
    asyncio.run(serve(Path(sys.argv[1])))
