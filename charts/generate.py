"""Writes the Helm chart charts/batchgate from the kustomize overlays, so the chart and
`manifests/` are one source: every object is the overlay's (`kubectl kustomize`), and only the
values the chart offers become template expressions. `python -m charts.generate` after any edit
under manifests/; tests/charts/ fails while the committed chart differs from what this writes.

The objects: manifests/default's, each under `certificates: keeper`; where manifests/cert-manager
differs (the gateway without its keeper, annotated webhooks, cert-manager's Issuers and
Certificates), its version under `certificates: cert-manager`; manifests/monitoring's under
`monitoring.enabled`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from demo.kubectl import KUBECTL

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "manifests"
CHART = Path(__file__).resolve().parent / "batchgate"
NAMESPACE = "batchgate-system"
KEEPER, CERT_MANAGER = "keeper", "cert-manager"
IS_KEEPER = f'eq .Values.certificates "{KEEPER}"'
CRD_KEPT = "keep"  # helm.sh/resource-policy: uninstall leaves batchgate's CRDs and users' objects
# The containers whose resources and the Deployments whose replicas are values.
COMPONENTS = {"batchgate-webhook": ("webhook", "webhook"), "batchgate-controller": ("controller", "controller")}
SENTINEL = re.compile(r"'@@(\d+)@@'")


class GenerateError(Exception):
    """One line naming what the overlays hold that the chart cannot express."""


Object = dict[str, Any]


def object_key(obj: Object) -> tuple[str, str, str, str]:
    """What identifies an object in a cluster: group/version-free kind, namespace, name."""
    meta = obj["metadata"]
    return (obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else "", obj["kind"],
            meta.get("namespace", ""), meta["name"])


def kustomize(kubectl: str, overlay: Path) -> list[Object]:
    done = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise GenerateError(f"kubectl kustomize {overlay} failed: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str

    def reference(self) -> str:
        return f"{self.repository}:{self.tag}"


def shipped_image() -> Image:
    """The image manifests/image names (its `images:`, the one place it is set)."""
    (entry,) = yaml.safe_load((MANIFESTS / "image" / "kustomization.yaml").read_text())["images"]
    return Image(entry["newName"], str(entry["newTag"]))


@dataclass
class Template:
    """Objects dumped as YAML with markers where template expressions go."""

    exprs: list[tuple[str, str]] = field(default_factory=list)  # (scalar|block|labels, expression)

    def mark(self, how: str, expr: str) -> str:
        self.exprs.append((how, expr))
        return f"@@{len(self.exprs) - 1}@@"

    def render(self, obj: Object) -> str:
        text = yaml.safe_dump(obj, sort_keys=False, width=float("inf"), allow_unicode=True)
        text = text.replace("{{", '{{ "{{" }}')  # Grafana's and Prometheus' own {{...}} stay text
        return "\n".join(self._line(line) for line in text.splitlines()) + "\n"

    def _line(self, line: str) -> str:
        found = SENTINEL.search(line)
        if found is None:
            return line
        how, expr = self.exprs[int(found.group(1))]
        indent = len(line) - len(line.lstrip())
        if how == "scalar":
            return line[:found.start()] + "{{ " + expr + " }}" + line[found.end():]
        if how == "block":
            return f"{line[:found.start()].rstrip()}\n{' ' * (indent + 2)}{{{{- {expr} | nindent {indent + 2} }}}}"
        return f"{' ' * indent}{{{{- {expr} | nindent {indent} }}}}"


def templated(obj: Object, image: Image, out: Template) -> Object:
    """A copy of `obj` with the chart's values marked where they go."""
    obj = json.loads(json.dumps(obj))
    meta = obj["metadata"]
    meta["labels"] = {**meta.get("labels", {}), out.mark("labels", 'include "batchgate.labels" .'): ""}
    if obj["kind"] == "CustomResourceDefinition":
        meta["annotations"] = {**meta.get("annotations", {}), "helm.sh/resource-policy": CRD_KEPT}
    if obj["kind"] == "Deployment":
        component = COMPONENTS.get(meta["name"])
        if component:
            obj["spec"]["replicas"] = out.mark("scalar", f".Values.{component[0]}.replicas")
        for container in obj["spec"]["template"]["spec"]["containers"]:
            if container.get("image") == image.reference():
                container["image"] = out.mark("scalar", 'printf "%s:%s" .Values.image.repository '
                                                        ".Values.image.tag | toJson")
            if component and container["name"] == component[1]:
                container["resources"] = out.mark("block", f"toYaml .Values.{component[0]}.resources")
    if obj["kind"] == "ConfigMap" and meta["name"] == "batchgate-policy":
        obj["data"]["policy.yaml"] = out.mark("scalar", 'include "batchgate.policy" . | toJson')
    return obj


