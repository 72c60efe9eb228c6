"""The ServiceAccount controller of kube-controller-manager: every active namespace has a
`default` ServiceAccount, made again if deleted, so pods that name none can get a token."""

from __future__ import annotations

import datetime as dt
from typing import Any

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller
from localcluster.runtime.client import NAMESPACES, SERVICEACCOUNTS, Api, ApiError
from localcluster.runtime.informers import SharedInformers

DEFAULT_ACCOUNT = "default"


class ServiceAccountsController(Controller):
    component = "serviceaccount-controller"
    workers = 2

    def __init__(self, ctx: ControllerContext, api: Api, shared: SharedInformers) -> None:
        super().__init__(ctx, api, shared)
        self.namespaces = self.informer(NAMESPACES, lambda kind, ns: self.queue.add(ns["metadata"]["name"]))
        self.accounts = self.informer(SERVICEACCOUNTS, self._on_account)

    def _on_account(self, kind: str, account: dict[str, Any]) -> None:
        if kind == "DELETED" and account["metadata"]["name"] == DEFAULT_ACCOUNT:
            self.queue.add(account["metadata"].get("namespace", ""))

    async def sync(self, key: str) -> dt.timedelta | None:
        namespace = self.namespaces.get("", key)
        if namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return None
        if self.accounts.get(key, DEFAULT_ACCOUNT) is not None:
            return None
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT_ACCOUNT, "namespace": key}}
        try:
            self.accounts.remember(await self.api.create(SERVICEACCOUNTS.path(key), body))
        except ApiError as err:
            if err.reason != "AlreadyExists" and err.status != 403:
                raise
        return None
