"""OpenAPI v3 (and a v2 document) describing every served group-version.

kubectl's default `--validate=strict` needs, per group-version, a PATCH operation tagged with
the object's GVK that accepts `fieldValidation`; `kubectl explain` needs each CRD's schema under
components.schemas, tagged with its GVK. Built-in kinds get operations without schemas, which
is enough for both and keeps the documents small.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from localcluster.apiserver.discovery import KUBE_VERSION
from localcluster.resources import Registry, ResourceType

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

_OBJECT_META_SCHEMA = {
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all "
                   "objects users must create.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Name must be unique within a namespace."},
        "namespace": {"type": "string", "description": "Namespace defines the space within which each name must be unique."},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""},
                   "description": "Map of string keys and values that can be used to organize and categorize objects."},
        "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""},
                        "description": "Annotations is an unstructured key value map."},
        "generateName": {"type": "string", "description": "An optional prefix used by the server to generate a unique name."},
        "uid": {"type": "string", "description": "UID is the unique in time and space value for this object."},
        "resourceVersion": {"type": "string", "description": "An opaque value that represents the internal version of this object."},
        "generation": {"type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state."},
        "creationTimestamp": {"type": "string", "format": "date-time", "description": "The time this object was created."},
        "deletionTimestamp": {"type": "string", "format": "date-time", "description": "The time this object will be deleted."},
        "finalizers": {"type": "array", "items": {"type": "string", "default": ""},
                       "description": "Must be empty before the object is deleted from the registry."},
        "ownerReferences": {"type": "array", "items": {"type": "object"},
                            "description": "List of objects depended by this object."},
    },
}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(rt: ResourceType) -> str:
    """The reverse-domain definition name a real server uses for a custom resource."""
    reversed_group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{reversed_group}.{rt.version}.{rt.kind}"


def _gvk(rt: ResourceType) -> list[dict[str, str]]:
    return [{"group": rt.group, "version": rt.version, "kind": rt.kind}]


def _schema_for(rt: ResourceType) -> dict[str, Any]:
    schema = json.loads(json.dumps(rt.schema or {"type": "object"}))
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema of this "
                           "representation of an object."}
    props["kind"] = {"type": "string", "description": "Kind is a string value representing the REST resource "
                     "this object represents."}
    props["metadata"] = {"allOf": [{"$ref": f"#/components/schemas/{OBJECT_META}"}],
                         "description": "Standard object's metadata."}
    schema["x-kubernetes-group-version-kind"] = _gvk(rt)
    return schema


def _operations(rt: ResourceType, schema_ref: str | None) -> dict[str, Any]:
    params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
              {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
              {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
    body = {"content": {"application/json": {"schema": {"$ref": schema_ref}}}} if schema_ref else None
    ok: dict[str, Any] = {"200": {"description": "OK"}}
    if body:
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}}
    operation = {"x-kubernetes-group-version-kind": _gvk(rt)[0], "parameters": params, "responses": ok}
    item: dict[str, Any] = {"get": {**operation, "x-kubernetes-action": "get"},
                            "put": {**operation, "x-kubernetes-action": "put"},
                            "patch": {**operation, "x-kubernetes-action": "patch"},
                            "delete": {**operation, "x-kubernetes-action": "delete"}}
    if body:
        item["put"]["requestBody"] = body
    return item


def v3_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {OBJECT_META: _OBJECT_META_SCHEMA}
    root = "/" + _gv_path(group, version)
    for rt in types:
        ref = None
        if rt.schema is not None:
            name = schema_name(rt)
            schemas[name] = _schema_for(rt)
            ref = f"#/components/schemas/{name}"
        base = f"{root}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{root}/{rt.plural}"
        paths[f"{base}/{{name}}"] = _operations(rt, ref)
        paths[base] = {"post": {"x-kubernetes-group-version-kind": _gvk(rt)[0], "x-kubernetes-action": "post",
                                "parameters": _operations(rt, ref)["patch"]["parameters"],
                                "responses": {"201": {"description": "Created"}}}}
        if "status" in rt.subresources:
            paths[f"{base}/{{name}}/status"] = _operations(rt, ref)
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": KUBE_VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}


def v3_index(registry: Registry) -> dict[str, Any]:
    paths = {}
    for group, versions in sorted(registry.group_versions().items()):
        for version in versions:
            document = v3_document(registry, group, version)
            digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32].upper()
            gv = _gv_path(group, version)
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
    return {"paths": paths}


def v2_document(registry: Registry) -> dict[str, Any]:
    definitions: dict[str, Any] = {OBJECT_META: _OBJECT_META_SCHEMA}
    for rt in registry.all():
        if rt.schema is not None:
            schema = _schema_for(rt)
            schema["properties"]["metadata"] = {"$ref": f"#/definitions/{OBJECT_META}"}
            definitions[schema_name(rt)] = schema
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": KUBE_VERSION["gitVersion"]},
            "paths": {}, "definitions": definitions}
