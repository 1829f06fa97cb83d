"""ASL intrinsic functions (``States.Format(...)`` and friends) for ``.$`` fields.

Parsed once when the definition loads; a function the engine does not implement, or a call
with the wrong number of arguments, is refused then, naming the function. At run time a bad
argument raises ``States.Runtime`` with a cause naming the call, as AWS does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from stepsaga.engine._errors import describe, runtime_error
from stepsaga.engine._paths import Path, PathNotFoundError, PathSyntaxError, parse


class Resolver(Protocol):
    """What evaluating an argument needs: path lookups and the injected RNG."""

    rng: random.Random

    def resolve(self, path: Path) -> Any: ...


@dataclass(frozen=True)
class Literal:
    value: Any
    raw: str | None = None  # the escaped source of a string literal (Format templates)


@dataclass(frozen=True)
class PathArg:
    path: Path


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Literal | PathArg | Call, ...]
    text: str

    def evaluate(self, env: Resolver) -> Any:
        values = [_evaluate_arg(arg, env) for arg in self.args]
        try:
            return _FUNCTIONS[self.name].apply(self, values, env)
        except _ArgError as exc:
            raise runtime_error(
                f"The function '{self.text}' had the following error: {exc}"
            ) from None


Arg = Literal | PathArg | Call


def _evaluate_arg(arg: Arg, env: Resolver) -> Any:
    if isinstance(arg, Literal):
        return arg.value
    if isinstance(arg, PathArg):
        try:
            return env.resolve(arg.path)
        except PathNotFoundError:
            raise runtime_error(
                f"The JSONPath '{arg.path.text}' could not be found in the input"
            ) from None
    return arg.evaluate(env)


class _ArgError(ValueError):
    pass


@dataclass(frozen=True)
class _Function:
    min_args: int
    max_args: int | None
    apply: Callable[[Call, list[Any], Resolver], Any]


def looks_like_call(text: str) -> bool:
    return text.startswith("States.")


def parse_call(text: str) -> Call:
    """Parse ``States.Name(args…)``; raises ``ValueError`` naming what is wrong."""
    parser = _Parser(text)
    call = parser.call()
    parser.skip_spaces()
    if parser.pos != len(text):
        raise ValueError(f"{text!r}: unexpected text after the call at {parser.pos}")
    return call


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def call(self) -> Call:
        start = self.pos
        end = self.text.find("(", self.pos)
        if end < 0:
            raise ValueError(f"{self.text!r}: expected '(' after the function name")
        name = self.text[self.pos : end]
        if name not in _FUNCTIONS:
            raise ValueError(f"intrinsic function {name!r} is not supported")
        self.pos = end + 1
        args: list[Arg] = []
        self.skip_spaces()
        if self.peek() == ")":
            self.pos += 1
        else:
            while True:
                self.skip_spaces()
                args.append(self.arg())
                self.skip_spaces()
                ch = self.peek()
                self.pos += 1
                if ch == ")":
                    break
                if ch != ",":
                    raise ValueError(f"{self.text!r}: expected ',' or ')' at {self.pos - 1}")
        function = _FUNCTIONS[name]
        if len(args) < function.min_args or (
            function.max_args is not None and len(args) > function.max_args
        ):
            raise ValueError(f"{name} takes {_arity(function)} arguments, got {len(args)}")
        return Call(name=name, args=tuple(args), text=self.text[start : self.pos])

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def arg(self) -> Arg:
        ch = self.peek()
        if ch == "'":
            return self.string()
        if ch == "$":
            return self.path()
        if self.text.startswith("States.", self.pos):
            return self.call()
        end = self.pos
        while end < len(self.text) and self.text[end] not in ",) ":
            end += 1
        token = self.text[self.pos : end]
        self.pos = end
        if token in ("true", "false", "null"):
            return Literal(json.loads(token))
        try:
            return Literal(json.loads(token))
        except ValueError:
            raise ValueError(f"{self.text!r}: cannot read argument {token!r}") from None

    def string(self) -> Literal:
        self.pos += 1
        out: list[str] = []
        raw_start = self.pos
        while True:
            if self.pos >= len(self.text):
                raise ValueError(f"{self.text!r}: unterminated string literal")
            ch = self.text[self.pos]
            if ch == "\\" and self.pos + 1 < len(self.text):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if ch == "'":
                raw = self.text[raw_start : self.pos]
                self.pos += 1
                return Literal("".join(out), raw=raw)
            out.append(ch)
            self.pos += 1

    def path(self) -> PathArg:
        depth = 0
        quote = ""
        end = self.pos
        while end < len(self.text):
            ch = self.text[end]
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
            elif ch in ",) " and depth == 0:
                break
            end += 1
        token = self.text[self.pos : end]
        self.pos = end
        try:
            return PathArg(parse(token, reference=False))
        except PathSyntaxError as exc:
            raise ValueError(str(exc)) from None


def _arity(function: _Function) -> str:
    if function.max_args is None:
        return f"at least {function.min_args}"
    if function.min_args == function.max_args:
        return str(function.min_args)
    return f"{function.min_args} to {function.max_args}"


# --- the functions -----------------------------------------------------------------------


def _format(call: Call, values: list[Any], env: Resolver) -> str:
    template_arg = call.args[0]
    if not isinstance(values[0], str):
        raise _ArgError("the template must be a string")
    raw = template_arg.raw if isinstance(template_arg, Literal) and template_arg.raw else None
    pieces = _split_template(raw) if raw is not None else values[0].split("{}")
    args = values[1:]
    if len(pieces) - 1 != len(args):
        raise _ArgError(
            f"the template has {len(pieces) - 1} placeholders but {len(args)} arguments were given"
        )
    out = [pieces[0]]
    for piece, value in zip(pieces[1:], args, strict=True):
        out.append(format_value(value))
        out.append(piece)
    return "".join(out)


def format_value(value: Any) -> str:
    """How ``States.Format`` writes one argument. AWS documents strings only; objects and
    arrays are written as Step Functions' Java runtime prints them (``{a=1, b=[x, 2]}``:
    strings unquoted, no JSON escaping), the rendering LocalStack's AWS-snapshot-tested
    interpreter reproduces; numbers, booleans and null as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={format_value(item)}" for key, item in value.items()) + "}"
    return json.dumps(value)


