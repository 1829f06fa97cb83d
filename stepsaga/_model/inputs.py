"""Reading untrusted input at the boundary: JSON files and pydantic errors as one line.

Case files, faults files, mock configs and handler events all fail the same way: one
``InvalidInputError`` whose message names the field and fits on one line, however hostile the
input. A JSON file is read only if it is a regular file (a FIFO or a device would block or
never end) — or, given as ``-``, from standard input, with the same size bound — and
decoded strictly: a key repeated in one object, ``NaN``/``Infinity``, and
numbers that a Python ``int``/``float`` would not hold exactly are refused, because each of
them silently changes what the file says (the last duplicate wins; ``19.99…9`` becomes 20).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import ValidationError

from stepsaga.errors import InvalidInputError

T = TypeVar("T")

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def _location_part(part: str | int) -> str:
    """Unknown keys come from the input and may hold newlines or be huge: quote and cut."""
    text = str(part)
    return text if _PLAIN_NAME.match(text) else json.dumps(text[:40])


def describe_validation_error(exc: ValidationError, default: str = "input") -> tuple[str, str]:
    """``(field, one line)`` naming the first offending field, e.g. ``refund.amount: …``."""
    first = exc.errors()[0]
    field = ".".join(_location_part(part) for part in first["loc"]) or default
    message = " ".join(first["msg"].removeprefix("Value error, ").split())
    return field, f"{field}: {message}"


#: The most problems one refusal lists (one line each); the rest are counted.
MAX_PROBLEMS = 20


def describe_validation_errors(
    exc: ValidationError, data: object, default: str = "input"
) -> list[tuple[str, str]]:
    """``(field, one line)`` for every field with a problem, in the order pydantic found
    them: one line per field (its first message), so a union's members, each refusing the
    same value, read as the one field they are."""
    found: dict[str, str] = {}
    for error in exc.errors():
        path = _input_path(error["loc"], data, error["type"], error.get("input"))
        field = ".".join(_location_part(part) for part in path) or default
        if field not in found:
            message = " ".join(error["msg"].removeprefix("Value error, ").split())
            found[field] = f"{field}: {message}"
    return list(found.items())


def _input_path(
    loc: tuple[str | int, ...], data: object, kind: str, value: object
) -> tuple[str | int, ...]:
    """``loc`` cut where it stops naming places in the input. A union's members report
    the same ``value`` under their tags (``amount.decimal``, ``amount.int``): a part that
    is not in the input, under a node that is the very value refused, is such a tag. A
    key missing from an object (``kind`` ``missing``) or refused on its own is a field."""
    node = data
    for depth, part in enumerate(loc):
        if isinstance(node, dict) and isinstance(part, str):
            if part in node:
                node = node[part]
                continue
            if kind == "missing" or not _same(value, node):
                node = None
                continue
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            continue
        elif not _same(value, node):
            continue
        return loc[:depth]
    return loc


def _same(value: object, node: object) -> bool:
    try:
        return value is node or bool(value == node)
    except Exception:  # an exotic value's __eq__: treat it as another value
        return False


def validate_object(validate: Callable[[dict[str, Any]], T], data: object, what: str) -> T:
    """Run a pydantic validator on decoded JSON that must be an object. A failure is one
    ``InvalidInputError`` naming every field with a problem: its message is one line (the
    fields' lines joined with ``; ``), ``field`` is the first field, and ``problems`` holds
    one line per field (at most :data:`MAX_PROBLEMS`), which the CLI prints one a line."""
    if not isinstance(data, dict):
        raise InvalidInputError(f"{what}: must be a JSON object", field=what)
    try:
        return validate(data)
    except ValidationError as exc:
        found = describe_validation_errors(exc, data, what)
        lines = [line for _, line in found[:MAX_PROBLEMS]]
        if len(found) > MAX_PROBLEMS:
            lines.append(f"{what}: {len(found) - MAX_PROBLEMS} more problems not shown")
        raise InvalidInputError("; ".join(lines), field=found[0][0], problems=lines) from None


#: The longest number literal a JSON input may hold (longer ones are no amount, count or
#: time anyone means; ``int()`` of 4,300+ digits would raise).
MAX_NUMBER_CHARS = 100

_FILE_KINDS = (
    (stat.S_ISFIFO, "named pipe (FIFO)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


#: The path that means standard input (as ``cat -``); a file named ``-`` is ``./-``.
STDIN = "-"
_STDIN_SHOWN = "<stdin>"


def is_stdin(path: str | Path) -> bool:
    return str(path) == STDIN


def read_json_file(
    path: Path, *, what: str, max_bytes: int, stdin: BinaryIO | None = None
) -> object:
    """Read and decode a JSON file of at most ``max_bytes``; every failure is one line.

    The file must be a regular file: it is checked before opening and again on the open
    descriptor (opened non-blocking, so a FIFO swapped in between cannot hang the read).
    ``-`` reads standard input instead (``stdin``, default ``sys.stdin.buffer``) until
    its end, refusing it as soon as it holds more than ``max_bytes``: whoever pipes it in
    chose to, and the bound keeps an endless pipe from filling memory."""
    if is_stdin(path):
        shown = _STDIN_SHOWN
        raw = _read_stream(stdin if stdin is not None else sys.stdin.buffer, shown, max_bytes)
    else:
        shown = _shown(path)
        raw = _read_regular(path, shown, what, max_bytes)
    if not raw.strip():
        raise InvalidInputError(f"{shown}: empty file", field="path")
    try:
        return _decode(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{shown}: not UTF-8 (byte {exc.start})", field="path") from None
    except RecursionError:
        raise InvalidInputError(f"{shown}: JSON nested too deeply", field="path") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{shown}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            field="path",
        ) from None
    except _RefusedError as exc:
        raise InvalidInputError(f"{shown}: {exc.message}", field=exc.field) from None


def loads_strict(text: str, *, what: str = "input") -> object:
    """``json.loads`` with the file rules (duplicate keys, ``NaN``, inexact numbers refused)."""
    try:
        return _decode(text)
    except _RefusedError as exc:
        raise InvalidInputError(f"{what}: {exc.message}", field=exc.field) from None


def _shown(path: Path) -> str:
    """A path as an error line shows it: quoted when it could break the line."""
    text = str(path)
    return text if text.isprintable() and len(text) <= 500 else json.dumps(text[:500])


def _read_regular(path: Path, shown: str, what: str, max_bytes: int) -> bytes:
    try:
        kind = _not_regular(os.stat(path).st_mode, what)
        if kind is None:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            try:
                kind = _not_regular(os.fstat(fd).st_mode, what)
                if kind is None:
                    return _read_at_most(fd, shown, max_bytes)
            finally:
                os.close(fd)
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidInputError(f"{shown}: no such file", field="path") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidInputError(f"{shown}: cannot read ({reason})", field="path") from None
    raise InvalidInputError(f"{shown}: {kind}", field="path")


def _not_regular(mode: int, what: str) -> str | None:
    """Why a file of this mode is refused (``None``: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"is a directory, not a {what}"
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "special file")
    return f"is a {kind}, not a regular file; give the {what} itself"


def _read_stream(stream: BinaryIO, shown: str, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= max_bytes:
            chunk = stream.read(min(65_536, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError) as exc:  # closed, or not readable
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise InvalidInputError(f"{shown}: cannot read ({reason})", field="path") from None
    if size > max_bytes:
        raise InvalidInputError(f"{shown}: larger than {max_bytes} bytes", field="path")
    return b"".join(chunks)


def _read_at_most(fd: int, shown: str, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= max_bytes:
        chunk = os.read(fd, max_bytes + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > max_bytes:
        raise InvalidInputError(f"{shown}: larger than {max_bytes} bytes", field="path")
    return b"".join(chunks)


class _RefusedError(Exception):
    """Raised from inside the decoder's hooks; becomes one ``InvalidInputError`` line."""

    def __init__(self, message: str, field: str = "path") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclass(frozen=True)
class _Duplicate:
    """Stands in for an object that repeats a key (or holds one that does), so the path
    from the root to the repeated key is known once decoding reaches the top."""

    path: tuple[str | int, ...]


#: Deeper JSON is refused on every Python: 3.11's decoder hits its recursion limit near 1,000
#: levels, 3.13's does not (and code walking the value afterwards would).
MAX_JSON_DEPTH = 500
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


class _TooDeepError(RecursionError):
    """Nested deeper than ``MAX_JSON_DEPTH`` (a ``RecursionError``, so every caller that
    reported the decoder's own recursion reports this the same way)."""


def _check_depth(text: str) -> None:
    depth = 0
    for bracket in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            raise _TooDeepError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def _decode(text: str) -> object:
    _check_depth(text)
    value = json.loads(
        text,
        object_pairs_hook=_object,
        parse_int=_int,
        parse_float=_float,
        parse_constant=_constant,
    )
    found = _duplicate_below(value)
    if found is not None:
        where = _dotted(found[:-1]) if len(found) > 1 else "the top-level object"
        raise _RefusedError(
            f"duplicate key {_location_part(found[-1])} in {where} (a key may appear once)",
            field=_dotted(found),
        )
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Duplicate:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                return _Duplicate((key,))
            seen.add(key)
    for key, value in pairs:
        found = _duplicate_below(value)
        if found is not None:
            return _Duplicate((key, *found))
    return obj


def _duplicate_below(value: object) -> tuple[str | int, ...] | None:
    """The path to a repeated key inside ``value`` (objects were checked as they were
    decoded, so only lists, nested or not, need looking into)."""
    if isinstance(value, _Duplicate):
        return value.path
    if not isinstance(value, list):
        return None
    stack: list[tuple[tuple[str | int, ...], list[Any]]] = [((), value)]
    while stack:
        prefix, items = stack.pop()
        for index, item in enumerate(items):
            if isinstance(item, _Duplicate):
                return (*prefix, index, *item.path)
            if isinstance(item, list):
                stack.append(((*prefix, index), item))
    return None


def _dotted(path: tuple[str | int, ...]) -> str:
    parts = [_location_part(part) for part in path]
    if len(parts) > 8:
        parts = [*parts[:3], "…", *parts[-4:]]
    return ".".join(parts)


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _RefusedError(f"a number has more than {MAX_NUMBER_CHARS} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _RefusedError(f"a number has more than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if not math.isfinite(value) or Decimal(repr(value)) != Decimal(text):
        shown = text if len(text) <= 40 else f"{text[:40]}…"
        raise _RefusedError(
            f"the number {shown} cannot be held exactly (write it as a string, e.g. an amount)"
        )
    return value


def _constant(name: str) -> object:
    raise _RefusedError(f"{name} is not a JSON value")
