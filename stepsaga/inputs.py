"""Reading untrusted input at the boundary: JSON files and pydantic errors as one line.

Case files, faults files and handler events all fail the same way: one ``InvalidInputError``
whose message names the field and fits on one line, however hostile the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

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


def validate_object(validate: Callable[[dict[str, Any]], T], data: object, what: str) -> T:
    """Run a pydantic validator on decoded JSON that must be an object; any failure is one
    ``InvalidInputError`` line naming the field (``what`` when it is the whole input)."""
    if not isinstance(data, dict):
        raise InvalidInputError(f"{what}: must be a JSON object", field=what)
    try:
        return validate(data)
    except ValidationError as exc:
        field, line = describe_validation_error(exc, what)
        raise InvalidInputError(line, field=field) from None


def read_json_file(path: Path, *, what: str, max_bytes: int) -> object:
    """Read and decode a JSON file of at most ``max_bytes``; every failure is one line."""
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a directory, not a {what}", field="path")
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: no such file", field="path") from None
    except OSError as exc:
        raise InvalidInputError(f"{path}: cannot read ({exc.strerror})", field="path") from None
    if len(raw) > max_bytes:
        raise InvalidInputError(f"{path}: larger than {max_bytes} bytes", field="path")
    if not raw.strip():
        raise InvalidInputError(f"{path}: empty file", field="path")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 (byte {exc.start})", field="path") from None
    except RecursionError:
        raise InvalidInputError(f"{path}: JSON nested too deeply", field="path") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            field="path",
        ) from None
