"""Writes shared by the workload controllers: create pods and record it, delete pods, remove finalizers."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any, Iterable

import aiohttp

from localcluster.runtime.client import PODS, STRATEGIC_MERGE_PATCH, Api, ApiError, ignore_gone
from localcluster.runtime.events import record
from localcluster.runtime.informers import Informer

BATCH = 16


async def create_pods(api: Api, owner: dict[str, Any], pods: list[dict[str, Any]], cache: Informer, component: str,
                      now: dt.datetime) -> None:
    async def one(pod: dict[str, Any]) -> None:
        namespace = pod["metadata"]["namespace"]
        try:
            made = await api.create(PODS.path(namespace), pod)
        except ApiError as err:
            if err.reason == "AlreadyExists":
                return
            await record(api, owner, "Warning", "FailedCreate", f"Error creating: {err.message}", component, now)
            return
        cache.remember(made)
        await record(api, owner, "Normal", "SuccessfulCreate", f"Created pod: {made['metadata']['name']}", component, now)

    for i in range(0, len(pods), BATCH):
        await asyncio.gather(*(one(p) for p in pods[i:i + BATCH]))


async def delete_pods(api: Api, owner: dict[str, Any], namespace: str, names: Iterable[str], cache: Informer,
                      component: str, now: dt.datetime) -> None:
    for name in names:
        gone = await ignore_gone(api.delete(PODS.path(namespace, name)))
        if gone is not None:
            if gone.get("kind") == "Pod" and (gone.get("metadata") or {}).get("deletionTimestamp"):
                cache.remember(gone)  # still there, terminating
            else:
                cache.forget(namespace, name)
            await record(api, owner, "Normal", "SuccessfulDelete", f"Deleted pod: {name}", component, now)


async def remove_finalizer(api: Api, namespace: str, name: str, finalizer: str, cache: Informer) -> str | None:
    """Take `finalizer` off a pod whatever the cache holds: a strategic merge patch that deletes it
    from the list (`$deleteFromPrimitiveList`), as kube-controller-manager's Job controller does.

    None when it is off (or the pod is gone), else why not: a write that timed out or failed is
    reported, and the caller must not go on as if the finalizer were off.
    """
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}}
    try:
        cache.remember(await api.patch(PODS.path(namespace, name), patch, content_type=STRATEGIC_MERGE_PATCH))
    except ApiError as err:
        return None if err.status == 404 else str(err)
    except (aiohttp.ClientError, asyncio.TimeoutError) as err:
        return f"{type(err).__name__}: {err}"
    return None
