"""The CLI's one JSON printer: what ``--json`` / ``--output json`` writes on stdout."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

from stepsaga._util.timestamps import iso_z


def jsonable(value: Any) -> Any:
    """AWS response shapes (with ``datetime`` values) as JSON-ready data: ISO-8601 UTC."""
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def print_json(data: Any) -> None:
    """``data`` as two-space-indented JSON in the order given; a value JSON has no form
    for (a ``Decimal``) as its text."""
    sys.stdout.write(json.dumps(jsonable(data), indent=2, default=str) + "\n")
