"""On DynamoDB (moto), every listing is a fixed number of ``Query`` calls, whatever the
table holds: the same commands against 500 and 5,000 items make the same calls, and none
is a ``Scan``. Counted with a botocore ``before-call.dynamodb.*`` hook."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from stepsaga._util.clock import ManualClock
from stepsaga.cli._app import app
from stepsaga.ledger import Ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.testing._bulk import STALE, history

#: Filling and querying 5,000 items in moto takes half a minute; the sizes are the point.
pytestmark = pytest.mark.slow

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SIZES = (500, 5_000)
PAGE = 10

#: The commands, as the CLI and the console call them (``stepsaga ledger|recon …``).
COMMANDS: dict[str, Callable[[Ledger], Any]] = {
    "ledger list": lambda ledger: ledger.page(limit=PAGE),
    "ledger list --tenant": lambda ledger: ledger.page(tenant="tenant-3", limit=PAGE),
    "ledger list --tenant --status": lambda ledger: ledger.page(
        tenant="tenant-3", status="FAILED", limit=PAGE
    ),
    "ledger list --status": lambda ledger: ledger.page(status="UNKNOWN", limit=PAGE),
    "ledger list --case": lambda ledger: ledger.page(case="CASE-7", limit=PAGE),
    "ledger list --tenant --case": lambda ledger: ledger.page(
        tenant="tenant-2", case="CASE-7", limit=PAGE
    ),
    "ledger list (page 2)": lambda ledger: ledger.page(
        limit=PAGE, next_token=ledger.page(limit=PAGE).next_token
    ),
    "recon list": lambda ledger: ledger.page_items(status="OPEN", limit=PAGE),
    "recon list --status resolved": lambda ledger: ledger.page_items(status="RESOLVED", limit=PAGE),
    "recon list --status all": lambda ledger: ledger.page_items(limit=PAGE),
    "recon list --tenant": lambda ledger: ledger.page_items(
        tenant="tenant-0", status="OPEN", limit=PAGE
    ),
    "recon list --tenant --status all": lambda ledger: ledger.page_items(
        tenant="tenant-0", limit=PAGE
    ),
    "recon list --case": lambda ledger: ledger.page_items(case="CASE-5", limit=PAGE),
    "ledger sweep --limit": lambda ledger: ledger.sweep_page(limit=PAGE),
}


class Calls:
    """DynamoDB operations made while ``counting`` is on."""

    def __init__(self) -> None:
        self.made: Counter[str] = Counter()

    def __call__(self, model: Any, **_: Any) -> None:
        self.made[model.name] += 1

    def take(self) -> Counter[str]:
        made, self.made = self.made, Counter()
        return made


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[int, tuple[Ledger, Calls]]]:
    """One moto account for the module, holding a table of each size (filled once)."""
    with mock_aws():
        yield {size: filled(size) for size in SIZES}


def filled(size: int) -> tuple[Ledger, Calls]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    table = f"ledger-{size}"
    create_table(client, table)
    store = DynamoDBStore(table, client)
    records, items = history(size, now=NOW)
    assert store.bulk_insert(records, items) == len(records) + len(items)
    calls = Calls()
    client.meta.events.register("before-call.dynamodb.*", calls)
    return Ledger(store, clock=ManualClock(NOW)), calls


def measure(ledger: Ledger, calls: Calls) -> dict[str, Counter[str]]:
    measured: dict[str, Counter[str]] = {}
    for name, command in COMMANDS.items():
        calls.take()
        command(ledger)
        measured[name] = calls.take()
    return measured


def test_every_lookup_makes_the_same_calls_at_500_and_5000_items(
    aws: dict[int, tuple[Ledger, Calls]],
) -> None:
    small, large = (measure(*aws[size]) for size in SIZES)
    assert small == large
    for name, made in small.items():
        assert "Scan" not in made, name
        assert made["Query"] >= 1, name
    # The sweep: one Query per lease shard, then one conditional write per stale claim.
    assert small["ledger sweep --limit"]["PutItem"] == PAGE


def test_pages_are_full_and_ordered_and_the_token_reaches_the_end(
    aws: dict[int, tuple[Ledger, Calls]],
) -> None:
    ledger, _ = filled(SIZES[0] + 1)
    records, items = history(SIZES[0] + 1, now=NOW)
    expected = sorted(r.key for r in records if r.tenant_id == "tenant-3")
    seen: list[str] = []
    token = None
    while True:
        page = ledger.page(tenant="tenant-3", limit=7, next_token=token)
        assert len(page.items) == 7 or page.next_token is None
        seen += [r.key for r in page.items]
        token = page.next_token
        if token is None:
            break
    by_time = {r.key: r.created_at for r in records}
    assert sorted(seen) == expected
    assert seen == sorted(seen, key=lambda key: (by_time[key], key))
    resolved = [i.item_id for i in ledger.list_items(status="RESOLVED")]
    assert resolved == [i.item_id for i in items if i.status.value == "RESOLVED"]
    swept = ledger.sweep()
    assert len(swept) == STALE
    assert {r.status.value for r in swept} == {"UNKNOWN"}
    assert ledger.sweep() == []


def test_the_cli_pages_the_table_with_the_same_calls_at_both_sizes(
    aws: dict[int, tuple[Ledger, Calls]],
) -> None:
    """``stepsaga ledger list --url dynamodb://…``: the CLI's own client, counted through
    the default session it is made from."""
    runner = CliRunner()
    boto3.setup_default_session(region_name="us-east-1")
    calls = Calls()
    boto3.DEFAULT_SESSION.events.register("before-call.dynamodb.*", calls)  # type: ignore[union-attr]
    try:
        counted = []
        for size in SIZES:
            url = f"dynamodb://ledger-{size}?region=us-east-1"
            calls.take()
            first = runner.invoke(app, ["ledger", "list", "--url", url, "--limit", "5", "--json"])
            assert first.exit_code == 0, first.output
            token = json.loads(first.stdout)["next_token"]
            args = ["ledger", "list", "--url", url, "--limit", "5", "--next-token", token]
            second = runner.invoke(app, [*args, "--json"])
            assert second.exit_code == 0, second.output
            counted.append(calls.take())
            other = runner.invoke(app, [*args, "--tenant", "tenant-1"])
            assert other.exit_code == 2
            assert "--next-token" in other.output
        assert counted[0] == counted[1]
        assert "Scan" not in counted[0]
    finally:
        boto3.DEFAULT_SESSION = None
