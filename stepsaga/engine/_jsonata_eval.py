"""JSONata fields (``QueryLanguage: JSONata``), evaluated with the maintained jsonata-python.

A string field whose whole value is ``{% expression %}`` is JSONata; inside ``Arguments``,
``Output``, ``Assign``, ``ItemSelector`` and ``Items`` such strings may sit at any depth of
objects and arrays, everything else is copied as is. Expressions are parsed once, when the
definition loads (a syntax error is refused naming the state and field), and evaluated with
the bindings Step Functions gives them:

* ``$states`` — ``input`` (the state's raw input), ``context`` (the context object),
  ``result`` (Task/Parallel/Map, once it has one), ``errorOutput`` (in a ``Catch``);
* every workflow variable in scope, by name (``$orderId``);
* Step Functions' added functions ``$partition``, ``$range``, ``$hash``, ``$random``,
  ``$uuid``, ``$parse``; ``$eval`` is not available, as on AWS.

An expression that fails, or returns nothing (JSONata's *undefined*, which JSON cannot hold),
raises ``States.QueryEvaluationError`` naming the field, as AWS does. Unlike
``States.Runtime``, ``Retry`` and ``Catch`` handle it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any, Protocol, TypeGuard

from stepsaga.engine._errors import QueryEvaluationError, StatesError, describe
from stepsaga.errors import TemplateError

#: Step Functions' additions to JSONata (and the one function it removes).
ADDED_FUNCTIONS = ("$partition", "$range", "$hash", "$random", "$uuid", "$parse")
REMOVED_FUNCTIONS = ("$eval",)
_OPEN, _CLOSE = "{%", "%}"
_HASHES = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
}
_LOCK = threading.Lock()  # a compiled jsonata-python expression is not safe to share


@cache
def _jsonata() -> ModuleType:
    """jsonata-python, imported on first use. Its import raises the process's recursion
    limit to 10,000 (``sys.setrecursionlimit``, "like JavaScript"); that would change how
    deep every other parser in the process may go (case files rely on the default), so the
    limit is put back."""
    limit = sys.getrecursionlimit()
    try:
        import jsonata as library
    finally:
        sys.setrecursionlimit(limit)
    module: ModuleType = library
    return module


def _null() -> Any:
    return _jsonata().utils.Utils.NULL_VALUE


class Bindings(Protocol):
    """What an evaluation reads: the ``$states`` members, the variables, the RNG."""

    @property
    def variables(self) -> Mapping[str, Any]: ...

    @property
    def rng(self) -> random.Random: ...

    def states(self) -> dict[str, Any]: ...


class JsonataSyntaxError(ValueError):
    """An expression jsonata-python cannot parse, or one using a removed function."""


def is_expression(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith(_OPEN) and value.endswith(_CLOSE)


@dataclass(frozen=True)
class Expression:
    """One ``{% … %}`` string, parsed; ``field`` names where it sits, for error causes."""

    text: str
    field: str
    compiled: Any

    def evaluate(self, env: Bindings) -> Any:
        bound: dict[str, Any] = {
            name: _to_jsonata(_whole_numbers(v)) for name, v in env.variables.items()
        }
        bound["states"] = _whole_numbers(env.states())
        library = _jsonata()
        for name, function in _functions(env.rng).items():
            bound[name] = library.Jsonata.JLambda(function)
        try:
            with _LOCK:
                value = self.compiled.evaluate(None, bound)
        except library.jexception.JException as exc:
            raise self.error(f"returned an error: {exc}") from None
        except StatesError:
            raise
        except Exception as exc:  # the library's own slips (an AttributeError in
            # $formatNumber without a picture) are this expression's failure, not the engine's
            raise self.error(f"returned an error: {exc}") from None
        if value is None:
            raise self.error("returned nothing (undefined)")
        return _to_json(value, self)

    def error(self, what: str) -> QueryEvaluationError:
        return QueryEvaluationError(
            f"The JSONata expression '{self.text}' specified for the field '{self.field}' {what}",
            self.field,
        )


def compile_expression(text: str, field: str) -> Expression:
    body = text[len(_OPEN) : -len(_CLOSE)].strip()
    if not body:
        raise JsonataSyntaxError(f"{text!r} is an empty JSONata expression")
    for removed in REMOVED_FUNCTIONS:
        if f"{removed}(" in body.replace(" ", ""):
            raise JsonataSyntaxError(
                f"{removed} is not available in Step Functions' JSONata (use $parse)"
            )
    library = _jsonata()
    try:
        compiled = library.Jsonata(body)
    except library.jexception.JException as exc:
        raise JsonataSyntaxError(f"{text!r} is not a JSONata expression: {exc}") from None
    compiled.set_output_convert_nulls(False)
    return Expression(text=text, field=field, compiled=compiled)


Evaluator = Callable[[Bindings], Any]


@dataclass(frozen=True)
class Template:
    """A JSONata field's value: a constant, or JSON with expressions at any depth."""

    evaluate: Evaluator
    static: bool


