"""Racing ``perform`` on one key: the effect happens once, every caller gets the same result.

Effects are counted outside the code under test: each run of ``fn`` appends a line to its
own file (``O_APPEND`` writes of one short line are atomic across threads and processes).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

from stepsaga.errors import ActionInProgressError
from stepsaga.ledger import Action, Ledger, open_ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._models import Claim
from tests.framework.conformance.ledger.helpers import make_action

pytestmark = pytest.mark.slow

ACTION = make_action("refund_payment", params={"amount": "20.00", "currency": "USD"})


def effect_fn(effects: Path, seconds: float = 0.05) -> Callable[[Claim], dict[str, Any]]:
    """An ``fn`` that records its run in ``effects`` and takes a while (widens the race)."""

    def fn(claim: Claim) -> dict[str, Any]:
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()} {threading.get_ident()} {claim.attempt}\n".encode())
        finally:
            os.close(fd)
        time.sleep(seconds)
        return {"refund_id": f"RF-{os.getpid()}-{threading.get_ident()}"}

    return fn


def perform_until_done(
    ledger: Ledger, action: Action, fn: Callable[[Claim], dict[str, Any]]
) -> dict[str, Any]:
    """What a retrying caller does: wait out another attempt's live lease, then replay."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return ledger.perform(action, fn)
        except ActionInProgressError as busy:
            if time.monotonic() > deadline:
                raise
            time.sleep(min(busy.retry_after_seconds, 0.01))


def effect_count(effects: Path) -> int:
    return len(effects.read_text().splitlines()) if effects.exists() else 0


def race_threads(
    ledgers: list[Ledger], effects: Path, action: Action = ACTION
) -> list[dict[str, Any]]:
    barrier = threading.Barrier(len(ledgers))
    fn = effect_fn(effects)

    def worker(ledger: Ledger) -> dict[str, Any]:
        barrier.wait()
        return perform_until_done(ledger, action, fn)

    with ThreadPoolExecutor(max_workers=len(ledgers)) as pool:
        return list(pool.map(worker, ledgers))


def test_32_threads_on_one_sqlite_file(tmp_path: Path) -> None:
    effects = tmp_path / "effects.log"
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        results = race_threads([ledger] * 32, effects)
        record = ledger.get(ACTION.key)

    assert effect_count(effects) == 1
    assert len({tuple(sorted(r.items())) for r in results}) == 1
    assert record is not None
    assert record.attempts == 1
    assert record.result == results[0]


def _process_worker(
    url: str, effects: str, barrier: Any, results: Any, threads: int
) -> None:  # pragma: no cover - runs in the child processes
    ledger = open_ledger(url)
    fn = effect_fn(Path(effects))
    local = threading.Barrier(threads)

    def worker() -> None:
        local.wait()
        results.put(perform_until_done(ledger, ACTION, fn))

    barrier.wait()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    ledger.close()


def test_4_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    effects = tmp_path / "effects.log"
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    open_ledger(url).close()  # schema first, so the race is about the claim only
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    results = context.Queue()
    processes = [
        context.Process(target=_process_worker, args=(url, str(effects), barrier, results, 4))
        for _ in range(4)
    ]
    for process in processes:
        process.start()
    collected = [results.get(timeout=90) for _ in range(16)]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0

    assert effect_count(effects) == 1
    assert len({tuple(sorted(r.items())) for r in collected}) == 1


@pytest.fixture
def serialized_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto answers requests from many threads without locking its tables, while DynamoDB
    applies each conditional write atomically; one lock per request restores that
    guarantee (threads still interleave freely between requests)."""
    lock = threading.Lock()
    original = BotocoreStubber.__call__

    def locked(self: BotocoreStubber, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, *args, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", locked)
    with mock_aws():
        yield


@pytest.mark.usefixtures("serialized_moto")
@pytest.mark.parametrize("cost", [None, 5])
def test_16_threads_on_moto(tmp_path: Path, cost: int | None) -> None:
    create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
    # One client per worker, made up front (creating boto3 clients is not thread-safe).
    ledgers = [
        Ledger(DynamoDBStore("ledger", boto3.client("dynamodb", region_name="us-east-1")))
        for _ in range(16)
    ]
    if cost:
        ledgers[0].set_budget("acme", 100)
    effects = tmp_path / "effects.log"
    results = race_threads(ledgers, effects, make_action("refund_payment", cost=cost))

    assert effect_count(effects) == 1
    assert len({tuple(sorted(r.items())) for r in results}) == 1
    if cost:
        assert ledgers[0].budget("acme") == 95


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_short_lived_threads_do_not_leak_connections(tmp_path: Path) -> None:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:

        def one(n: int) -> None:
            ledger.perform(make_action(f"op-{n}"), lambda _: {"n": n})

        def open_files() -> int:
            return len(list(Path("/proc/self/fd").iterdir()))

        for n in range(5):
            worker = threading.Thread(target=one, args=(n,))
            worker.start()
            worker.join()
        before = open_files()
        for n in range(5, 105):
            worker = threading.Thread(target=one, args=(n,))
            worker.start()
            worker.join()
        assert open_files() - before < 10
        assert len(ledger.list()) == 105
