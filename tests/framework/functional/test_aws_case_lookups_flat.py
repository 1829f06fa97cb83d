"""On AWS (moto), ``start`` and ``status`` read the case's own index entries: the same
DynamoDB calls, none a ``Scan``, and the same number of items read, whether the tenant has
100 or 10,000 open reconciliation items. Counted with a botocore event hook."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from stepsaga.ledger._dynamodb import DynamoDBStore
from stepsaga.testing._bulk import open_backlog
from tests.framework.functional.aws_support import TABLE, FakeAws, fake_aws
from tests.framework.functional.cli_support import case_data
from workflows.case import parse_case

SIZES = (100, 10_000)


class Calls:
    """DynamoDB operations and the items their responses carried."""

    def __init__(self) -> None:
        self.made: Counter[str] = Counter()

    def __call__(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        self.made[model.name] += 1
        self.made[f"{model.name} items"] += len(parsed.get("Items", []))

    def take(self) -> Counter[str]:
        made, self.made = self.made, Counter()
        return made


def measure(aws: FakeAws, backlog: int) -> dict[str, Counter[str]]:
    store = DynamoDBStore(TABLE, aws.ddb)
    store.bulk_insert([], open_backlog(backlog, tenant="acme", now=datetime.now(UTC)))
    calls = Calls()
    aws.ddb.meta.events.register("after-call.dynamodb.*", calls)
    backend = aws.backend()
    view = backend.start(parse_case(case_data("CASE-2")))
    start = calls.take()
    status = backend.status(view.name)
    counted = {"start": start, "status": calls.take()}
    assert status.open_items == ()
    aws.ddb.meta.events.unregister("after-call.dynamodb.*", calls)
    return counted


def test_start_and_status_make_the_same_calls_with_100_or_10000_open_items() -> None:
    measured = []
    for size in SIZES:
        with fake_aws() as aws:
            measured.append(measure(aws, size))
    small, large = measured
    assert small == large
    for command, made in small.items():
        assert "Scan" not in made, command
        assert made["Query"] >= 1, command  # the case's open items, from ``by-case``
