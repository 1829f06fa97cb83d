"""Real kills at chosen points: a note on disk first, then ``SIGKILL`` of this process.

The note (one JSON line, fsync'd) is how the harness learns which kill fired — the dying
process can tell nobody afterwards. Kill points are reached through the backend's own
injection points: a ledger store wrapper (claims, recorded outcomes, operators' decisions),
the progress listener (states entered) and the services' crash action
(``crash_after_effect``). Nothing in the code under test knows it is being watched.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from reliability.plan import KillPoint, KillSite
from services.simulated import CrashSite
from stepsaga.backends._progress import Progress, ProgressKind
from stepsaga.ledger import ExtraWrite, ReconItem, Record, Status
from stepsaga.ledger._models import ResolutionAudit
from stepsaga.ledger._store import (
    Expect,
    ForwardingStore,
    LedgerStore,
    WriteOutcome,
    WriteResult,
)


def append_line(path: Path, data: dict[str, object]) -> None:
    """Append one JSON line and make it durable before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(data, sort_keys=True) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class KillSwitch:
    """The kill points still pending for one case, in one child process."""

    def __init__(self, case_index: int, pending: tuple[KillPoint, ...], notes: Path) -> None:
        self._case = case_index
        self._pending = {kill.id: kill for kill in pending}
        self._notes = notes

    def armed(self, site: KillSite, target: str = "") -> bool:
        return KillPoint(site, target).id in self._pending

    def maybe_fire(self, site: KillSite, target: str = "") -> None:
        if self.armed(site, target):
            self.fire(KillPoint(site, target).id)

    def fire(self, kill_id: str) -> NoReturn:
        append_line(self._notes, {"case": self._case, "kill": kill_id, "pid": os.getpid()})
        os.kill(os.getpid(), signal.SIGKILL)
        raise SystemExit(137)  # not reached: SIGKILL cannot be caught

    # --- the hooks -----------------------------------------------------------------------

    def on_progress(self, progress: Progress) -> None:
        """The backend's progress listener: kill on entering an armed state."""
        if progress.kind is ProgressKind.STATE_ENTERED and progress.state:
            self.maybe_fire(KillSite.STATE_ENTERED, progress.state)

    def crash(self, site: CrashSite) -> None:
        """The services' crash action (``crash_after_effect``): always a kill."""
        self.fire(f"{KillSite.CRASH_AFTER_EFFECT.value}:{site.operation.value}")


def operation_of(record: Record) -> str:
    """``reserve_stock:compensate:release_reservation`` → ``release_reservation``."""
    return record.operation.rsplit(":", 1)[-1]


class KillingStore(ForwardingStore):
    """A ``LedgerStore`` that passes everything through, then kills at armed points."""

    def __init__(self, inner: LedgerStore, switch: KillSwitch) -> None:
        super().__init__(inner)
        self._switch = switch

    def put(
        self,
        record: Record,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        extra: Sequence[ExtraWrite] = (),
    ) -> WriteOutcome:
        if record.status is Status.IN_PROGRESS:
            self._switch.maybe_fire(KillSite.BEFORE_CLAIM, operation_of(record))
        outcome = self._inner.put(record, expect=expect, budget_delta=budget_delta, extra=extra)
        if outcome.result is WriteResult.WRITTEN:
            claimed = record.status is Status.IN_PROGRESS
            site = KillSite.AFTER_CLAIM if claimed else KillSite.AFTER_RECORD
            self._switch.maybe_fire(site, operation_of(record))
        return outcome

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        result = self._inner.resolve(
            item, record, record_expect=record_expect, budget_delta=budget_delta, audit=audit
        )
        if result is WriteResult.WRITTEN:
            self._switch.maybe_fire(KillSite.AFTER_RESOLVE)
        return result
