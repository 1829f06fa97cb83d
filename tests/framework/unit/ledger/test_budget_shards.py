"""Budgets split over shard items (DynamoDB on moto): totals, debits, refunds, fragmentation."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from stepsaga.errors import BudgetExhaustedError, BusinessRejectedError, InvalidInputError
from stepsaga.ledger import Ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._models import Claim
from stepsaga.ledger._shards import split
from tests.framework.conformance.ledger.helpers import Counter, make_action

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def client() -> Iterator[DynamoDBClient]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(dynamodb, "ledger")
        yield dynamodb


def shards(client: DynamoDBClient, tenant: str = "acme") -> dict[str, int]:
    items = client.query(
        TableName="ledger",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"BUDGET#{tenant}"}},
        ConsistentRead=True,
    )["Items"]
    return {i["sk"]["S"]: int(i["remaining"]["N"]) for i in items}


@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=1, max_value=32))
def test_split_keeps_the_total_and_evens_the_parts(amount: int, parts: int) -> None:
    pieces = split(amount, parts)
    assert len(pieces) == parts
    assert sum(pieces) == amount
    assert max(pieces) - min(pieces) <= 1


def test_set_budget_splits_the_total_and_get_budget_sums_it(client: DynamoDBClient) -> None:
    store = DynamoDBStore("ledger", client, budget_shards=4)
    store.set_budget("acme", 10)
    assert shards(client) == {"SHARD#000": 3, "SHARD#001": 3, "SHARD#002": 2, "SHARD#003": 2}
    assert store.get_budget("acme") == 10
    DynamoDBStore("ledger", client, budget_shards=2).set_budget("acme", 7)
    assert shards(client) == {"SHARD#000": 4, "SHARD#001": 3}  # the older shards are gone
    assert store.get_budget("globex") is None


def test_a_debit_takes_one_shard_and_its_refund_goes_back_there(client: DynamoDBClient) -> None:
    store = DynamoDBStore("ledger", client, budget_shards=4, rng=random.Random(7))
    ledger = Ledger(store)
    ledger.set_budget("acme", 40)
    claim = ledger.claim(make_action("a", cost=4))
    assert isinstance(claim, Claim)
    shard = claim.record.budget_shard
    assert shard is not None
    after_debit = shards(client)
    assert after_debit[shard] == 6
    assert sum(after_debit.values()) == 36
    ledger.fail(claim, BusinessRejectedError("no").to_dict())
    assert shards(client) == {f"SHARD#{i:03d}": 10 for i in range(4)}


def test_a_cost_no_shard_covers_alone_is_debited_when_all_together_do(
    client: DynamoDBClient,
) -> None:
    ledger = Ledger(DynamoDBStore("ledger", client, budget_shards=4))
    ledger.set_budget("acme", 10)  # 3, 3, 2, 2
    ledger.perform(make_action("a", cost=9), Counter())
    assert ledger.budget("acme") == 1
    with pytest.raises(BudgetExhaustedError) as caught:
        ledger.perform(make_action("b", cost=2), Counter())
    assert caught.value.data["remaining"] == 1
    assert ledger.get(make_action("b", cost=2).key) is None


def test_a_budget_from_before_shards_still_debits_and_refunds(client: DynamoDBClient) -> None:
    client.put_item(
        TableName="ledger",
        Item={"pk": {"S": "BUDGET#acme"}, "sk": {"S": "BUDGET"}, "remaining": {"N": "5"}},
    )
    ledger = Ledger(DynamoDBStore("ledger", client))
    assert ledger.budget("acme") == 5
    claim = ledger.claim(make_action("a", cost=2))
    assert isinstance(claim, Claim)
    assert ledger.budget("acme") == 3
    ledger.release(claim, "throttled")
    assert shards(client) == {"BUDGET": 5}


def test_shard_counts_outside_one_transaction_are_refused(client: DynamoDBClient) -> None:
    with pytest.raises(InvalidInputError, match="budget_shards"):
        DynamoDBStore("ledger", client, budget_shards=0)
    with pytest.raises(InvalidInputError, match="budget_shards"):
        DynamoDBStore("ledger", client, budget_shards=33)
