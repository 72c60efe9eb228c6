"""From (apiVersion, kind) to the REST resource that serves it, for whatever an AppWrapper wraps.

The kinds the controller knows are in `kube.RESOURCES`; any other wrapped kind is looked up once
through the API server's discovery document of its group/version and cached. A kind the server
does not serve is `NoMatch` — for component creation a fatal error, as upstream's NoKindMatch.
"""

from __future__ import annotations

import threading

from controller.adapters.kube import RESOURCES, ApiError, KubeClient, Resource


class NoMatch(Exception):
    """The API server serves no such kind (its CRD is not installed)."""


class ResourceResolver:
    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._known: dict[tuple[str, str], Resource] = {
            (r.api_version, r.kind): r for r in RESOURCES.values()
        }
        self._lock = threading.Lock()

    def resolve(self, api_version: str, kind: str) -> Resource:
        with self._lock:
            known = self._known.get((api_version, kind))
        if known is not None:
            return known
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            document = self.client.request("GET", path)
        except ApiError as exc:
            if exc.not_found:
                raise NoMatch(f'no matches for kind "{kind}" in version "{api_version}"') from None
            raise
        for entry in document.get("resources") or []:
            if entry.get("kind") == kind and "/" not in str(entry.get("name", "")):
                resource = Resource(kind, group, version, str(entry["name"]), bool(entry.get("namespaced", True)))
                with self._lock:
                    self._known[(api_version, kind)] = resource
                return resource
        raise NoMatch(f'no matches for kind "{kind}" in version "{api_version}"')
