"""The cost meters count as AWS bills: item sizes, request-unit rounding, transitions."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from stepsaga.testing._cost import CaseCost, DynamoDBMeter, HistoryCount, count_history, item_size


def test_item_size_counts_names_and_values() -> None:
    assert item_size({"pk": {"S": "abc"}}) == 2 + 3
    assert item_size({"n": {"N": "12345"}}) == 1 + 3 + 1  # 5 digits → 3 bytes + 1
    assert item_size({"b": {"BOOL": True}, "z": {"NULL": True}}) == 4
    assert item_size({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + 1 + 1 + 1
    assert item_size({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)


@given(st.text(max_size=300))
def test_a_string_is_its_utf8_length(text: str) -> None:
    assert item_size({"s": {"S": text}}) == 1 + len(text.encode())


def _entered(name: str) -> dict[str, Any]:
    return {"type": "TaskStateEntered", "stateEnteredEventDetails": {"name": name}}


def test_a_retry_is_a_billed_transition_and_an_invocation() -> None:
    events = [
        {"type": "PassStateEntered", "stateEnteredEventDetails": {"name": "Prepare"}},
        _entered("Refund"),
        {"type": "LambdaFunctionScheduled"},
        {"type": "LambdaFunctionFailed"},
        {"type": "LambdaFunctionScheduled"},
        {"type": "LambdaFunctionSucceeded"},
        _entered("Wait"),
        {"type": "TaskScheduled", "taskScheduledEventDetails": {"resourceType": "lambda"}},
    ]
    counted = count_history(events)
    assert counted.by_state == {"Prepare": 1, "Refund": 2, "Wait": 1}
    assert (counted.transitions, counted.invocations) == (4, 3)


@pytest.fixture
def ddb() -> Any:
    with mock_aws():
        client = boto3.session.Session().client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def test_units_follow_the_larger_item_and_double_in_a_transaction(ddb: Any) -> None:
    meter = DynamoDBMeter(ddb)
    session = boto3.session.Session()
    meter.attach(session.events)
    metered = session.client("dynamodb", region_name="us-east-1")
    big = {"pk": {"S": "a"}, "body": {"S": "x" * 3000}}  # 3 KB → 3 units
    metered.put_item(TableName="t", Item=big)
    assert meter.write_units == 3
    # An update that shrinks the item still pays for the larger (before) size.
    metered.update_item(
        TableName="t",
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET body = :b",
        ExpressionAttributeValues={":b": {"S": "small"}},
    )
    assert meter.write_units == 6
    metered.transact_write_items(
        TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": "b"}}}}]
    )
    assert meter.write_units == 8
    metered.get_item(TableName="t", Key={"pk": {"S": "a"}}, ConsistentRead=True)
    metered.get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert meter.read_units == 1.5
    with meter.paused():
        metered.get_item(TableName="t", Key={"pk": {"S": "a"}}, ConsistentRead=True)
    assert meter.read_units == 1.5
    assert meter.calls["PutItem"] == 1


def test_each_index_the_item_is_in_costs_its_own_write(ddb: Any) -> None:
    """An entry added or removed is one write; a changed index key a delete and a put; an
    item outside the index costs it nothing (DynamoDB's GSI write rules)."""
    ddb.create_table(
        TableName="g",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "gk", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-gk",
                "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    meter = DynamoDBMeter(ddb)
    session = boto3.session.Session()
    meter.attach(session.events)
    metered = session.client("dynamodb", region_name="us-east-1")
    metered.put_item(TableName="g", Item={"pk": {"S": "a"}, "gk": {"S": "1"}})
    assert meter.write_units == 2  # the table + a new index entry

    def set_gk(value: str) -> None:
        metered.update_item(
            TableName="g",
            Key={"pk": {"S": "a"}},
            UpdateExpression="SET gk = :g",
            ExpressionAttributeValues={":g": {"S": value}},
        )

    set_gk("2")
    assert meter.write_units == 2 + 3  # the table + the old entry deleted + the new one put
    metered.update_item(TableName="g", Key={"pk": {"S": "a"}}, UpdateExpression="REMOVE gk")
    assert meter.write_units == 5 + 2  # the table + the entry removed
    metered.put_item(TableName="g", Item={"pk": {"S": "b"}})
    assert meter.write_units == 7 + 1  # not in the index


def test_cost_per_thousand_cases() -> None:
    cost = CaseCost("p", HistoryCount(4, 2, {}), write_units=10, read_units=2.0, publishes=1)
    parts = cost.per_thousand()
    assert parts["step_functions"] == Decimal("0.1")  # 4 transitions at $0.025 / 1,000 transitions
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")
