"""matchConditions CEL: the hand-written subset (localcluster/apiserver/cel.py) against cel-python.

For each expression of tests/localcluster/test_cel.py that both evaluate, prints the mean time of
one evaluation as the dispatcher does it (parse and evaluate per call; cel-python also with its
compiled program cached), and lists the expressions whose results differ: where cel-python
disagrees with CEL as kube-apiserver (cel-go) evaluates it. Never asserts.

Run: .venv/bin/python bench/cel_match_conditions.py [--rounds N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import celpy
from celpy import celtypes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for the expressions

from bench.machine_info import machine  # noqa: E402
from bench.timing import seconds_per_call  # noqa: E402
from localcluster.apiserver import cel  # noqa: E402
from tests.localcluster.test_cel import VALUES, VARIABLES  # noqa: E402


def _plain(value: Any) -> Any:
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, (celtypes.IntType, celtypes.UintType)):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    return value


def celpy_program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def celpy_evaluate(program: Any) -> Any:
    try:
        result = program.evaluate({k: celpy.json_to_cel(v) for k, v in VARIABLES.items()})
    except celpy.CELEvalError as exc:
        return f"error: {str(exc.args[0]).split(' (in activation', 1)[0]}"
    if isinstance(result, celpy.CELEvalError):
        return f"error: {str(result.args[0]).split(' (in activation', 1)[0]}"
    return _plain(result)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    print(f"{machine()}; {rounds} rounds per expression")
    print(f"{'expression':60} {'subset us':>10} {'celpy us':>10} {'celpy cached us':>16}")
    totals = [0.0, 0.0, 0.0]
    for param in VALUES:
        expression, expected = param.values
        program = celpy_program(expression)
        figures = (seconds_per_call(lambda: cel.evaluate(expression, VARIABLES), rounds) * 1e6,
                   seconds_per_call(lambda: celpy_evaluate(celpy_program(expression)), rounds) * 1e6,
                   seconds_per_call(lambda: celpy_evaluate(program), rounds) * 1e6)
        totals = [t + f for t, f in zip(totals, figures)]
        print(f"{param.id[:60]:60} {figures[0]:10.0f} {figures[1]:10.0f} {figures[2]:16.0f}")
        got = celpy_evaluate(program)
        if got != expected:
            print(f"  differs: cel-go and the subset give {expected!r}, cel-python gives {got!r}")
    n = len(VALUES)
    print(f"{'mean':60} {totals[0] / n:10.0f} {totals[1] / n:10.0f} {totals[2] / n:16.0f}")


if __name__ == "__main__":
    main()
