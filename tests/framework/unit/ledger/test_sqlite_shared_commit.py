"""A ledger in the engine's own file (a one-file home) shares the engine's commit.

While the engine lends its connection (``Store.lend``, around a top-level task's handler):
a claim is committed before the effect runs; an outcome waits in the open transaction and
the engine's next commit makes it durable together with the checkpoint, at the ledger's
``synchronous`` level. Another file's ledger keeps its own commits.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.engine._store import LostOwnershipError, Store
from stepsaga.errors import OutcomeUnknownError
from stepsaga.ledger import Ledger, Status, open_ledger
from stepsaga.ledger._models import Claim
from tests.framework.conformance.ledger.helpers import START, make_action

REPO = Path(__file__).resolve().parents[4]


def committed(path: Path, key: str) -> str | None:
    """The record's status as another connection sees it (what a crash would keep)."""
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT status FROM actions WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


@pytest.fixture
def one_file(tmp_path: Path) -> Iterator[tuple[Path, Store, Ledger]]:
    path = tmp_path / "executions.sqlite3"
    store = Store(path)
    ledger = open_ledger(f"sqlite:///{path}", clock=ManualClock(START))
    yield path, store, ledger
    ledger.close()
    store.close()


def test_the_claim_commits_before_the_effect_and_the_outcome_waits_for_the_engine(
    one_file: tuple[Path, Store, Ledger],
) -> None:
    path, store, ledger = one_file
    action = make_action()
    seen: list[str | None] = []

    def effect(claim: Claim) -> dict[str, Any]:
        seen.append(committed(path, action.key))
        return {"refund_id": "RF-1"}

    with store.lend():
        assert ledger.perform(action, effect) == {"refund_id": "RF-1"}
        mine = ledger.get(action.key)  # reads its own writes
        assert mine is not None
        assert mine.status is Status.COMPLETED
    assert seen == ["IN_PROGRESS"]  # durable before the effect
    assert committed(path, action.key) == "IN_PROGRESS"  # the outcome is not, yet
    with store.transaction():
        store.put_definition("d", "{}")  # the engine's checkpoint
    assert committed(path, action.key) == "COMPLETED"
    assert store.shared.commits == 2  # the claim's, and the one shared with the engine


def test_the_shared_commit_is_made_at_the_ledgers_durability(
    one_file: tuple[Path, Store, Ledger],
) -> None:
    _, store, ledger = one_file
    statements: list[str] = []
    store.shared.conn.set_trace_callback(statements.append)
    with store.lend():
        ledger.perform(make_action(), lambda claim: {"ok": True})
    with store.transaction():
        store.put_definition("d", "{}")
    shown = [s for s in statements if s.split()[0] in ("PRAGMA", "BEGIN", "COMMIT")]
    assert shown == [
        "PRAGMA synchronous = FULL",  # the claim: the engine runs NORMAL, the ledger FULL
        "BEGIN IMMEDIATE",
        "COMMIT",
        "PRAGMA synchronous = NORMAL",
        "PRAGMA synchronous = FULL",  # the outcome opens the transaction the engine joins
        "BEGIN IMMEDIATE",
        "COMMIT",
        "PRAGMA synchronous = NORMAL",
    ]
    assert store.shared.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_a_second_claim_commits_the_first_outcome_with_it(
    one_file: tuple[Path, Store, Ledger],
) -> None:
    """A handler with two actions: the second claim is durable before its effect, and
    takes the first outcome with it."""
    path, store, ledger = one_file
    first, second = make_action("reserve_stock"), make_action("refund_payment")
    seen: list[tuple[str | None, str | None]] = []

    def effect(claim: Claim) -> dict[str, Any]:
        seen.append((committed(path, first.key), committed(path, second.key)))
        return {"ok": True}

    with store.lend():
        ledger.perform(first, lambda claim: {"ok": True})
        ledger.perform(second, effect)
    assert seen == [("COMPLETED", "IN_PROGRESS")]


def test_an_engine_write_that_fails_keeps_the_outcome(
    one_file: tuple[Path, Store, Ledger],
) -> None:
    """The engine lost the execution to another process: its part rolls back, the
    ledger's outcome (true whatever the engine does) is committed alone."""
    path, store, ledger = one_file
    action = make_action()
    with store.lend():
        ledger.perform(action, lambda claim: {"ok": True})

    def checkpoint() -> None:
        with store.transaction():
            store.put_definition("d", "{}")
            store.update_execution("arn:none", {"heartbeat": 1.0}, owner="me")

    with pytest.raises(LostOwnershipError):
        checkpoint()
    assert committed(path, action.key) == "COMPLETED"
    with pytest.raises(KeyError):
        store.get_definition("d")
    assert not store.shared.conn.in_transaction


def test_a_ledger_in_another_file_keeps_its_own_commits(tmp_path: Path) -> None:
    store = Store(tmp_path / "executions.sqlite3")
    other = tmp_path / "ledger.sqlite3"
    with open_ledger(f"sqlite:///{other}", clock=ManualClock(START)) as ledger:
        action = make_action()
        with store.lend():
            ledger.perform(action, lambda claim: {"ok": True})
        assert committed(other, action.key) == "COMPLETED"
    assert store.shared.commits == 0
    store.close()


# Performs one action inside the engine's lend, then dies before the engine's commit.
KILLED_INSIDE = """
import os, signal, sys
from datetime import datetime
from pathlib import Path
from stepsaga.engine._store import Store
from stepsaga.ledger import open_ledger
from tests.framework.conformance.ledger.helpers import make_action

path, effect, approved = sys.argv[1:4]
store = Store(Path(path))
ledger = open_ledger(f"sqlite:///{path}")
action = make_action("ship", effect=effect, approved_at=datetime.fromisoformat(approved))
with store.lend():
    ledger.perform(action, lambda claim: {"shipped": True})
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("effect", [EffectClass.KEYED_WRITE, EffectClass.PHYSICAL])
def test_killed_inside_the_shared_transaction_the_lease_rules_settle_it(
    tmp_path: Path, effect: EffectClass
) -> None:
    """The outcome dies with the process; the claim, committed, is settled by the lease:
    a keyed write is taken over (its effect again, under the same key), a physical one
    goes to a person (``UNKNOWN``), never run twice."""
    path = tmp_path / "executions.sqlite3"
    Store(path).close()
    approved = datetime.now(UTC) - timedelta(minutes=1)
    child = subprocess.run(
        [sys.executable, "-c", KILLED_INSIDE, str(path), str(effect), approved.isoformat()],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    action = make_action("ship", effect=effect, approved_at=approved)
    assert committed(path, action.key) == "IN_PROGRESS"
    later = ManualClock(datetime.now(UTC) + timedelta(seconds=61))  # past the lease
    calls: list[Claim] = []

    def again(claim: Claim) -> dict[str, Any]:
        calls.append(claim)
        return {"shipped": True}

    with open_ledger(f"sqlite:///{path}", clock=later) as ledger:
        if effect is EffectClass.PHYSICAL:
            with pytest.raises(OutcomeUnknownError):
                ledger.perform(action, again)
            assert calls == []
            assert committed(path, action.key) == "UNKNOWN"
        else:
            assert ledger.perform(action, again) == {"shipped": True}
            assert [claim.takeover for claim in calls] == [True]
            assert committed(path, action.key) == "COMPLETED"