def _split_template(raw: str) -> list[str]:
    """Split an escaped template on unescaped ``{}``; ``\\{`` and ``\\}`` are literal braces."""
    pieces: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            current.append(raw[i + 1])
            i += 2
        elif raw.startswith("{}", i):
            pieces.append("".join(current))
            current = []
            i += 2
        else:
            current.append(ch)
            i += 1
    pieces.append("".join(current))
    return pieces


def _string_to_json(call: Call, values: list[Any], env: Resolver) -> Any:
    if not isinstance(values[0], str):
        raise _ArgError("the argument must be a string")
    try:
        return json.loads(values[0])
    except ValueError as exc:
        raise _ArgError(f"invalid JSON: {exc}") from None


def _json_to_string(call: Call, values: list[Any], env: Resolver) -> str:
    return json.dumps(values[0], separators=(",", ":"), ensure_ascii=False)


def _array(call: Call, values: list[Any], env: Resolver) -> list[Any]:
    return list(values)


def _need_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _ArgError(f"expected an array, got {describe(value)}")
    return value


def _need_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise _ArgError(f"expected an integer, got {describe(value)}")
    return int(value)


def _array_length(call: Call, values: list[Any], env: Resolver) -> int:
    return len(_need_list(values[0]))


def _array_get_item(call: Call, values: list[Any], env: Resolver) -> Any:
    items, index = _need_list(values[0]), _need_int(values[1])
    if not 0 <= index < len(items):
        raise _ArgError(f"index {index} is out of bounds for an array of {len(items)}")
    return items[index]


def _array_contains(call: Call, values: list[Any], env: Resolver) -> bool:
    return any(_json_equal(item, values[1]) for item in _need_list(values[0]))


def _array_unique(call: Call, values: list[Any], env: Resolver) -> list[Any]:
    seen: list[Any] = []
    for item in _need_list(values[0]):
        if not any(_json_equal(item, other) for other in seen):
            seen.append(item)
    return seen


def _array_range(call: Call, values: list[Any], env: Resolver) -> list[int]:
    start, end, step = (_need_int(v) for v in values)
    if step == 0:
        raise _ArgError("the step cannot be 0")
    out = list(range(start, end + (1 if step > 0 else -1), step))
    if len(out) > 1000:
        raise _ArgError("the range has more than 1000 items")
    return out


