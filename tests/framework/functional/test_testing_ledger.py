"""The ledger table fixtures: the same ledger round trip on moto (always) and on DynamoDB
Local (``make test-docker``; skipped with one line without a Docker daemon)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from stepsaga import EffectClass
from stepsaga.ledger import Action, Intent, Status
from stepsaga.ledger._models import Claim, Replay
from stepsaga.ledger._table import GSIS, PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE
from stepsaga.testing._ledger import CreatedLedgerTable


@pytest.fixture(
    params=[
        pytest.param("ledger_table", id="moto"),
        pytest.param("ledger_table_local", id="dynamodb-local", marks=pytest.mark.docker),
    ]
)
def table(request: pytest.FixtureRequest) -> CreatedLedgerTable:
    found: CreatedLedgerTable = request.getfixturevalue(request.param)
    return found


def test_the_table_has_the_ledger_layout(table: CreatedLedgerTable) -> None:
    described = table.client.describe_table(TableName=table.name)["Table"]
    assert {k["AttributeName"] for k in described["KeySchema"]} == {PARTITION_KEY, SORT_KEY}
    assert [i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])] == list(GSIS)
    ttl = table.client.describe_time_to_live(TableName=table.name)["TimeToLiveDescription"]
    assert ttl.get("AttributeName") == TTL_ATTRIBUTE
    assert table.url.startswith(f"dynamodb://{table.name}?region=us-east-1")


def test_a_claimed_and_completed_action_replays(table: CreatedLedgerTable) -> None:
    action = Action(
        tenant_id="acme",
        intent=Intent("CASE-1001", 1, datetime.now(UTC)),
        operation="refund_payment",
        effect=EffectClass.KEYED_WRITE,
        params={"payment_id": "PAY-991", "refund": {"amount": "20.00", "currency": "USD"}},
    )
    with table.open() as ledger:
        claim = ledger.claim(action)
        assert isinstance(claim, Claim)
        ledger.complete(claim, {"refund_id": "RF-1"})
        replay = ledger.claim(action)
    assert isinstance(replay, Replay)
    assert replay.record.status is Status.COMPLETED


def test_every_table_is_fresh(ledger_table: CreatedLedgerTable) -> None:
    assert ledger_table.client.scan(TableName=ledger_table.name)["Items"] == []
