"""How record fields are written as text and numbers, shared by both stores."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from stepsaga._util.timestamps import iso_z_micros


def time_text(value: datetime) -> str:
    """``2026-11-29T12:00:00.000000Z``: fixed width and UTC, so stored timestamps sort and
    compare as strings."""
    return iso_z_micros(value)


def opt_time_text(value: datetime | None) -> str | None:
    return None if value is None else time_text(value)


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def opt_parse_time(text: str | None) -> datetime | None:
    return None if text is None else parse_time(text)


#: Compact, sorted, UTF-8 JSON; built once (``json.dumps`` with options builds one per call).
_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_text(value: dict[str, Any] | None) -> str | None:
    if value is None:
        return None
    return _JSON.encode(value)


def parse_json(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("stored JSON is not an object")
    return value
