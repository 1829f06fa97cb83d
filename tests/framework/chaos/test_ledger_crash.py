"""SIGKILL inside ``fn``: the record left behind obeys the lease rules, the file stays sound."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.errors import ActionInProgressError, OutcomeUnknownError
from stepsaga.ledger import Status, open_ledger
from tests.framework.conformance.ledger.helpers import Counter, Recorder, make_action

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]

# Claims the action, says so through the marker file, then hangs inside fn until killed.
HANG_IN_FN = """
import sys, time
from datetime import datetime
from pathlib import Path
from tests.framework.conformance.ledger.helpers import make_action
from stepsaga.ledger import open_ledger

url, marker, effect, approved = sys.argv[1:5]
action = make_action("ship", effect=effect, approved_at=datetime.fromisoformat(approved))
ledger = open_ledger(url)

def fn(claim):
    Path(marker).write_text(str(claim.attempt))
    time.sleep(120)
    return {"never": True}

ledger.perform(action, fn)
"""

# Performs actions as fast as it can, logging each effect before the ledger records it.
WRITE_STORM = """
import os, sys
from datetime import datetime
from pathlib import Path
from tests.framework.conformance.ledger.helpers import make_action
from stepsaga.ledger import open_ledger

url, effects, approved = sys.argv[1:4]
ledger = open_ledger(url)
fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for n in range(100_000):
    action = make_action(f"op-{n}", approved_at=datetime.fromisoformat(approved))
    def fn(claim, key=action.key):
        os.write(fd, (key + "\\n").encode())
        return {"n": n}
    ledger.perform(action, fn)
"""


def start(script: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], env=env, cwd=REPO, stderr=subprocess.PIPE
    )


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def wait_for(path: Path, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text():
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"child exited early: {err.decode()}")
        if time.monotonic() > deadline:
            kill(process)
            pytest.fail(f"child never wrote {path}")
        time.sleep(0.02)


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def killed_inside_fn(tmp_path: Path, effect: EffectClass) -> tuple[str, datetime]:
    db = tmp_path / "ledger.db"
    marker = tmp_path / "inside-fn"
    approved = datetime.now(UTC) - timedelta(minutes=1)
    child = start(HANG_IN_FN, f"sqlite:///{db}", str(marker), effect.value, approved.isoformat())
    wait_for(marker, child)
    kill(child)
    assert integrity(db) == "ok"
    return f"sqlite:///{db}", approved


@pytest.mark.parametrize("effect", [EffectClass.KEYED_WRITE, EffectClass.BLIND_WRITE])
def test_a_killed_repeatable_write_is_taken_over_after_the_lease(
    tmp_path: Path, effect: EffectClass
) -> None:
    url, approved = killed_inside_fn(tmp_path, effect)
    action = make_action("ship", effect=effect, approved_at=approved)

    with open_ledger(url) as ledger:  # real clock: the dead worker's lease is still live
        with pytest.raises(ActionInProgressError) as busy:
            ledger.perform(action, Counter())
        assert 0 < busy.value.retry_after_seconds <= 60

    later = ManualClock(datetime.now(UTC) + timedelta(seconds=61))
    with open_ledger(url, clock=later) as ledger:
        fn = Recorder({"shipment_id": "SHP-2"})
        assert ledger.perform(action, fn) == {"shipment_id": "SHP-2"}
        assert fn.attempts == [2]
        assert fn.claims[0].takeover
        record = ledger.get(action.key)
        assert record is not None
        assert record.status is Status.COMPLETED


def test_a_killed_physical_effect_becomes_unknown_after_the_lease(tmp_path: Path) -> None:
    url, approved = killed_inside_fn(tmp_path, EffectClass.PHYSICAL)
    action = make_action("ship", effect=EffectClass.PHYSICAL, approved_at=approved)

    later = ManualClock(datetime.now(UTC) + timedelta(seconds=61))
    with open_ledger(url, clock=later) as ledger:
        fn = Counter()
        with pytest.raises(OutcomeUnknownError):
            ledger.perform(action, fn)
        assert fn.calls == 0
        record = ledger.get(action.key)
        assert record is not None
        assert record.status is Status.UNKNOWN


def test_the_sweeper_finds_a_killed_claim(tmp_path: Path) -> None:
    url, _ = killed_inside_fn(tmp_path, EffectClass.PHYSICAL)
    much_later = ManualClock(datetime.now(UTC) + timedelta(seconds=60 + 301))
    with open_ledger(url, clock=much_later) as ledger:
        swept = ledger.sweep()
    assert [r.status for r in swept] == [Status.UNKNOWN]


def test_killed_during_a_write_storm_the_file_stays_sound(tmp_path: Path) -> None:
    db, effects = tmp_path / "ledger.db", tmp_path / "effects.log"
    approved = datetime.now(UTC) - timedelta(minutes=1)
    child = start(WRITE_STORM, f"sqlite:///{db}", str(effects), approved.isoformat())
    deadline = time.monotonic() + 60
    while (not effects.exists() or len(effects.read_text().splitlines()) < 50) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.01)
    kill(child)

    assert integrity(db) == "ok"
    applied = set(effects.read_text().splitlines())
    with open_ledger(f"sqlite:///{db}") as ledger:
        records = ledger.list()
    assert len(applied) >= 50
    completed = {r.key for r in records if r.status is Status.COMPLETED}
    # Every recorded completion had its effect; at most the last effect lacks its record.
    assert completed <= applied
    assert len(applied - completed) <= 1
    assert {r.status for r in records} <= {Status.COMPLETED, Status.IN_PROGRESS}
