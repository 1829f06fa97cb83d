"""Both stores behind one fixture: every conformance test runs on SQLite and on DynamoDB
(moto, in-process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from stepsaga._util.clock import ManualClock
from stepsaga.ledger import Ledger, LedgerPolicy, open_ledger
from stepsaga.ledger._connect import open_store
from stepsaga.ledger._dynamodb import create_table
from stepsaga.ledger._store import LedgerStore
from tests.framework.conformance.ledger.helpers import START

LedgerFactory = Callable[..., Ledger]
StoreFactory = Callable[[], LedgerStore]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(params=["sqlite", "dynamodb"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
        return
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
        yield "dynamodb://ledger?region=us-east-1"


@pytest.fixture
def make_ledger(ledger_url: str, clock: ManualClock) -> Iterator[LedgerFactory]:
    opened: list[Ledger] = []

    def make(policy: LedgerPolicy | None = None) -> Ledger:
        ledger = open_ledger(ledger_url, clock=clock, policy=policy)
        opened.append(ledger)
        return ledger

    yield make
    for ledger in opened:
        ledger.close()


@pytest.fixture
def ledger(make_ledger: LedgerFactory) -> Ledger:
    return make_ledger()


@pytest.fixture
def make_store(ledger_url: str) -> Iterator[StoreFactory]:
    """Bare stores over the same backend as ``ledger`` (another connection each), for
    wrapping: a test can interleave two writers deterministically."""
    opened: list[LedgerStore] = []

    def make() -> LedgerStore:
        store = open_store(ledger_url)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