def guarded(condition: str | None, body: str, otherwise: str | None = None) -> str:
    if condition is None:
        return body
    text = f"{{{{- if {condition} }}}}\n{body}"
    if otherwise is not None:
        text += f"{{{{- else }}}}\n{otherwise}"
    return text + "{{- end }}\n"


def documents(default: Sequence[Object], cert_manager: Sequence[Object], monitoring: Sequence[Object],
              image: Image) -> dict[str, list[str]]:
    """Template documents per file (one file per kind), each under the values that choose it."""
    files: dict[str, list[str]] = {}
    managed = {object_key(o): o for o in cert_manager}
    keyed = {object_key(o) for o in default}

    def add(obj: Object, body: str) -> None:
        files.setdefault(f"{obj['kind'].lower()}.yaml", []).append(body)

    for obj in default:
        out = Template()
        other = managed.get(object_key(obj))
        if other == obj:
            add(obj, out.render(templated(obj, image, out)))
        elif other is None:
            add(obj, guarded(IS_KEEPER, out.render(templated(obj, image, out))))
        else:
            add(obj, guarded(IS_KEEPER, out.render(templated(obj, image, out)),
                             out.render(templated(other, image, out))))
    for obj in cert_manager:
        if object_key(obj) not in keyed:
            out = Template()
            add(obj, guarded(f'eq .Values.certificates "{CERT_MANAGER}"', out.render(templated(obj, image, out))))
    for obj in monitoring:
        if object_key(obj) in keyed:
            raise GenerateError(f"manifests/monitoring redefines {'/'.join(object_key(obj))}: it may only add objects")
        out = Template()
        add(obj, guarded(".Values.monitoring.enabled", out.render(templated(obj, image, out))))
    return files


def policy_text(default: Iterable[Object]) -> str:
    policy = next(o for o in default if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "batchgate-policy")
    text: str = policy["data"]["policy.yaml"]
    return text


def shipped_component(default: Iterable[Object], deployment: str, container: str) -> tuple[int, Object]:
    """A Deployment's replicas and its container's resources as manifests/default ships them."""
    obj = next(o for o in default if o["kind"] == "Deployment" and o["metadata"]["name"] == deployment)
    spec = obj["spec"]
    return spec["replicas"], next(c for c in spec["template"]["spec"]["containers"]
                                  if c["name"] == container).get("resources", {})


class Block(str):
    """A string values.yaml shows as a literal block (the policy, as an admin would write it)."""


class ValuesDumper(yaml.SafeDumper):
    """A dumper of its own, so that the Block representer never changes how yaml dumps elsewhere."""


ValuesDumper.add_representer(Block, lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text,
                                                                                  style="|"))


def dump(value: Any) -> str:
    return yaml.dump(value, Dumper=ValuesDumper, sort_keys=False, width=float("inf")).rstrip("\n")


def values_yaml(default: Sequence[Object], image: Image) -> str:
    """values.yaml: every default is what manifests/default installs."""
    lines = ["# Generated by `python -m charts.generate` from manifests/: edit those, then regenerate.",
             "# docs/install.md, \"Helm\", explains each value.", "",
             "# The product's image (manifests/image).", dump({"image": {"repository": image.repository,
                                                                        "tag": image.tag}}), ""]
    for deployment, (key, container) in COMPONENTS.items():
        replicas, wanted = shipped_component(default, deployment, container)
        lines += [f"# deployment/{deployment}: pods, and the resources of its {container} container.",
                  dump({key: {"replicas": replicas, "resources": wanted}}), ""]
    lines += ["# Which namespaces the gateway and the controller act in: null keeps the policy's own",
              "# managedNamespaces.selector; a label selector here replaces it in the policy.",
              "managedNamespaces:", "  selector: null", "",
              f"# Who keeps the gateway's serving certificate: {KEEPER} (the product's certificate keeper) or",
              f"# {CERT_MANAGER} (needs cert-manager v1 with its cainjector; manifests/cert-manager).",
              f"certificates: {KEEPER}", "",
              "# manifests/monitoring: metrics Services, ServiceMonitors, alerts, the Grafana dashboard and",
              "# `batchgate dashboard` (needs the Prometheus Operator's CRDs).",
              "monitoring:", "  enabled: false", "",
              "# The policy ConfigMap's policy.yaml (docs/policy.md); set yours with --set-file policy=FILE.",
              dump({"policy": Block(policy_text(default))}), ""]
    return "\n".join(lines)


