"""Scene 1: the samples (demo/samples/USER/*.yaml, the shapes MLBatch users submit) submitted with
kubectl by alice and bob, through the gateway.

Each file goes through `kubectl create --dry-run=server`: the API server runs the whole
admission chain (the gateway's /mutate and /validate included) and answers with the object it
would store, or kubectl prints the denial. Nothing is kept, so the samples' AppWrappers (which
would hold quota with nothing to run them: the AppWrapper controller has not landed) leave the
queues of scene 2 empty.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from demo.changes import gateway_changes, summarize
from demo.kubectl import Kubectl
from demo.narration import Narrator

SAMPLES = Path(__file__).resolve().with_name("samples")
# (user, namespace): each submits the files of the samples folder named after them.
SUBMISSIONS = (("alice", "team-a"), ("bob", "team-b"))


@dataclass(frozen=True)
class Outcome:
    user: str
    source: str
    allowed: bool
    lines: tuple[str, ...]  # a one-line account, then kubectl's denial verbatim if denied


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict) and "kind" in d]


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or f"{meta.get('generateName', '')}*")


def _stored(reply: str) -> list[dict[str, Any]]:
    answer = json.loads(reply)
    return answer["items"] if answer.get("kind") == "List" else [answer]


def submit(kubectl: Kubectl, user: str, namespace: str, path: Path, source: str) -> Outcome:
    """Dry-run create one sample file as `user`; the account of what the gateway did to it: what
    changed, less what the same file gets as admin (exempt from the gateway by the policy's
    system:masters), which is the API server's own defaulting."""
    submitted = _documents(path)
    dry_run = ("create", "--dry-run=server", "-o", "json", "-n", namespace, "-f", str(path))
    done = kubectl.run(*dry_run, user=user, check=False)
    kinds = ", ".join(f"{d['kind']} {_name(d)}" for d in submitted)
    if done.returncode != 0:
        return Outcome(user, source, False, (f"{user:<5} {kinds} ({source}): denied, kubectl says:",
                                             *done.stderr.strip().splitlines()))
    ungated = _stored(kubectl.run(*dry_run).stdout)
    lines = [f"{user:<5} {obj['kind']} {_name(obj)} ({source}): {summarize(gateway_changes(obj, back, alone))}"
             for obj, back, alone in zip(submitted, _stored(done.stdout), ungated)]
    return Outcome(user, source, True, tuple(lines))


def sample_files(samples: Path, user: str) -> list[Path]:
    return sorted(p for p in (samples / user).glob("*.yaml") if p.is_file())


def run(kubectl: Kubectl, narrator: Narrator, samples: Path) -> list[Outcome]:
    shown = os.path.relpath(samples) if samples.is_relative_to(Path.cwd()) else str(samples)
    narrator.say(f"alice (team-a) and bob (team-b) submit the samples in {shown}/alice and {shown}/bob with kubectl "
                 "(server-side dry run: the full admission chain, nothing kept); what the gateway changed:")
    outcomes = []
    for user, namespace in SUBMISSIONS:
        for path in sample_files(samples, user):
            outcome = submit(kubectl, user, namespace, path, f"{user}/{path.name}")
            outcomes.append(outcome)
            narrator.quote(outcome.lines[0])
            for line in outcome.lines[1:]:
                narrator.quote(f"    {line}")
    denied = sum(not o.allowed for o in outcomes)
    narrator.say(f"{len(outcomes) - denied} samples admitted (with labels, scheduler and suspend added), {denied} denied")
    return outcomes
