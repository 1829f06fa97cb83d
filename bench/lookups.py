"""Lookups benchmark: the ledger's listings on DynamoDB (moto, in-process) at two table
sizes, API calls and wall time per command, and a Scan of the table for comparison.

    .venv/bin/python bench/lookups.py                       # 1,000 vs 50,000 items
    .venv/bin/python bench/lookups.py --sizes 500 5000 --json

Each size gets a fresh table filled with ``stepsaga.testing._bulk.history`` (records, and
one recon item per five records) through ``BatchWriteItem``, 25 items per call. Every
command is one page of 50, as ``stepsaga ledger list|sweep`` and ``recon list`` ask for it;
its calls are counted with a botocore ``before-call.dynamodb.*`` hook. The calls must not
grow with the table (exit status 1 if they do); moto's wall time does (it filters in
Python), DynamoDB's per-Query latency does not.
``tests/framework/unit/ledger/test_lookups_scale.py`` asserts the same at 500 vs 5,000.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
from moto import mock_aws

from stepsaga import ManualClock
from stepsaga.ledger import Ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.testing._bulk import history

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
PAGE = 50

COMMANDS: dict[str, Callable[[Ledger], Any]] = {
    "ledger list": lambda ledger: ledger.page(limit=PAGE),
    "ledger list --tenant": lambda ledger: ledger.page(tenant="tenant-3", limit=PAGE),
    "ledger list --tenant --status": lambda ledger: ledger.page(
        tenant="tenant-3", status="FAILED", limit=PAGE
    ),
    "ledger list --status": lambda ledger: ledger.page(status="UNKNOWN", limit=PAGE),
    "ledger list --case": lambda ledger: ledger.page(case="CASE-7", limit=PAGE),
    "recon list": lambda ledger: ledger.page_items(status="OPEN", limit=PAGE),
    "recon list --tenant": lambda ledger: ledger.page_items(
        tenant="tenant-0", status="OPEN", limit=PAGE
    ),
    "recon list --status all": lambda ledger: ledger.page_items(limit=PAGE),
    "recon list --status resolved --tenant": lambda ledger: ledger.page_items(
        tenant="tenant-5", status="RESOLVED", limit=PAGE
    ),
    "ledger sweep --limit 50": lambda ledger: ledger.sweep_page(limit=PAGE),
}


def measure(size: int) -> dict[str, dict[str, Any]]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = f"ledger-{size}"
    create_table(client, table)
    store = DynamoDBStore(table, client)
    records, items = history(size, now=NOW)
    store.bulk_insert(records, items)
    calls: Counter[str] = Counter()
    client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: calls.update([model.name])
    )
    ledger = Ledger(store, clock=ManualClock(NOW))
    results: dict[str, dict[str, Any]] = {}
    for name, command in COMMANDS.items():
        calls.clear()
        started = time.perf_counter()
        command(ledger)
        results[name] = {"calls": dict(calls), "seconds": time.perf_counter() - started}
    calls.clear()
    started = time.perf_counter()
    for _ in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        pass
    results["(before) Scan of the table"] = {
        "calls": dict(calls),
        "seconds": time.perf_counter() - started,
    }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs=2, default=[1_000, 50_000])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with mock_aws():
        figures = {size: measure(size) for size in args.sizes}
    small, large = (figures[size] for size in args.sizes)
    grew = [
        name
        for name in COMMANDS
        if small[name]["calls"] != large[name]["calls"] or "Scan" in small[name]["calls"]
    ]
    if args.json:
        print(json.dumps({"sizes": args.sizes, "figures": figures, "grew": grew}, indent=2))
    else:
        a, b = args.sizes
        print(
            f"{'command':40} {'calls @' + str(a):>16} {'calls @' + str(b):>16} "
            f"{'ms @' + str(a):>10} {'ms @' + str(b):>10}"
        )
        for name in small:

            def total(row: dict[str, Any]) -> str:
                return " ".join(f"{op}={n}" for op, n in sorted(row["calls"].items()))

            print(
                f"{name:40} {total(small[name]):>16} {total(large[name]):>16} "
                f"{small[name]['seconds'] * 1000:>10.0f} {large[name]['seconds'] * 1000:>10.0f}"
            )
        print("calls independent of the table's size:", "yes" if not grew else f"NO: {grew}")
    return 1 if grew else 0


if __name__ == "__main__":
    sys.exit(main())