def schema() -> dict[str, Any]:
    """values.schema.json: helm refuses a wrong value in one line naming it."""
    resources_schema = {"type": "object", "additionalProperties": False,
                        "properties": {"requests": {"type": "object"}, "limits": {"type": "object"},
                                       "claims": {"type": "array"}}}
    component = {"type": "object", "additionalProperties": False, "required": ["replicas", "resources"],
                 "properties": {"replicas": {"type": "integer", "minimum": 1}, "resources": resources_schema}}
    return {"$schema": "https://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
            "required": ["image", "webhook", "controller", "managedNamespaces", "certificates", "monitoring",
                         "policy"],
            "properties": {
                "image": {"type": "object", "additionalProperties": False, "required": ["repository", "tag"],
                          "properties": {"repository": {"type": "string", "minLength": 1},
                                         "tag": {"type": "string", "minLength": 1}}},
                "webhook": component, "controller": component,
                "managedNamespaces": {"type": "object", "additionalProperties": False, "properties": {
                    "selector": {"type": ["object", "null"], "additionalProperties": False, "properties": {
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "matchExpressions": {"type": "array"}}}}},
                "certificates": {"enum": [KEEPER, CERT_MANAGER]},
                "monitoring": {"type": "object", "additionalProperties": False,
                               "properties": {"enabled": {"type": "boolean"}}},
                "policy": {"type": "string"}}}


HELPERS = """{{/* Generated by `python -m charts.generate`. */}}
{{- define "batchgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The policy value, with managedNamespaces.selector replaced when that value is set. */}}
{{- define "batchgate.policy" -}}
{{- if .Values.managedNamespaces.selector -}}
{{- $policy := fromYaml .Values.policy -}}
{{- if hasKey $policy "Error" -}}
{{- fail (printf "policy: not YAML (%s): fix the policy value" (get $policy "Error")) -}}
{{- end -}}
{{- $managed := get $policy "managedNamespaces" | default dict -}}
{{- $_ := set $managed "selector" .Values.managedNamespaces.selector -}}
{{- $_ := set $policy "managedNamespaces" $managed -}}
{{- toYaml $policy }}
{{- else -}}
{{- .Values.policy -}}
{{- end -}}
{{- end }}
"""

CHART_YAML = """# Generated by `python -m charts.generate` from manifests/ (docs/install.md, "Helm").
apiVersion: v2
name: batchgate
description: Admission gateway and reconcile controller for ML batch workloads, MLBatch-compatible
type: application
version: {version}
appVersion: "{app}"
"""


def chart_files(kubectl: str) -> dict[str, str]:
    """Every file of the chart, by its path under charts/batchgate."""
    image = shipped_image()
    default = kustomize(kubectl, MANIFESTS / "default")
    if any(o["metadata"].get("namespace", NAMESPACE) != NAMESPACE for o in default):
        raise GenerateError(f"manifests/default puts objects outside {NAMESPACE}: the chart installs into it only")
    files = {"Chart.yaml": CHART_YAML.format(version=image.tag, app=image.tag),
             "values.yaml": values_yaml(default, image),
             "values.schema.json": json.dumps(schema(), indent=2) + "\n",
             "templates/_helpers.tpl": HELPERS}
    per_kind = documents(default, kustomize(kubectl, MANIFESTS / "cert-manager"),
                         kustomize(kubectl, MANIFESTS / "monitoring"), image)
    for name, docs in per_kind.items():
        files[f"templates/{name}"] = "# Generated by `python -m charts.generate` from manifests/.\n" + "---\n".join(docs)
    return files


def write(files: dict[str, str], chart: Path) -> None:
    """The chart directory holds exactly `files` (generated templates no longer made are removed)."""
    for stale in (chart / "templates").glob("*") if (chart / "templates").exists() else ():
        if f"templates/{stale.name}" not in files:
            stale.unlink()
    for name, text in files.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m charts.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", default=KUBECTL, help="the kubectl whose kustomize builds the overlays")
    parser.add_argument("--chart", type=Path, default=CHART, help="where to write the chart")
    args = parser.parse_args(argv)
    try:
        write(chart_files(args.kubectl), args.chart)
    except GenerateError as err:
        print(f"charts.generate: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
