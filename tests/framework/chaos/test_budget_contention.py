"""Many threads claiming costed actions of one tenant: never an overspend, and with shards
far fewer transaction conflicts than with one budget item.

moto applies each request under one lock (as ``test_ledger_concurrency`` does) but never
cancels a transaction for a conflict. ``ConflictingClient`` adds DynamoDB's rule: a
``TransactWriteItems`` whose items another one still has in flight is cancelled with
``TransactionConflict``; each transaction is in flight for ``latency`` seconds, then moto
applies it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

from stepsaga.errors import BudgetExhaustedError, StoreUnavailableError
from stepsaga.ledger import Ledger, open_ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from tests.framework.conformance.ledger.helpers import make_action

pytestmark = pytest.mark.slow

THREADS = 16
CLAIMS = 64
COST = 3
BUDGET = 120  # covers 40 of the 64 claims
CALLER_ATTEMPTS = 6  # the saga's Retry on the retryable StoreUnavailableError


class ConflictingClient:
    """A DynamoDB client whose transactions conflict as DynamoDB's do (see module doc)."""

    def __init__(self, inner: Any, latency: float, in_flight: set[str]) -> None:
        self._inner = inner
        self._latency = latency
        self._in_flight = in_flight
        self._lock = _STATE_LOCK
        self.conflicts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def transact_write_items(self, **request: Any) -> Any:
        held = {
            f"{target['pk']['S']}/{target['sk']['S']}"
            for entry in request["TransactItems"]
            for op in entry.values()
            for target in [op.get("Key") or op["Item"]]
        }
        with self._lock:
            if held & self._in_flight:
                self.conflicts += 1
                response: Any = {
                    "Error": {"Code": "TransactionCanceledException", "Message": "conflict"},
                    "CancellationReasons": [
                        {"Code": "TransactionConflict"} for _ in request["TransactItems"]
                    ],
                }
                raise ClientError(response, "TransactWriteItems")
            self._in_flight |= held
        try:
            time.sleep(self._latency)
        finally:
            with self._lock:
                self._in_flight -= held
        # Applied after its window: moto's lock, not the window, keeps the conditions
        # atomic, and waiting for that lock must not count as being in flight.
        return self._inner.transact_write_items(**request)


_STATE_LOCK = threading.Lock()


@pytest.fixture
def serialized_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    lock = threading.Lock()
    original = BotocoreStubber.__call__

    def locked(self: BotocoreStubber, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, *args, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", locked)
    with mock_aws():
        yield


@dataclass(frozen=True)
class Race:
    claimed: int
    refused: int
    gave_up: int
    conflicts: int
    remaining: int


def claim_as_a_saga_would(ledger: Ledger, name: str) -> str:
    """One claim, retried on ``StoreUnavailableError`` as the compiled ``Retry`` does: the
    store gives up after its own conflict attempts when the last shards are fought over,
    and that retryable error (never a lost or doubled debit) is the contract."""
    for _ in range(CALLER_ATTEMPTS):
        try:
            ledger.claim(make_action(name, cost=COST))
        except BudgetExhaustedError:
            return "refused"
        except StoreUnavailableError:
            continue
        return "claimed"
    return "gave_up"


def race(shards: int) -> Race:
    """``CLAIMS`` distinct costed claims of one tenant from ``THREADS`` threads."""
    table = f"ledger-{shards}"
    create_table(boto3.client("dynamodb", region_name="us-east-1"), table)
    in_flight: set[str] = set()
    clients = [
        ConflictingClient(boto3.client("dynamodb", region_name="us-east-1"), 0.004, in_flight)
        for _ in range(THREADS)
    ]
    ledgers = [
        Ledger(DynamoDBStore(table, client, budget_shards=shards))  # type: ignore[arg-type]
        for client in clients
    ]
    ledgers[0].set_budget("acme", BUDGET)
    barrier = threading.Barrier(THREADS)

    def worker(n: int) -> list[str]:
        barrier.wait()
        outcomes = []
        for i in range(n, CLAIMS, THREADS):
            outcomes.append(claim_as_a_saga_would(ledgers[n], f"op-{i}"))
        return outcomes

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        outcomes = [o for batch in pool.map(worker, range(THREADS)) for o in batch]
    remaining = ledgers[0].budget("acme")
    assert remaining is not None
    return Race(
        claimed=outcomes.count("claimed"),
        refused=outcomes.count("refused"),
        gave_up=outcomes.count("gave_up"),
        conflicts=sum(c.conflicts for c in clients),
        remaining=remaining,
    )


@pytest.mark.usefixtures("serialized_moto")
def test_shards_never_overspend_and_spend_all_of_the_budget() -> None:
    """How many conflicts each layout meets depends on thread timing (a figure for a
    bench, not a test); that no debit is lost or doubled does not."""
    one, sharded = race(1), race(8)
    for result in (one, sharded):
        assert result.remaining >= 0
        assert result.claimed * COST + result.remaining == BUDGET  # every debit accounted
        assert result.claimed + result.refused + result.gave_up == CLAIMS
    assert sharded.claimed == BUDGET // COST  # all of the budget spent, none beyond
    assert sharded.gave_up == 0


def test_threads_on_sqlite_never_overspend(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        ledger.set_budget("acme", BUDGET)

        def claim(i: int) -> bool:
            try:
                ledger.claim(make_action(f"op-{i}", cost=COST))
            except BudgetExhaustedError:
                return False
            return True

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            claimed = sum(pool.map(claim, range(CLAIMS)))
        assert claimed == BUDGET // COST
        assert ledger.budget("acme") == BUDGET - claimed * COST
