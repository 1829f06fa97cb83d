"""When a case was approved (``approved_at``): every rule about it, in one place.

The approval time starts the ledger's retention window and is part of every request digest,
so a wrong one is never harmless. The type (:data:`ApprovedAt`) takes ISO-8601 text with a
timezone and keeps it in UTC; it refuses numbers (a Unix time in seconds or milliseconds
would be guessed), years before 1000 (they serialize without four digits, so the saga would
reject its own input) and values that leave the date range once converted to UTC
(``0001-01-01T00:00:00+01:00``). Against a clock, :func:`check_approval_window` refuses an
approval from the future (the retention window would not start until then) and one older
than the retention window (no record would protect its effects: every claim is refused).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from stepsaga._util.timestamps import iso_z_seconds
from stepsaga.errors import InvalidInputError

#: Years outside this range (in UTC) are refused: before 1000 the year is not written with
#: four digits; after 9998, adding a retention window (up to a year) would leave the range
#: ``datetime`` holds.
MIN_YEAR = 1000
MAX_YEAR = 9998
#: How far ahead of this machine's clock an approval may be: the approver's clock and ours
#: may disagree a little, never by days.
MAX_CLOCK_SKEW = timedelta(minutes=5)

_FIELD = "approval.approved_at"


def _date_time_text(value: Any) -> Any:
    """Only ISO-8601 text: a number (or digits) would be read as a Unix time in seconds or
    milliseconds, guessed — silently choosing the retention window and the digest."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or value.strip().lstrip("+-").replace(".", "", 1).isdigit():
        raise ValueError("must be an ISO-8601 date-time such as 2026-11-29T09:30:00Z")
    return value


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("must carry a timezone (e.g. 2026-11-29T09:30:00Z)")
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is outside the range of dates once converted to UTC") from None
    if not MIN_YEAR <= utc.year <= MAX_YEAR:
        raise ValueError(f"must be in the years {MIN_YEAR} to {MAX_YEAR} (UTC)")
    return utc


#: An approval time: ISO-8601 text with a timezone, kept in UTC, years 1000 to 9998.
ApprovedAt = Annotated[datetime, BeforeValidator(_date_time_text), AfterValidator(_utc)]


def check_approval_window(
    approved_at: datetime,
    now: datetime,
    retention: timedelta,
    max_skew: timedelta = MAX_CLOCK_SKEW,
) -> None:
    """Refuse (``InvalidInputError``, one line) an approval more than ``max_skew`` ahead of
    ``now``, or one at least ``retention`` (the ledger policy's window) before it — the
    ledger refuses every claim for such an intent, so the case could only wait forever.

    Call it where a case is started, before anything is written; ``now`` is the backend's
    clock."""
    if approved_at.tzinfo is None or now.tzinfo is None:
        raise InvalidInputError(f"{_FIELD}: must carry a timezone", field=_FIELD)
    shown = iso_z_seconds(approved_at)
    if approved_at - now > max_skew:
        raise InvalidInputError(
            f"{_FIELD}: {shown} is in the future (more than {_duration(max_skew)} ahead of "
            "this machine's clock)",
            field=_FIELD,
        )
    if now - approved_at >= retention:
        raise InvalidInputError(
            f"{_FIELD}: {shown} is older than the ledger's {_duration(retention)} retention "
            "window, so nothing would protect its effects; approve the case again",
            field=_FIELD,
        )


def _duration(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{span.total_seconds():g} seconds"
