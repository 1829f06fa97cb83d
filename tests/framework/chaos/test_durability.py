"""kill -9 during ledger writes: the file stays sound and no committed record is lost.

A writer process claims and settles actions as fast as it can (completed, released,
failed, unknown — every transition, each with a budget debit or refund). After each write
returns it appends ``key status`` to a report file and fsyncs it: a line there proves the
commit happened. The test kills the writer with SIGKILL at random moments, several times
over one file, and after every kill checks ``PRAGMA integrity_check``, that every reported
record is there with its reported status, and that the tenant budget matches the records.
Seed 003's "the ledger store survives a worker restart — tested, not assumed"
(docs/explanation/background.md).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stepsaga.ledger import Record, Status, open_ledger

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
BUDGET = 1_000_000
KILLS = 6

WRITER = """
import os, sys
from datetime import UTC, datetime
from stepsaga import EffectClass
from stepsaga.ledger import Action, Intent, open_ledger

url, report, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
ledger = open_ledger(url)
fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
approved = datetime.now(UTC)

def reported(key, status):
    os.write(fd, f"{key} {status}\\n".encode())
    os.fsync(fd)

for n in range(first, first + 1_000_000):
    action = Action(
        tenant_id="acme",
        intent=Intent(f"D-{n}", 1, approved),
        operation="refund_payment",
        effect=EffectClass.KEYED_WRITE,
        params={"payment_id": f"PAY-{n}", "amount": "20.00", "currency": "USD"},
        cost=1,
    )
    claim = ledger.claim(action)
    reported(action.key, "IN_PROGRESS")
    kind = n % 4
    if kind == 0:
        ledger.complete(claim, {"refund_id": f"re_{n}"})
        reported(action.key, "COMPLETED")
    elif kind == 1:
        ledger.release(claim, "throttled")
        reported(action.key, "RELEASED")
    elif kind == 2:
        ledger.fail(claim, {"error": "BusinessRejectedError", "message": "no"})
        reported(action.key, "FAILED")
    else:
        ledger.mark_unknown(claim, "reply lost")
        reported(action.key, "UNKNOWN")
"""


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        verdict: str = conn.execute("PRAGMA integrity_check").fetchone()[0]
    return verdict


def reports(path: Path) -> dict[str, str]:
    """The last status reported per key (a torn last line, if any, is ignored)."""
    last: dict[str, str] = {}
    for line in path.read_text().splitlines():
        parts = line.split(" ")
        if len(parts) == 2 and parts[1] in Status.__members__:
            last[parts[0]] = parts[1]
    return last


def test_kill_9_during_ledger_writes_loses_no_committed_record(tmp_path: Path) -> None:
    db, report = tmp_path / "ledger.sqlite3", tmp_path / "committed.log"
    url = f"sqlite:///{db}"
    with open_ledger(url) as ledger:
        ledger.set_budget("acme", BUDGET)
    rng = random.Random(3)
    first = torn = 0
    records: dict[str, Record] = {}
    for _ in range(KILLS):
        before = len(reports(report)) if report.exists() else 0
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(report), str(first)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        deadline = time.monotonic() + 60
        while (not report.exists() or len(reports(report)) < before + 20) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.3))  # strike anywhere: mid-claim, mid-settle, mid-report
        os.kill(writer.pid, signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL

        assert integrity(db) == "ok"
        committed = reports(report)
        with open_ledger(url) as ledger:
            records = {record.key: record for record in ledger.list()}
            remaining = ledger.budget("acme")
        lost = [key for key in committed if key not in records]
        assert lost == [], f"{len(lost)} committed records lost, e.g. {lost[:3]}"
        for key, status in committed.items():
            stored = records[key].status.value
            # The report trails the commit: a record may be one step further than reported.
            assert stored == status or status == "IN_PROGRESS", (key, status, stored)
        assert remaining == BUDGET - sum(record.debited for record in records.values())
        torn = sum(r.status is Status.IN_PROGRESS for r in records.values())
        first += 100_000  # the next writer works on new actions
    print(f"{KILLS} kills, {len(records)} records, {torn} kills between claim and settle")
    assert len(reports(report)) >= KILLS * 20
