"""Shell completion: the candidates for a partly typed command line, read off the argparse tree,
and the bash and zsh scripts that ask the program for them (`kubectl-batchgate __complete WORDS`)."""

from __future__ import annotations

import argparse
from typing import Iterable



def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def candidates(tree: argparse.ArgumentParser, commands: Iterable[str], words: list[str]) -> list[str]:
    """What may come next: `words` are the words after the program, the last one being typed
    (empty at a fresh word). `commands` are the top-level names beside the tree's own verbs."""
    *done, current = words or [""]
    if not done:
        return sorted(c for c in {*commands, *_subcommands(tree)} if c.startswith(current))
    sub = _subcommands(tree).get(done[0])
    if sub is None:  # another batchgate command (check, review, ...): its own --help lists its flags
        return []
    options = {s: a for a in sub._actions for s in a.option_strings}
    previous = options.get(done[-1]) if len(done) > 1 else None
    if previous is not None and _takes_value(previous):
        return sorted(str(c) for c in previous.choices or () if str(c).startswith(current))
    if current.startswith("-"):
        return sorted(s for s in options if s.startswith(current))
    positionals = [a for a in sub._actions if not a.option_strings]
    given, skip = 0, False
    for word in done[1:]:
        if skip:
            skip = False
        elif word in options:
            skip = _takes_value(options[word])
        elif not word.startswith("-"):
            given += 1
    if given < len(positionals) and positionals[given].choices:
        return sorted(str(c) for c in positionals[given].choices or () if str(c).startswith(current))
    return []


BASH = """# bash completion for kubectl-batchgate and batchgate: source <(kubectl-batchgate completion bash)
_batchgate_complete() {
    local IFS=$'\\n'
    COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _batchgate_complete kubectl-batchgate batchgate
"""

ZSH = """#compdef kubectl-batchgate batchgate
# zsh completion for kubectl-batchgate and batchgate: source <(kubectl-batchgate completion zsh)
_batchgate_complete() {
    local -a candidates
    candidates=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    compadd -a candidates
}
compdef _batchgate_complete kubectl-batchgate batchgate
"""


def script(shell: str) -> str:
    return BASH if shell == "bash" else ZSH