def compile_template(value: Any, field: str) -> Template:
    evaluator, static = _compile(value, field)
    return Template(evaluate=evaluator, static=static)


def _compile(value: Any, field: str) -> tuple[Evaluator, bool]:
    if is_expression(value):
        try:
            expression = compile_expression(value, field)
        except JsonataSyntaxError as exc:
            raise TemplateError(str(exc), field=field) from None
        return expression.evaluate, False
    if isinstance(value, dict):
        parts = [(key, *_compile(child, f"{field}.{key}")) for key, child in value.items()]
        if all(static for _, _, static in parts):
            return (lambda env: value), True
        return (lambda env: {key: evaluate(env) for key, evaluate, _ in parts}), False
    if isinstance(value, list):
        items = [_compile(child, f"{field}[{i}]") for i, child in enumerate(value)]
        if all(static for _, static in items):
            return (lambda env: value), True
        return (lambda env: [evaluate(env) for evaluate, _ in items]), False
    return (lambda env: value), True


# --- values across the boundary ------------------------------------------------------------


def _whole_numbers(value: Any) -> Any:
    """JSON has one number type: ``1.0`` read from a payload is the number 1, which JSONata
    (JavaScript) writes as ``1`` (``$string``, ``&``). Python keeps it a float that
    jsonata-python would write as ``1.0``; found by the cross-check against npm jsonata."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


def _to_jsonata(value: Any) -> Any:
    """A bound ``None`` would read as *undefined*; JSON ``null`` is jsonata's NULL_VALUE."""
    return _null() if value is None else value


def _to_json(value: Any, expression: Expression) -> Any:
    if value is _null():
        return None
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise expression.error(f"returned a number JSON cannot hold ({value})")
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, int):
        return value
    # Inside objects and arrays JSONata has already dropped what was undefined: a None
    # there is a JSON null passed through from the input or a variable.
    if isinstance(value, Mapping):
        return {str(k): _to_json(v, expression) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_json(v, expression) for v in value]
    raise expression.error("returned an unsupported result type (a function?)")


def _plain(value: Any) -> Any:
    """Arguments jsonata-python passes our functions, as plain JSON values."""
    converted = _jsonata().utils.Utils.convert_nulls(value)
    if isinstance(converted, list):
        return [_plain(v) for v in converted]
    return converted


# --- Step Functions' added functions ---------------------------------------------------------


class _FunctionError(ValueError):
    pass


def _functions(rng: random.Random) -> dict[str, Callable[..., Any]]:
    def partition(array: Any = None, size: Any = None) -> list[list[Any]]:
        items, size = _plain(array), _plain(size)
        if not isinstance(items, list):
            raise _FunctionError("$partition: the first argument must be an array")
        chunk = _integer(size, "$partition", "the chunk size")
        if chunk < 1:
            raise _FunctionError("$partition: the chunk size must be at least 1")
        return [items[i : i + chunk] for i in range(0, len(items), chunk)]

    def range_(start: Any = None, end: Any = None, step: Any = None) -> list[int]:
        first = _integer(_plain(start), "$range", "start")
        last = _integer(_plain(end), "$range", "end")
        by = _integer(_plain(step), "$range", "step")
        if by == 0:
            raise _FunctionError("$range: the step cannot be 0")
        values = list(range(first, last + (1 if by > 0 else -1), by))
        if len(values) > 1000:
            raise _FunctionError("$range: the range has more than 1000 items")
        return values

    def hash_(data: Any = None, algorithm: Any = None) -> str:
        text, name = _plain(data), _plain(algorithm)
        if name not in _HASHES:
            raise _FunctionError(f"$hash: unknown algorithm {name!r} ({', '.join(_HASHES)})")
        if not isinstance(text, str):
            text = json.dumps(text, separators=(",", ":"))
        return hashlib.new(_HASHES[name], text.encode()).hexdigest()

    def random_(seed: Any = None) -> float:
        seed = _plain(seed)
        # a seeded PRNG is what $random(seed) promises (repeatable), not a secret
        seeded = seed is not None
        source = random.Random(_integer(seed, "$random", "the seed")) if seeded else rng  # noqa: S311
        return source.random()

    def uuid_() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    def parse(text: Any = None) -> Any:
        value = _plain(text)
        if not isinstance(value, str):
            raise _FunctionError(f"$parse: expected a JSON string, got {describe(value)}")
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise _FunctionError(f"$parse: invalid JSON: {exc}") from None
        return _to_jsonata(parsed)

    return {
        "partition": partition,
        "range": range_,
        "hash": hash_,
        "random": random_,
        "uuid": uuid_,
        "parse": parse,
    }


def _integer(value: Any, function: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise _FunctionError(f"{function}: {what} must be an integer, got {describe(value)}")
    return int(value)
