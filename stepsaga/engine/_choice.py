"""Choice rules: comparison operators, ``Is…`` type tests, ``And``/``Or``/``Not``.

A rule compiles to a predicate over the state's effective input and the context object.
Comparing values of the wrong type is ``false`` (as on AWS); a ``Variable`` that is not in
the input is a ``States.Runtime`` error except for ``IsPresent``.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from stepsaga.engine import _jsonata_eval as jsonata_eval
from stepsaga.engine._errors import StatesError, describe, runtime_error
from stepsaga.engine._paths import Path, PathNotFoundError, PathSyntaxError, parse
from stepsaga.engine._payload import Env, document

#: ``env -> matched``: ``env.input`` is the effective input (JSONPath) or raw input (JSONata).
Predicate = Callable[[Env], bool]


class ChoiceRuleError(ValueError):
    """A rule the engine cannot compile; ``field`` is its location inside ``Choices``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "Equals": operator.eq,
    "LessThan": operator.lt,
    "GreaterThan": operator.gt,
    "LessThanEquals": operator.le,
    "GreaterThanEquals": operator.ge,
}
_KINDS = ("String", "Numeric", "Timestamp")
_TYPE_TESTS = ("IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp")

COMPARISONS: frozenset[str] = frozenset(
    [f"{kind}{op}" for kind in _KINDS for op in _ORDER]
    + [f"{kind}{op}Path" for kind in _KINDS for op in _ORDER]
    + ["BooleanEquals", "BooleanEqualsPath", "StringMatches", *_TYPE_TESTS]
)


def compile_rule(rule: Any, field: str, *, top_level: bool) -> Predicate:
    """Compile one rule; top-level rules carry ``Next`` (checked by the loader)."""
    if not isinstance(rule, dict):
        raise ChoiceRuleError(field, "a choice rule must be an object")
    allowed = {"Comment"} | ({"Next", "Assign"} if top_level else set())
    keys = set(rule) - allowed
    boolean = keys & {"And", "Or", "Not"}
    if boolean:
        if len(keys) != 1:
            raise ChoiceRuleError(
                field, f"a boolean rule has exactly one of And/Or/Not, got {sorted(keys)}"
            )
        name = boolean.pop()
        return _compile_boolean(name, rule[name], f"{field}.{name}")
    if "Variable" not in keys:
        raise ChoiceRuleError(field, f"a rule needs Variable or And/Or/Not, got {sorted(keys)}")
    operators = keys - {"Variable"}
    unknown = operators - COMPARISONS
    if unknown:
        raise ChoiceRuleError(field, f"unsupported field(s) {sorted(unknown)}")
    if len(operators) != 1:
        raise ChoiceRuleError(
            field, f"a rule needs exactly one comparison operator, got {sorted(operators)}"
        )
    op = operators.pop()
    try:
        variable = parse(rule["Variable"])
    except (PathSyntaxError, TypeError) as exc:
        raise ChoiceRuleError(f"{field}.Variable", str(exc)) from None
    return _compile_comparison(variable, op, rule[op], f"{field}.{op}")


def _compile_boolean(name: str, value: Any, field: str) -> Predicate:
    if name == "Not":
        inner = compile_rule(value, field, top_level=False)
        return lambda env: not inner(env)
    if not isinstance(value, list) or not value:
        raise ChoiceRuleError(field, f"{name} needs a non-empty array of rules")
    rules = [compile_rule(r, f"{field}[{i}]", top_level=False) for i, r in enumerate(value)]
    if name == "And":
        return lambda env: all(r(env) for r in rules)
    return lambda env: any(r(env) for r in rules)


def _compile_comparison(variable: Path, op: str, expected: Any, field: str) -> Predicate:
    if op in _TYPE_TESTS:
        if not isinstance(expected, bool):
            raise ChoiceRuleError(field, f"{op} takes true or false")
        return _type_test(variable, op, expected)
    if op.endswith("Path"):
        try:
            other = parse(expected)
        except (PathSyntaxError, TypeError) as exc:
            raise ChoiceRuleError(field, str(exc)) from None
        test = _value_test(op[: -len("Path")], field)

        def compare_path(env: Env) -> bool:
            return test(_read(variable, env), _read(other, env))

        return compare_path
    _check_literal(op, expected, field)
    test = _value_test(op, field)
    if op.startswith("Timestamp"):
        expected = _timestamp(expected)
    return lambda env: test(_read(variable, env), expected)


