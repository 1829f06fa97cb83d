"""A tool call killed between any two writes: the session and the ledger never disagree.

The call (seed 000): debit the quota and mark the session's tool pending with the claim,
apply the effect, record the outcome and move the session cursor with it. SQLite: a real
SIGKILL in a child process before each SQL statement it runs (so also inside the
transactions). DynamoDB (moto): the process "dies" before or after each API call (after:
the call took effect, its reply is lost). After each death, and after the redelivery that
recovers, the stored state is checked against one invariant.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import boto3
import pytest
from moto import mock_aws

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.ledger import Action, Ledger, LedgerPolicy, Record, Status, open_ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._writes import ExtraWrite, Writes, absent, equals
from tests.framework.conformance.ledger.helpers import START, make_action

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
SESSION = ("TENANT#acme#SESSION#s1", "META")
PENDING = ("TENANT#acme#SESSION#s1", "TOOL#refund")
BUDGET, COST = 100, 30
#: Approved an hour before this process started; the SQLite child gets it as an argument.
APPROVED = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)


def tool_action(approved: datetime = APPROVED) -> Action:
    return make_action(effect=EffectClass.KEYED_WRITE, cost=COST, approved_at=approved)


ACTION = tool_action(START - timedelta(hours=1))


def tool_writes() -> Writes:
    def cursor(record: Record) -> list[ExtraWrite]:
        last = str((record.result or {}).get("refund_id", record.status.value))
        return [ExtraWrite(*SESSION, {"cursor": 1, "last": last}, equals("cursor", 0))]

    return Writes(
        with_claim=[ExtraWrite(*PENDING, {"state": "pending"}, absent())], with_outcome=cursor
    )


def refund(effects: Path) -> Callable[[object], dict[str, Any]]:
    """The downstream: a keyed write logged (and fsynced) before it answers."""

    def call(_claim: object) -> dict[str, Any]:
        with effects.open("a") as log:
            log.write(getattr(_claim, "key", "?") + "\n")
            log.flush()
            os.fsync(log.fileno())
        return {"refund_id": "RF-1"}

    return call


def prepare(ledger: Ledger) -> None:
    ledger.set_budget("acme", BUDGET)
    ledger.write([ExtraWrite(*SESSION, {"cursor": 0}, absent())])


def check(ledger: Ledger) -> Status | None:
    """The invariant: the session says what the ledger says, and the budget agrees."""
    record = ledger.get(ACTION.key)  # every action here shares the key, whatever its approval
    session = ledger.get_extra(*SESSION)
    if record is None:
        assert session == {"cursor": 0}
        assert ledger.get_extra(*PENDING) is None
        assert ledger.budget("acme") == BUDGET
        return None
    assert ledger.get_extra(*PENDING) == {"state": "pending"}
    assert ledger.budget("acme") == BUDGET - record.debited
    if record.status is Status.COMPLETED:
        assert session == {"cursor": 1, "last": "RF-1"}
    else:
        assert session == {"cursor": 0}
    return record.status


def recover(ledger: Ledger, effects: Path, action: Action = ACTION) -> None:
    """The planner delivers the call again after the lease ran out: one outcome, once."""
    assert ledger.perform(action, refund(effects), writes=tool_writes()) == {"refund_id": "RF-1"}
    assert check(ledger) is Status.COMPLETED
    assert ledger.budget("acme") == BUDGET - COST
    sent = effects.read_text().split() if effects.exists() else []
    assert set(sent) == {ACTION.key}  # a keyed write: a repeat carries the same key


# --- SQLite: SIGKILL before every statement ------------------------------------------------

CHILD = """
import os, signal, sys
from pathlib import Path
from stepsaga.ledger import Ledger
from stepsaga.ledger._sqlite import SqliteStore
from datetime import datetime
from tests.framework.chaos.test_tool_session_kills import refund, tool_action, tool_writes

path, kill_at, effects = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
action = tool_action(datetime.fromisoformat(sys.argv[4]))
seen = 0

def trace(statement):
    global seen
    seen += 1
    if seen == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