def _array_partition(call: Call, values: list[Any], env: Resolver) -> list[list[Any]]:
    items, size = _need_list(values[0]), _need_int(values[1])
    if size < 1:
        raise _ArgError("the chunk size must be at least 1")
    return [items[i : i + size] for i in range(0, len(items), size)]


def _math_add(call: Call, values: list[Any], env: Resolver) -> int:
    return _need_int(values[0]) + _need_int(values[1])


def _math_random(call: Call, values: list[Any], env: Resolver) -> int:
    """An integer from start (inclusive) to end (exclusive); a seed makes it repeatable."""
    start, end = _need_int(values[0]), _need_int(values[1])
    if start >= end:
        raise _ArgError("the start must be smaller than the end")
    seeded = len(values) == 3  # a seed asks for a repeatable number, not a secret one
    source = random.Random(_need_int(values[2])) if seeded else env.rng  # noqa: S311
    return source.randrange(start, end)


def _string_split(call: Call, values: list[Any], env: Resolver) -> list[str]:
    """Split on any of the delimiter's characters; empty pieces are dropped (AWS's example
    ``States.StringSplit('This.is+a,test=string', '.+,=')`` gives five words)."""
    text, delimiters = values
    if not isinstance(text, str) or not isinstance(delimiters, str):
        raise _ArgError("both arguments must be strings")
    if not delimiters:
        return [text] if text else []
    pieces = re.split("[" + re.escape(delimiters) + "]", text)
    return [piece for piece in pieces if piece]


def _uuid(call: Call, values: list[Any], env: Resolver) -> str:
    return str(uuid.UUID(int=env.rng.getrandbits(128), version=4))


_HASHES = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
}


def _hash(call: Call, values: list[Any], env: Resolver) -> str:
    data, algorithm = values
    if algorithm not in _HASHES:
        raise _ArgError(f"unknown algorithm {algorithm!r}; use one of {', '.join(_HASHES)}")
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return hashlib.new(_HASHES[algorithm], text.encode()).hexdigest()


def _base64_encode(call: Call, values: list[Any], env: Resolver) -> str:
    if not isinstance(values[0], str):
        raise _ArgError("the argument must be a string")
    return base64.b64encode(values[0].encode()).decode()


def _base64_decode(call: Call, values: list[Any], env: Resolver) -> str:
    if not isinstance(values[0], str):
        raise _ArgError("the argument must be a string")
    try:
        return base64.b64decode(values[0], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise _ArgError(f"invalid base64: {exc}") from None


def _json_merge(call: Call, values: list[Any], env: Resolver) -> dict[str, Any]:
    left, right, deep = values
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise _ArgError("both arguments must be objects")
    if deep is not False:
        raise _ArgError("only a shallow merge (false) is supported, as on AWS")
    return {**left, **right}


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


_FUNCTIONS: dict[str, _Function] = {
    "States.Format": _Function(1, None, _format),
    "States.StringToJson": _Function(1, 1, _string_to_json),
    "States.JsonToString": _Function(1, 1, _json_to_string),
    "States.Array": _Function(0, None, _array),
    "States.ArrayLength": _Function(1, 1, _array_length),
    "States.ArrayGetItem": _Function(2, 2, _array_get_item),
    "States.ArrayContains": _Function(2, 2, _array_contains),
    "States.ArrayUnique": _Function(1, 1, _array_unique),
    "States.ArrayRange": _Function(3, 3, _array_range),
    "States.ArrayPartition": _Function(2, 2, _array_partition),
    "States.MathAdd": _Function(2, 2, _math_add),
    "States.MathRandom": _Function(2, 3, _math_random),
    "States.StringSplit": _Function(2, 2, _string_split),
    "States.UUID": _Function(0, 0, _uuid),
    "States.Hash": _Function(2, 2, _hash),
    "States.Base64Encode": _Function(1, 1, _base64_encode),
    "States.Base64Decode": _Function(1, 1, _base64_decode),
    "States.JsonMerge": _Function(3, 3, _json_merge),
}

#: The intrinsic functions the engine implements; any other is refused at load.
SUPPORTED: Sequence[str] = tuple(_FUNCTIONS)