def _check_literal(op: str, expected: Any, field: str) -> None:
    if op.startswith("String") and not isinstance(expected, str):
        raise ChoiceRuleError(field, f"{op} takes a string")
    if op.startswith("Numeric") and (
        isinstance(expected, bool) or not isinstance(expected, int | float)
    ):
        raise ChoiceRuleError(field, f"{op} takes a number")
    if op == "BooleanEquals" and not isinstance(expected, bool):
        raise ChoiceRuleError(field, f"{op} takes true or false")
    if op.startswith("Timestamp") and _timestamp(expected) is None:
        raise ChoiceRuleError(field, f"{op} takes an RFC 3339 timestamp")


def _value_test(op: str, field: str) -> Callable[[Any, Any], bool]:
    if op == "StringMatches":
        return _matcher()
    if op == "BooleanEquals":
        return lambda value, other: (
            isinstance(value, bool) and isinstance(other, bool) and value is other
        )
    for kind in _KINDS:
        if op.startswith(kind):
            return _ordered(kind, _ORDER[op[len(kind) :]])
    raise ChoiceRuleError(field, f"unsupported operator {op}")


def _ordered(kind: str, compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    if kind == "String":
        return lambda v, o: isinstance(v, str) and isinstance(o, str) and compare(v, o)
    if kind == "Numeric":
        return lambda v, o: _is_number(v) and _is_number(o) and compare(v, o)

    def timestamps(v: Any, o: Any) -> bool:
        left = _timestamp(v)
        right = o if isinstance(o, datetime) else _timestamp(o)
        return left is not None and right is not None and compare(left, right)

    return timestamps


def _matcher() -> Callable[[Any, Any], bool]:
    cache: dict[str, re.Pattern[str]] = {}

    def matches(value: Any, pattern: Any) -> bool:
        if not isinstance(value, str) or not isinstance(pattern, str):
            return False
        compiled = cache.get(pattern)
        if compiled is None:
            compiled = cache[pattern] = _wildcard(pattern)
        return compiled.fullmatch(value) is not None

    return matches


def _wildcard(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _type_test(variable: Path, op: str, expected: bool) -> Predicate:
    def test(env: Env) -> bool:
        if op == "IsPresent":
            try:
                source = document(variable, env.input, env.context, env.variables)
            except StatesError:  # an undefined variable is not present
                return not expected
            return variable.exists(source) is expected
        value = _read(variable, env)
        if op == "IsNull":
            result = value is None
        elif op == "IsNumeric":
            result = _is_number(value)
        elif op == "IsString":
            result = isinstance(value, str)
        elif op == "IsBoolean":
            result = isinstance(value, bool)
        else:
            result = _timestamp(value) is not None
        return result is expected

    return test


def _read(path: Path, env: Env) -> Any:
    try:
        return path.get(document(path, env.input, env.context, env.variables))
    except PathNotFoundError:
        raise runtime_error(
            f"Invalid path '{path.text}': The choice state's condition path references an "
            "invalid value."
        ) from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def _timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp with a zone (``Z`` or an offset), else ``None``."""
    if not isinstance(value, str) or _RFC3339.fullmatch(value) is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_timestamp(value: Any) -> datetime | None:
    return _timestamp(value)


def compile_condition(text: Any, field: str) -> Predicate:
    """A JSONata ``Condition``: an expression that must evaluate to true or false."""
    if not jsonata_eval.is_expression(text):
        raise ChoiceRuleError(field, "a Condition is a JSONata expression '{% … %}'")
    try:
        expression = jsonata_eval.compile_expression(text, field)
    except jsonata_eval.JsonataSyntaxError as exc:
        raise ChoiceRuleError(field, str(exc)) from None

    def test(env: Env) -> bool:
        value = expression.evaluate(env)
        if not isinstance(value, bool):
            raise expression.error(f"returned {describe(value)}, not a boolean")
        return value

    return test