store = SqliteStore(path)
store._trace = trace  # armed only now: the setup's statements are not the tool call's
store.close()
ledger = Ledger(store)
ledger.perform(action, refund(effects), writes=tool_writes())
print(seen)
"""


def _child(db: Path, kill_at: int, effects: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(kill_at), str(effects), APPROVED.isoformat()],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def _sqlite_ledger(db: Path, clock: ManualClock | None = None) -> Ledger:
    return open_ledger(f"sqlite:///{db}", clock=clock)


def _statements(tmp_path: Path) -> int:
    db = tmp_path / "count.sqlite3"
    with _sqlite_ledger(db) as ledger:
        prepare(ledger)
    done = _child(db, 0, tmp_path / "count-effects")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip())


def test_sqlite_sigkill_before_every_statement_leaves_session_and_ledger_agreeing(
    tmp_path: Path,
) -> None:
    total = _statements(tmp_path)
    assert total >= 6  # claim transaction, effect, outcome transaction: several statements
    outcomes: set[Status | None] = set()
    for kill_at in range(1, total + 1):
        db, effects = tmp_path / f"k{kill_at}.sqlite3", tmp_path / f"k{kill_at}.effects"
        with _sqlite_ledger(db) as ledger:
            prepare(ledger)
        died = _child(db, kill_at, effects)
        assert died.returncode == -9, (kill_at, died.returncode, died.stderr)
        clock = ManualClock(datetime.now(UTC) + timedelta(minutes=5))
        with _sqlite_ledger(db, clock) as ledger:
            outcomes.add(check(ledger))
            recover(ledger, effects, tool_action())
    # the kills landed before the claim, between claim and outcome, and after nothing else
    assert {None, Status.IN_PROGRESS} <= outcomes


# --- DynamoDB (moto): death before or after every API call ---------------------------------


class Died(BaseException):
    """The process ended here (not an Exception: nothing in the ledger may catch it)."""


class DyingClient:
    """A boto3 client that dies at its ``at``-th API call, before or after sending it."""

    CALLS = frozenset({"get_item", "put_item", "update_item", "transact_write_items"})

    def __init__(self, inner: Any, at: int, after: bool) -> None:
        self._inner, self._at, self._after = inner, at, after
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in self.CALLS:
            return attribute

        def call(**kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self._at and not self._after:
                raise Died
            response = attribute(**kwargs)
            if self.calls == self._at:
                raise Died
            return response

        return call


@pytest.fixture
def dynamodb() -> Iterator[None]:
    with mock_aws():
        yield


def _dynamo_ledger(table: str, client: Any, clock: ManualClock) -> Ledger:
    return Ledger(
        DynamoDBStore(table, cast(Any, client)), clock=clock, policy=LedgerPolicy(lease_seconds=60)
    )


def test_dynamodb_death_around_every_call_leaves_session_and_ledger_agreeing(
    dynamodb: None, tmp_path: Path
) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    create_table(client, "count")
    counting = DyingClient(client, at=0, after=False)
    with _dynamo_ledger("count", client, ManualClock(START)) as ledger:
        prepare(ledger)
    ledger = _dynamo_ledger("count", counting, ManualClock(START))
    ledger.perform(ACTION, refund(tmp_path / "count.effects"), writes=tool_writes())
    total = counting.calls
    assert total >= 3  # read, claim transaction, outcome transaction
    outcomes: set[Status | None] = set()
    for at in range(1, total + 1):
        for after in (False, True):
            table = f"t{at}{'a' if after else 'b'}"
            create_table(client, table)
            effects = tmp_path / f"{table}.effects"
            with _dynamo_ledger(table, client, ManualClock(START)) as setup:
                prepare(setup)
            dying = _dynamo_ledger(table, DyingClient(client, at, after), ManualClock(START))
            with pytest.raises(Died):
                dying.perform(ACTION, refund(effects), writes=tool_writes())
            later = ManualClock(START + timedelta(minutes=5))
            restarted = _dynamo_ledger(table, client, later)
            outcomes.add(check(restarted))
            recover(restarted, effects)
    assert {None, Status.IN_PROGRESS, Status.COMPLETED} <= outcomes
