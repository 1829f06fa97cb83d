"""Time as the harness moves it: the system clock plus an offset.

A killed worker's claim holds its action until its lease (60 s) ends, and the sweeper waits a
grace period more. An operator waits that out; the harness moves every process's clock
forward instead, between recovery rounds, so a thousand crashed cases recover in minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class ShiftedClock:
    offset_seconds: float = 0.0

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.offset_seconds)
