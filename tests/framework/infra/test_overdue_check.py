"""The scheduled overdue-reconciliation check, against moto's DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from moto import mock_aws

from stepsaga._aws import metric_names
from stepsaga._project import deployment
from stepsaga._reconciliation import overdue as check
from stepsaga._util.clock import ManualClock
from stepsaga.cdk._access import OVERDUE_CHECK
from stepsaga.ledger import _table as layout
from tests.framework.functional.grants_support import Calls, assert_granted_exactly, calls

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["calls"]  # the fixture

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TABLE = "ledger"


@pytest.fixture
def client() -> Iterator[DynamoDBClient]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        key = {"AttributeType": "S"}
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": name, **key}  # type: ignore[typeddict-item]
                for name in (
                    layout.PARTITION_KEY,
                    layout.SORT_KEY,
                    layout.OPEN_ITEMS_PARTITION_KEY,
                    layout.OPEN_ITEMS_SORT_KEY,
                )
            ],
            KeySchema=[
                {"AttributeName": layout.PARTITION_KEY, "KeyType": "HASH"},
                {"AttributeName": layout.SORT_KEY, "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": layout.OPEN_ITEMS_INDEX,
                    "KeySchema": [
                        {"AttributeName": layout.OPEN_ITEMS_PARTITION_KEY, "KeyType": "HASH"},
                        {"AttributeName": layout.OPEN_ITEMS_SORT_KEY, "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        yield client


def _put(client: DynamoDBClient, item_id: str, created_at: str, *, open_: bool) -> None:
    item: dict[str, Any] = {
        layout.PARTITION_KEY: {"S": f"RECON#{item_id}"},
        layout.SORT_KEY: {"S": "RECON"},
        "created_at": {"S": created_at},
        "status": {"S": "OPEN" if open_ else "RESOLVED"},
    }
    if open_:
        item[layout.OPEN_ITEMS_PARTITION_KEY] = {"S": "TENANT#acme"}
        item[layout.OPEN_ITEMS_SORT_KEY] = {"S": f"{created_at}#{item_id}"}
    client.put_item(TableName=TABLE, Item=item)


def test_counts_only_open_items_older_than_the_threshold(client: DynamoDBClient) -> None:
    _put(client, "old-open", "2026-11-27T12:00:00Z", open_=True)
    _put(client, "new-open", "2026-11-29T11:00:00Z", open_=True)
    _put(client, "old-resolved", "2026-11-01T12:00:00Z", open_=False)
    overdue = check.check(client, TABLE, timedelta(hours=24), ManualClock(NOW))
    assert overdue == 1


def test_the_check_calls_exactly_its_grants(calls: Calls, client: DynamoDBClient) -> None:
    """One ``Scan`` of the open-items index, nothing else (``OVERDUE_CHECK``)."""
    _put(client, "old-open", "2026-11-27T12:00:00Z", open_=True)
    with calls.role("overdue"):
        check.check(client, TABLE, timedelta(hours=24), ManualClock(NOW))
    assert_granted_exactly(calls, "overdue", OVERDUE_CHECK)


def test_an_item_of_unknown_age_counts_as_overdue() -> None:
    items = [{"created_at": {"S": "not a time"}}, {}, {"created_at": {"N": str(NOW.timestamp())}}]
    assert check.count_overdue(items, now=NOW, threshold=timedelta(hours=1)) == 2


def test_handler_emits_the_count_for_the_alarm(
    client: DynamoDBClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _put(client, "old-open", "2020-01-01T00:00:00Z", open_=True)
    monkeypatch.setenv(check.ENV_OVERDUE_AFTER_SECONDS, "3600")
    monkeypatch.setenv(deployment.ENV_LEDGER_TABLE_NAME, TABLE)
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", metric_names.service_name("dev"))

    assert check.handler({}, None) == {"overdue": 1}

    emf = next(
        json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line
    )
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == metric_names.NAMESPACE
    assert directive["Dimensions"] == [["service"]]
    assert emf["service"] == metric_names.service_name("dev")
    assert emf[metric_names.RECONCILIATION_OVERDUE] == [1.0]
