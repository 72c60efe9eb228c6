"""`batchgate <command>`: one entry point for every process and tool.

The command line is the composition root, so it is the one place in `batchgate/` that names the
I/O packages. It names them as strings and imports only the command that runs: `batchgate review`
never pays for aiohttp, and `batchgate/` itself stays importable without flask or kubernetes.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable

from batchgate.command_line import BadInput, fail, kubectl_plugin

# command -> (module:function taking argv and returning an exit code, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo.main:main", "run the main job: local cluster, gateway and controller, narrated"),
    "cluster": ("localcluster.cli:main", "run only the local cluster and write a kubeconfig"),
    "webhook": ("webhook.cli:main", "serve the admission gateway under gunicorn over TLS"),
    "controller": ("controller.cli:main", "run the reconcile controller"),
    "review": ("webhook.review_cli:main", "show offline what the gateway would do to a manifest"),
    "generate": ("batchgate.generator.cli:main", "write an AppWrapper from MLBatch's pytorchjob-generator settings"),
    "wrap": ("webhook.wrap_cli:main", "wrap a YAML of resources into one AppWrapper the policy admits"),
    "simulate": ("controller.simulate_cli:main", "run quota admission over a trace"),
    "certs": ("certs.cli:main", "make or rotate CA and serving certificates"),
    "check": ("controller.check_cli:main", "check capacity against quotas and explain pending work"),
    "migrate": ("controller.migrate.cli:main", "take a cluster over from Kueue and the AppWrapper controller"),
    "dashboard": ("dashboard.cli:main", "serve a live read-only web view of queues, AppWrappers and nodes"),
    # kubectl's plugin verbs (`kubectl batchgate VERB`, docs/kubectl-plugin.md)
    "list": ("controller.plugin.cli:list_", "list workloads, localqueues, clusterqueues or resourceflavors (kueuectl's columns)"),
    "stop": ("controller.plugin.cli:stop", "stop a workload, a localqueue or a clusterqueue"),
    "resume": ("controller.plugin.cli:resume", "resume a stopped workload, localqueue or clusterqueue"),
    "why": ("controller.plugin.cli:why_", "why a job, AppWrapper or Workload waits, and what would let it in"),
    "completion": ("controller.plugin.cli:completion", "print a bash or zsh completion script"),
}
# not in the usage: what the completion scripts call for candidates (controller/plugin/completion.py)
HIDDEN: dict[str, tuple[str, str]] = {"__complete": ("controller.plugin.cli:complete", "shell completion's candidates")}
# the plugin verbs' parser moves kubectl's global flags given before a command after it
VERB_FIRST = "controller.plugin.args:verb_first"
# batchgate's own top-level packages: one missing is a command left out of this build
_OURS = {target.split(".")[0] for target, _ in COMMANDS.values()}


def _usage(program: str) -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [f"usage: {program} <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_text}" for name, (_, help_text) in COMMANDS.items()]
    lines += ["", f"Run `{program} <command> --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    plugin = kubectl_plugin(sys.argv[0])
    program = "kubectl batchgate" if plugin else "batchgate"
    if args and args[0].startswith("-") and args[0] not in ("-h", "--help", "--version"):
        try:
            args = _function(VERB_FIRST)(args)
        except BadInput as exc:
            return fail("batchgate", str(exc))
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage(program))
        return 0 if args else 2
    if args[0] == "--version":
        from batchgate import __version__

        print(f"batchgate {__version__}")
        return 0
    command = COMMANDS.get(args[0]) or HIDDEN.get(args[0])
    if command is None:
        code = fail("batchgate", f"unknown command {args[0]!r}" + (": run `kubectl batchgate --help` for the commands"
                                                                    if plugin else ""))
        if not plugin:
            print(f"\n{_usage(program)}", file=sys.stderr)
        return code
    try:
        return int(_function(command[0])(args[1:]) or 0)
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:  # also from an import a command makes when it starts
        missing = (exc.name or "").split(".")[0]
        if not missing:
            raise
        if missing in _OURS:
            return fail("batchgate", f"command {args[0]!r} is not available in this build")
        return fail("batchgate", f"command {args[0]!r} needs the Python module {missing!r}, which is not installed "
                                 f"(`cluster` and `demo` need requirements-test.txt, the other commands requirements.txt)")


def _function(target: str) -> Callable[[list[str]], Any]:
    """`module:function`, imported when it runs (a ModuleNotFoundError says which command cannot)."""
    module_name, _, function = target.partition(":")
    return getattr(importlib.import_module(module_name), function)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
