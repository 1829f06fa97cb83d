"""Private: ISO-8601 UTC timestamps with a ``Z``, written in one place.

Four precisions, because each is a stored or shown format that must not change:

- :func:`iso_z` — Python's own precision (microseconds only when there are any): request
  digests (``approved_at`` is part of every action's digest), records' JSON, CLI JSON.
- :func:`iso_z_micros` — always six digits: stored ledger timestamps are fixed width so
  they sort and compare as strings.
- :func:`iso_z_millis` — three digits: Step Functions' context object (``$$.Execution.StartTime``).
- :func:`iso_z_seconds` — whole seconds: execution input (``approval.approved_at``) and
  messages people read.
"""

from __future__ import annotations

from datetime import UTC, datetime


def iso_z(value: datetime) -> str:
    """``2026-11-29T12:00:00Z`` or ``2026-11-29T12:00:00.250000Z``."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def iso_z_micros(value: datetime) -> str:
    """``2026-11-29T12:00:00.000000Z``: fixed width."""
    utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    return utc.isoformat(timespec="microseconds")[:-6] + "Z"


def iso_z_millis(value: datetime) -> str:
    """``2026-11-29T12:00:00.250Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def iso_z_seconds(value: datetime) -> str:
    """``2026-11-29T12:00:00Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def opt_iso_z(value: datetime | None) -> str | None:
    """:func:`iso_z`, or None for None."""
    return None if value is None else iso_z(value)
