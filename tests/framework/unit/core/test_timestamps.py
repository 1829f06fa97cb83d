"""The four ISO-8601-Z spellings: each one's exact text (stored, digested or shown)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from stepsaga._util.timestamps import iso_z, iso_z_micros, iso_z_millis, iso_z_seconds, opt_iso_z

PARIS = timezone(timedelta(hours=1))


@pytest.mark.parametrize(
    ("value", "natural", "micros", "millis", "seconds"),
    [
        (
            datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
            "2026-11-29T12:00:00Z",
            "2026-11-29T12:00:00.000000Z",
            "2026-11-29T12:00:00.000Z",
            "2026-11-29T12:00:00Z",
        ),
        (
            datetime(2026, 11, 29, 13, 0, 0, 250_999, tzinfo=PARIS),
            "2026-11-29T12:00:00.250999Z",
            "2026-11-29T12:00:00.250999Z",
            "2026-11-29T12:00:00.250Z",
            "2026-11-29T12:00:00Z",
        ),
    ],
)
def test_each_spelling_is_utc_with_a_z_at_its_own_precision(
    value: datetime, natural: str, micros: str, millis: str, seconds: str
) -> None:
    assert iso_z(value) == natural
    assert iso_z_micros(value) == micros
    assert iso_z_millis(value) == millis
    assert iso_z_seconds(value) == seconds
    assert opt_iso_z(value) == natural
    assert opt_iso_z(None) is None
