"""Ledger benchmark: prints figures and ratios (never a pass/fail timed test).

    .venv/bin/python bench/ledger.py            # full: 10k vs 1M records
    .venv/bin/python bench/ledger.py --quick    # 10k vs 100k, fewer calls

1. SQLite ``perform`` throughput against this machine's floor, measured in the same run:
   bare single-row commits/s on the same disk with the same ``synchronous`` setting, both
   in alternating batches and interleaved call by call (a shared, busy disk makes batches
   noisy). Goal: >= 0.4 of the floor (<= 2.5 commits per first call; commits are also
   counted from the statement trace). Writes per replay are counted: goal 0.
2. DynamoDB calls per action on moto, counted with botocore event hooks. Goals: first
   call <= 2 writes, replay <= 1 read and no write, budgeted claim exactly 1
   TransactWriteItems, a costed claim of a tenant without a budget 1 PutItem and none.
3. Scale: claim throughput and peak traced memory (tracemalloc) with 1M records in the
   SQLite ledger vs 10k. Goal: within 1.5x.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from stepsaga import EffectClass, ManualClock
from stepsaga.ledger import Action, Intent, Ledger, Record
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._models import Claim
from stepsaga.ledger._sqlite import SqliteStore

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
INTENT_AT = NOW - timedelta(hours=1)
WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def action(
    n: int,
    *,
    cost: int | None = None,
    operation: str = "refund_payment",
    approved_at: datetime = INTENT_AT,
    tenant: str = "acme",
) -> Action:
    return Action(
        tenant_id=tenant,
        intent=Intent(f"CASE-{n}", 1, approved_at),
        operation=operation,
        effect=EffectClass.KEYED_WRITE,
        params={"payment_id": f"PAY-{n}", "amount": "20.00", "currency": "USD"},
        cost=cost,
    )


def result(claim: Claim) -> dict[str, Any]:
    return {"refund_id": f"RF-{claim.attempt}"}


@dataclass
class StatementCounter:
    """Counts SQL statements (the store's trace hook): writes, and commits — explicit
    ``COMMIT``s plus write statements run outside a transaction (autocommit)."""

    counts: Counter[str]
    in_transaction: bool = False

    def __call__(self, sql: str) -> None:
        head = sql.lstrip().upper()
        if head.startswith("BEGIN"):
            self.in_transaction = True
        elif head.startswith(("COMMIT", "ROLLBACK")):
            self.in_transaction = False
            self.counts["commit" if head.startswith("COMMIT") else "rollback"] += 1
        elif head.startswith(WRITE_VERBS):
            self.counts["write"] += 1
            if not self.in_transaction:
                self.counts["commit"] += 1
        else:
            self.counts["read"] += 1

    def writes(self) -> int:
        return self.counts["write"]

    def commits(self) -> int:
        return self.counts["commit"]


# --- 1. SQLite perform vs the floor ------------------------------------------------------


#: Commits that grow a WAL file cost about twice those that reuse it (the file's size
#: changes, so the file system journals it), and a WAL grows until its first checkpoint
#: (``wal_autocheckpoint``: 1000 pages). Both files are warmed past that before anything
#: is timed: bare commits write one page each, a ``perform`` at least four.
WARM_UP_COMMITS = 2500
WARM_UP_PERFORMS = 600


class Floor:
    """Bare single-row commits on a WAL file with the same synchronous setting."""

    def __init__(self, folder: Path, synchronous: str) -> None:
        self.conn = sqlite3.connect(folder / "floor.db", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")
        self.conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
        self.done = 0

    def commits_per_second(self, n: int) -> float:
        start = time.perf_counter()
        for i in range(self.done, self.done + n):
            self.conn.execute("INSERT INTO t VALUES (?, ?)", (f"k{i}", "v"))
        self.done += n
        return n / (time.perf_counter() - start)


def count_statements(folder: Path, synchronous: str, actions: list[Action]) -> tuple[float, float]:
    """Commits per first call and writes per replay, counted from the statement trace of a
    twin store (same code, its own file): the trace hook costs time that the timed runs
    and the floor do not pay."""
    counter = StatementCounter(Counter())
    with Ledger(
        SqliteStore(folder / "counted.db", synchronous=synchronous, trace=counter)
    ) as ledger:
        counter.counts.clear()
        for item in actions:
            ledger.perform(item, result)
        commits = counter.commits()
        counter.counts.clear()
        for item in actions:
            ledger.perform(item, result)
        replay_writes = counter.writes() + counter.commits()
    return commits / len(actions), replay_writes / len(actions)


def sqlite_perform(folder: Path, synchronous: str, n: int, rounds: int = 7) -> None:
    """Floor and perform measured in alternating rounds (a busy disk hurts both alike),
    both warmed up to their steady state; the ratio is the median of the per-round ratios.
    The ledger runs on the system clock, so its timestamps change from call to call as in
    production."""
    floor = Floor(folder, synchronous)
    ledger = Ledger(SqliteStore(folder / "perform.db", synchronous=synchronous))
    approved = datetime.now(UTC) - timedelta(hours=1)
    floor.commits_per_second(WARM_UP_COMMITS)
    for i in range(WARM_UP_PERFORMS):
        ledger.perform(action(i, operation="warm_up", approved_at=approved), result)
    actions = [action(i, approved_at=approved) for i in range(n * rounds)]
    floors, firsts, replays, ratios = [], [], [], []
    for r in range(rounds):
        batch = actions[r * n : (r + 1) * n]
        floors.append(floor.commits_per_second(n))
        start = time.perf_counter()
        for item in batch:
            ledger.perform(item, result)
        firsts.append(n / (time.perf_counter() - start))
        ratios.append(firsts[-1] / floors[-1])
        start = time.perf_counter()
        for item in batch:
            ledger.perform(item, result)
        replays.append(n / (time.perf_counter() - start))
    # Interleaved: one bare commit, one first call, and so on — both see the same disk.
    floor_times, perform_times = [], []
    for i in range(n):
        start = time.perf_counter()
        floor.commits_per_second(1)
        floor_times.append(time.perf_counter() - start)
        item = action(i, operation="interleaved", approved_at=approved)
        start = time.perf_counter()
        ledger.perform(item, result)
        perform_times.append(time.perf_counter() - start)
    ledger.close()
    paired = statistics.median(floor_times) / statistics.median(perform_times)
    per_call, per_replay = count_statements(folder, synchronous, actions[:n])

    ratio = statistics.median(ratios)
    print(
        f"SQLite (WAL, synchronous={synchronous}), {rounds} rounds of {n} distinct actions, "
        f"in {folder}"
    )
    print(f"  floor: bare single-row commits      {statistics.median(floors):10.0f}/s")
    print(f"  perform, first call                 {statistics.median(firsts):10.0f}/s")
    print(
        f"  ratio, batched (median of rounds)   {ratio:10.2f}    goal >= 0.40  "
        f"({'met' if ratio >= 0.4 else 'MISSED'}; = {1 / ratio:.2f} commit-times per call; "
        f"rounds {', '.join(f'{x:.2f}' for x in ratios)})"
    )
    print(
        f"  ratio, interleaved call by call     {paired:10.2f}    goal >= 0.40  "
        f"({'met' if paired >= 0.4 else 'MISSED'}; median bare commit "
        f"{statistics.median(floor_times) * 1e6:.0f} us, first call "
        f"{statistics.median(perform_times) * 1e6:.0f} us)"
    )
    print(
        f"  commits per first call (counted)    {per_call:10.2f}    goal <= 2.5  "
        f"({'met' if per_call <= 2.5 else 'MISSED'})"
    )
    print(f"  perform, replay                     {statistics.median(replays):10.0f}/s")
    print(
        f"  writes per replay (counted)         {per_replay:10.2f}    goal 0  "
        f"({'met' if per_replay == 0 else 'MISSED'})"
    )


# --- 2. DynamoDB calls per action on moto ------------------------------------------------


@dataclass
class CallCounter:
    counts: Counter[str]

    def __call__(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1

    def take(self) -> Counter[str]:
        taken = Counter(self.counts)
        self.counts.clear()
        return taken


READS = ("GetItem", "Query", "Scan", "BatchGetItem")
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")


def per_action(counts: Counter[str], n: int, names: tuple[str, ...]) -> float:
    return sum(counts[name] for name in names) / n


def show(counts: Counter[str], n: int) -> str:
    return ", ".join(f"{name} {count / n:.2f}" for name, count in sorted(counts.items()))


def dynamodb_calls(n: int) -> None:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table(client, "ledger")
        counter = CallCounter(Counter())
        client.meta.events.register("before-call.dynamodb", counter)
        ledger = Ledger(DynamoDBStore("ledger", client), clock=ManualClock(NOW))
        ledger.set_budget("acme", 10 * n)
        counter.take()

        for i in range(n):
            ledger.perform(action(i), result)
        first = counter.take()
        for i in range(n):
            ledger.perform(action(i), result)
        replay = counter.take()
        for i in range(n):
            ledger.claim(action(i, cost=1, operation="budgeted"))
        budgeted = counter.take()
        for i in range(n):  # globex has no budget
            ledger.claim(action(i, cost=1, operation="unbudgeted", tenant="globex"))
        unbudgeted = counter.take()

    first_writes = per_action(first, n, WRITES)
    replay_reads, replay_writes = per_action(replay, n, READS), per_action(replay, n, WRITES)
    transacts = budgeted["TransactWriteItems"] / n
    other_writes = per_action(budgeted, n, WRITES) - transacts
    print(f"DynamoDB on moto, {n} actions, calls per action (botocore event hooks)")
    print(
        f"  first call   {show(first, n):44s} writes {first_writes:.2f}  goal <= 2  "
        f"({'met' if first_writes <= 2 else 'MISSED'})"
    )
    ok = replay_reads <= 1 and replay_writes == 0
    print(
        f"  replay       {show(replay, n):44s} reads {replay_reads:.2f}, writes "
        f"{replay_writes:.2f}  goal <= 1 read, 0 writes  ({'met' if ok else 'MISSED'})"
    )
    ok = transacts == 1 and other_writes == 0
    print(
        f"  budgeted claim {show(budgeted, n):42s} TransactWriteItems {transacts:.2f}  "
        f"goal exactly 1  ({'met' if ok else 'MISSED'})"
    )
    ok = unbudgeted["TransactWriteItems"] == 0 and per_action(unbudgeted, n, WRITES) == 1
    print(
        f"  no budget    {show(unbudgeted, n):44s} writes {per_action(unbudgeted, n, WRITES):.2f}"
        f"  goal 1 PutItem, no transaction  ({'met' if ok else 'MISSED'})"
    )


# --- 3. Scale: 10k vs 1M records ----------------------------------------------------------


def seeded_records(template: Record, count: int) -> Iterator[Record]:
    for i in range(count):
        yield replace(template, key=f"seed:CASE-{i}:r1:op", case_id=f"CASE-{i}")


@dataclass
class ScalePoint:
    size: int
    ledger: Ledger
    path: Path
    seeded_seconds: float
    claim_rates: list[float]
    get_rates: list[float]
    peak: int = 0
    claimed: int = 0


def seed(folder: Path, synchronous: str, size: int) -> ScalePoint:
    path = folder / f"scale-{size}.db"
    store = SqliteStore(path, synchronous=synchronous)
    ledger = Ledger(store, clock=ManualClock(NOW))
    template = action(-1, operation="template")
    ledger.perform(template, result)
    record = ledger.get(template.key)
    assert record is not None
    start = time.perf_counter()
    store.bulk_insert(seeded_records(replace(record, tenant_id="seed"), size))
    return ScalePoint(size, ledger, path, time.perf_counter() - start, [], [])


def measure_round(point: ScalePoint, claims: int) -> None:
    """One round of fresh claims (traced memory) and random gets of seeded records."""
    fresh = [action(point.claimed + i, operation="scaled") for i in range(claims)]
    point.claimed += claims
    tracemalloc.start()
    start = time.perf_counter()
    for item in fresh:
        point.ledger.claim(item)
    point.claim_rates.append(claims / (time.perf_counter() - start))
    point.peak = max(point.peak, tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()

    offset = point.claimed * 7919
    keys = [f"seed:CASE-{(offset + i * 7919) % point.size}:r1:op" for i in range(5000)]
    start = time.perf_counter()
    for key in keys:
        point.ledger.get(key)
    point.get_rates.append(len(keys) / (time.perf_counter() - start))


def scale(folder: Path, synchronous: str, large: int, claims: int, rounds: int = 5) -> None:
    print(
        f"Scale: claims on a SQLite ledger already holding N records "
        f"({rounds} interleaved rounds of {claims} claims; medians)"
    )
    points = [seed(folder, synchronous, 10_000), seed(folder, synchronous, large)]
    for _ in range(rounds):  # interleaved, so a busy disk hurts both sizes alike
        for point in points:
            measure_round(point, claims)
    for point in points:
        point.ledger.close()
        print(
            f"  {point.size:>9,} records  claims {statistics.median(point.claim_rates):8.0f}/s"
            f"   gets {statistics.median(point.get_rates):8.0f}/s   peak traced memory "
            f"{point.peak / 1024:7.1f} KiB   file {point.path.stat().st_size / 1e6:7.1f} MB"
            f"   (seeded in {point.seeded_seconds:.1f} s)"
        )
    small, big = points
    slow = statistics.median(small.claim_rates) / statistics.median(big.claim_rates)
    memory = big.peak / small.peak
    gets = statistics.median(small.get_rates) / statistics.median(big.get_rates)
    verdict = "met" if slow <= 1.5 and memory <= 1.5 else "MISSED"
    print(
        f"  {large // 1000}k vs 10k: claim-time ratio {slow:.2f}, peak-memory ratio "
        f"{memory:.2f}  goal <= 1.5 each  ({verdict}); get-time ratio {gets:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (10k vs 100k)")
    parser.add_argument("--synchronous", default="FULL", choices=["OFF", "NORMAL", "FULL"])
    parser.add_argument("--dir", type=Path, help="where the SQLite files go (default: a temp dir)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="stepsaga-bench-", dir=args.dir))
    try:
        sqlite_perform(folder, args.synchronous, 100 if args.quick else 400)
        print()
        dynamodb_calls(50 if args.quick else 200)
        print()
        scale(
            folder,
            args.synchronous,
            100_000 if args.quick else 1_000_000,
            100 if args.quick else 300,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
