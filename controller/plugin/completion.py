"""Shell completion: what may come next on a partly typed command line, read off the argparse tree
(or, for an object's name, which list to ask the cluster), and the bash and zsh scripts that ask the
program for it (`kubectl-batchgate __complete WORDS`, answered as cobra's `__complete` answers).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from batchgate.api.objects import metadata
from batchgate.command_line import BadInput
from controller.plugin.args import STOPPABLE, WHY_KINDS, Connection, leading_flags

# cobra's directives, the last line of an answer (`:N`), as kubectl reads a plugin's completion
NO_SPACE, NO_FILE_COMP = 2, 4
# `why <TAB>`: the kinds, each completed up to its `/` (then `why job/<TAB>` lists the jobs)
WHY_WORDS = tuple(sorted({f"{kind.lower()}/" for kind in WHY_KINDS.values()}))


@dataclass(frozen=True)
class Names:
    """Object names come next: one list of `kind` through the flags on the line (namespace None:
    the context's), as `prefix` + name for those that start with `typed`."""
    kind: str
    verb: str
    typed: str
    prefix: str = ""
    connection: Connection = Connection(None, None, None, False)


@dataclass(frozen=True)
class Completion:
    words: tuple[str, ...] = ()
    directive: int = 0  # 0: the shell may complete file names (another command's words)
    names: Names | None = None


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _matching(choices: Iterable[Any], typed: str) -> Completion:
    return Completion(tuple(sorted(str(c) for c in choices if str(c).startswith(typed))), NO_FILE_COMP)


def complete(tree: argparse.ArgumentParser, commands: Iterable[str], words: list[str]) -> Completion:
    """What may come next: `words` are the words after the program, the last one being typed
    (empty at a fresh word). `commands` are the top-level names beside the tree's own verbs."""
    *done, current = words or [""]
    try:
        flags, at = leading_flags(done)
    except BadInput:  # a flag's value is being typed, or a flag the verb takes after it
        return _namespace_value(done, current)
    if at == len(done):
        return _matching({*commands, *_subcommands(tree)}, current)
    sub = _subcommands(tree).get(done[at])
    if sub is None:  # another batchgate command (check, review, ...): its own --help lists its flags
        return Completion()
    rest = [*flags, *done[at + 1:]]
    options = {s: a for a in sub._actions for s in a.option_strings}
    connection: dict[str, str] = {}
    positionals: list[str] = []
    skip: argparse.Action | None = None
    for word in rest:
        if skip is not None:
            connection[skip.dest] = word
            skip = None
        elif word.startswith("-"):
            name, eq, value = word.partition("=")
            if eq:
                connection[options[name].dest if name in options else name] = value
            elif word in options and _takes_value(options[word]):
                skip = options[word]
        else:
            positionals.append(word)
    if skip is not None:
        if skip.dest == "namespace":
            return Completion(names=_names("Namespace", "", current, connection))
        return _matching(skip.choices or (), current)
    if current.startswith("-"):
        return _matching(options, current)
    wanted = [a for a in sub._actions if not a.option_strings]
    if len(positionals) >= len(wanted):
        return Completion(directive=NO_FILE_COMP)
    action = wanted[len(positionals)]
    if action.dest == "name" and positionals[0] in STOPPABLE:
        return Completion(names=_names(STOPPABLE[positionals[0]], done[at], current, connection))
    if action.dest == "target":
        word, slash, typed = current.partition("/")
        if slash and word.lower() in WHY_KINDS:
            return Completion(names=_names(WHY_KINDS[word.lower()], done[at], typed, connection, f"{word}/"))
        return Completion(_matching(WHY_WORDS, current).words, NO_FILE_COMP | NO_SPACE)
    return _matching(action.choices or (), current)


def _namespace_value(done: list[str], current: str) -> Completion:
    """`-n <TAB>` before the verb: the namespaces (of the --context, --kubeconfig before it);
    another flag there: nothing."""
    if done and done[-1] in ("-n", "--namespace"):
        after = dict(zip(done[:-1], done[1:]))  # each word -> the next one
        connection = {flag.lstrip("-"): after[flag] for flag in ("--kubeconfig", "--context") if flag in after}
        return Completion(names=_names("Namespace", "", current, connection))
    return Completion(directive=NO_FILE_COMP)


def _names(kind: str, verb: str, typed: str, connection: Mapping[str, str], prefix: str = "") -> Names:
    return Names(kind, verb, typed, prefix, Connection(connection.get("kubeconfig"), connection.get("context"),
                                                       connection.get("namespace"), False))


def completable(names: Names, objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names to offer, as kueuectl offers them: `stop` what runs (an active Workload, a queue
    with no stopPolicy), `resume` what is stopped; anything for the other verbs."""
    def offered(obj: Mapping[str, Any]) -> bool:
        spec = obj.get("spec") or {}
        running = (spec.get("active", True) is not False if names.kind == "Workload"
                   else spec.get("stopPolicy", "None") in ("None", None))
        return names.verb not in ("stop", "resume") or running == (names.verb == "stop")

    found = (str(metadata(o).get("name", "")) for o in objects if offered(o))
    return sorted(f"{names.prefix}{name}" for name in found if name.startswith(names.typed))


def answer(completion: Completion, names: list[str]) -> str:
    """cobra's `__complete` answer: the candidates one a line, then `:DIRECTIVE`."""
    words = names if completion.names is not None else list(completion.words)
    directive = NO_FILE_COMP if completion.names is not None else completion.directive
    return "".join(f"{word}\n" for word in words) + f":{directive}\n"


BASH = """# bash completion for kubectl-batchgate and batchgate: source <(kubectl-batchgate completion bash)
_batchgate_complete() {
    local IFS=$'\\n' directive
    local -a out
    out=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
    directive=0
    if [[ ${#out[@]} -gt 0 && ${out[-1]} == :* ]]; then
        directive=${out[-1]#:}
        unset 'out[-1]'
    fi
    (( directive & 2 )) && compopt -o nospace 2>/dev/null
    (( directive & 4 )) && compopt +o default 2>/dev/null
    COMPREPLY=("${out[@]}")
}
complete -o default -F _batchgate_complete kubectl-batchgate batchgate
"""

ZSH = """#compdef kubectl-batchgate batchgate
# zsh completion for kubectl-batchgate and batchgate: source <(kubectl-batchgate completion zsh)
_batchgate_complete() {
    local -a out
    local directive=0
    out=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ ${out[-1]} == :* ]]; then
        directive=${out[-1]#:}
        out=("${(@)out[1,-2]}")
    fi
    out=(${out:#})
    if (( directive & 2 )); then
        compadd -S '' -a out
    else
        compadd -a out
    fi
    (( ${#out} || directive & 4 )) || _files
}
compdef _batchgate_complete kubectl-batchgate batchgate
"""


def script(shell: str) -> str:
    return BASH if shell == "bash" else ZSH
