"""A small subset of CEL, enough for admission webhooks' `matchConditions`.

Supported: literals (strings, integers, floats, true/false/null, lists), field selection and
indexing, `has()`, `!`, `&&`, `||` (with CEL's absorption of errors by a decisive operand),
`?:`, comparisons, `in`, `+`/`-`, `size()`, and the methods `startsWith`, `endsWith`,
`contains`, `matches` (a Python regular expression), `exists` and `all`. Anything else, and any
runtime error (a missing field, a type mismatch), raises CelError, which the dispatcher treats
as an evaluation error subject to the webhook's failurePolicy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

TOKEN = re.compile(r"""
    \s*(?:
      (?P<number>\d+\.\d+|\d+)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>&&|\|\||==|!=|<=|>=|[<>!?:.,()\[\]+\-])
    )""", re.VERBOSE)
ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}
COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}
Node = tuple[Any, ...]


class CelError(ValueError):
    """An expression outside the supported subset, or one that fails when evaluated."""


def evaluate(expression: str, variables: dict[str, Any]) -> Any:
    try:
        return _Evaluator(variables).run(parse(expression))
    except RecursionError:
        raise CelError("the expression nests too deeply") from None


def parse(expression: str) -> Node:
    parser = _Parser(_tokens(expression))
    node = parser.expression()
    leftover = parser.peek()
    if leftover is not None:
        raise CelError(f"unexpected {leftover[1]!r}")
    return node


def _tokens(expression: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(expression):
        if expression[position:].strip() == "":
            break
        match = TOKEN.match(expression, position)
        if match is None or match.end() == position:
            raise CelError(f"cannot read {expression[position:position + 10]!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.position = tokens, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, text: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (text is not None and token[1] != text):
            raise CelError(f"expected {text or 'more'}, found {token[1] if token else 'the end'}")
        self.position += 1
        return token

    def accept(self, text: str) -> bool:
        token = self.peek()
        if token is not None and token[1] == text and token[0] in ("op", "name"):
            self.position += 1
            return True
        return False

    def expression(self) -> Node:
        condition = self.binary(0)
        if self.accept("?"):
            then = self.expression()
            self.take(":")
            return ("if", condition, then, self.expression())
        return condition

    LEVELS = [("||",), ("&&",), tuple(COMPARISONS) + ("in",), ("+", "-")]

    def binary(self, level: int) -> Node:
        if level == len(self.LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while (token := self.peek()) is not None and token[1] in self.LEVELS[level] and token[0] in ("op", "name"):
            self.position += 1
            left = (token[1], left, self.binary(level + 1))
        return left

    def unary(self) -> Node:
        if self.accept("!"):
            return ("!", self.unary())
        if self.accept("-"):
            return ("neg", self.unary())
        return self.member(self.primary())

    def member(self, node: Node) -> Node:
        while True:
            if self.accept("."):
                name = self.take()[1]
                if self.accept("("):
                    node = ("call", name, node, self.arguments(")"))
                else:
                    node = ("field", node, name)
            elif self.accept("["):
                node = ("index", node, self.expression())
                self.take("]")
            else:
                return node

    def arguments(self, closing: str) -> list[Node]:
        found: list[Node] = []
        while not self.accept(closing):
            found.append(self.expression())
            if not self.accept(","):
                self.take(closing)
                break
        return found

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "number":
            return ("value", float(text) if "." in text else int(text))
        if kind == "string":
            return ("value", re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), text[1:-1]))
        if kind == "name":
            if text in ("true", "false", "null"):
                return ("value", {"true": True, "false": False, "null": None}[text])
            if self.accept("("):
                return ("call", text, None, self.arguments(")"))
            return ("var", text)
        if text == "(":
            node = self.expression()
            self.take(")")
            return node
        if text == "[":
            return ("list", self.arguments("]"))
        raise CelError(f"unexpected {text!r}")


class _Evaluator:
    def __init__(self, variables: dict[str, Any]) -> None:
        self.scopes = [variables]

    def run(self, node: Node) -> Any:
        handlers: dict[str, Callable[[Node], Any]] = {
            "value": self._value, "var": self._var, "list": self._list, "field": self._field, "index": self._index,
            "call": self._call, "!": self._not, "neg": self._neg, "if": self._if_, "&&": self._and, "||": self._or,
            "in": self._in, "+": self._arith, "-": self._arith, **{op: self._compare for op in COMPARISONS},
        }
        return handlers[node[0]](node)

    def _value(self, node: Node) -> Any:
        return node[1]

    def _var(self, node: Node) -> Any:
        for scope in reversed(self.scopes):
            if node[1] in scope:
                return scope[node[1]]
        raise CelError(f"undeclared reference to {node[1]!r}")

    def _list(self, node: Node) -> Any:
        return [self.run(item) for item in node[1]]

    def _field(self, node: Node) -> Any:
        target = self.run(node[1])
        if not isinstance(target, dict):
            raise CelError(f"cannot select {node[2]!r} from {type(target).__name__}")
        if node[2] not in target:
            raise CelError(f"no such key: {node[2]}")
        return target[node[2]]

    def _index(self, node: Node) -> Any:
        target, key = self.run(node[1]), self.run(node[2])
        try:
            if isinstance(target, list) and not isinstance(key, int) or isinstance(key, bool):
                raise TypeError
            return target[key]
        except (KeyError, IndexError, TypeError):
            raise CelError(f"no such key: {key!r}") from None

    def _not(self, node: Node) -> Any:
        return not _boolean(self.run(node[1]))

    def _neg(self, node: Node) -> Any:
        value = self.run(node[1])
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CelError("no such overload: -" + type(value).__name__)
        return -value

    def _if_(self, node: Node) -> Any:
        return self.run(node[2]) if _boolean(self.run(node[1])) else self.run(node[3])

    def _and(self, node: Node) -> Any:
        return self._logic(node, decisive=False)

    def _or(self, node: Node) -> Any:
        return self._logic(node, decisive=True)

    def _logic(self, node: Node, decisive: bool) -> bool:
        """CEL's commutative && and ||: a decisive operand wins even over an error in the other."""
        error: CelError | None = None
        for operand in node[1:]:
            try:
                if _boolean(self.run(operand)) is decisive:
                    return decisive
            except CelError as err:
                error = error or err
        if error is not None:
            raise error
        return not decisive

    def _compare(self, node: Node) -> bool:
        left, right = self.run(node[1]), self.run(node[2])
        if node[0] in ("==", "!="):
            equal = type(left) is type(right) and left == right or (
                _number(left) and _number(right) and left == right)
            return equal if node[0] == "==" else not equal
        if not (_number(left) and _number(right)) and not (isinstance(left, str) and isinstance(right, str)):
            raise CelError(f"no such overload: {type(left).__name__} {node[0]} {type(right).__name__}")
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[node[0]]

    def _in(self, node: Node) -> bool:
        item, container = self.run(node[1]), self.run(node[2])
        if not isinstance(container, (list, dict)):
            raise CelError(f"no such overload: in {type(container).__name__}")
        return item in container

    def _arith(self, node: Node) -> Any:
        left, right = self.run(node[1]), self.run(node[2])
        if node[0] == "+" and type(left) is type(right) and isinstance(left, (str, list)):
            return left + right
        if _number(left) and _number(right):
            return left + right if node[0] == "+" else left - right
        raise CelError(f"no such overload: {type(left).__name__} {node[0]} {type(right).__name__}")

    def _call(self, node: Node) -> Any:
        name, target, arguments = node[1], node[2], node[3]
        if name == "has" and target is None:
            if len(arguments) != 1 or arguments[0][0] != "field":
                raise CelError("has() takes one field selection")
            owner = self.run(arguments[0][1])
            return isinstance(owner, dict) and arguments[0][2] in owner
        if name in ("exists", "all") and target is not None:
            return self._macro(name, self.run(target), arguments)
        values = [self.run(argument) for argument in arguments]
        subject = self.run(target) if target is not None else (values.pop(0) if values else None)
        method = METHODS.get((name, type(subject).__name__, len(values)))
        if method is None:
            raise CelError(f"no such overload: {name} on {type(subject).__name__}")
        return method(subject, *values)

    def _macro(self, name: str, subject: Any, arguments: list[Node]) -> bool:
        if len(arguments) != 2 or arguments[0][0] != "var" or not isinstance(subject, (list, dict)):
            raise CelError(f"{name}() takes a variable and a predicate over a list or map")
        results = []
        for item in subject:
            self.scopes.append({arguments[0][1]: item})
            try:
                results.append(_boolean(self.run(arguments[1])))
            finally:
                self.scopes.pop()
        return any(results) if name == "exists" else all(results)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise CelError(f"expected a bool, got {type(value).__name__}")
    return value


def _regex(subject: str, pattern: str) -> bool:
    try:
        return re.search(pattern, subject) is not None
    except re.error as err:
        raise CelError(f"invalid regular expression: {err}") from None


def _text(check: Callable[[str, str], bool]) -> Callable[[Any, Any], bool]:
    def method(subject: Any, argument: Any) -> bool:
        if not isinstance(argument, str):
            raise CelError("no such overload: a string method needs a string")
        return check(subject, argument)
    return method


METHODS: dict[tuple[str, str, int], Callable[..., Any]] = {
    ("startsWith", "str", 1): _text(str.startswith),
    ("endsWith", "str", 1): _text(str.endswith),
    ("contains", "str", 1): _text(lambda s, t: t in s),
    ("matches", "str", 1): _text(_regex),
    ("size", "str", 0): len, ("size", "list", 0): len, ("size", "dict", 0): len,
}
