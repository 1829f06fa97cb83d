"""DynamoDB failures become the error family (``raise … from``), never raw botocore errors."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.stub import Stubber

from stepsaga.errors import InvalidInputError, StoreUnavailableError
from stepsaga.ledger import Ledger
from stepsaga.ledger._contention import NO_CONFLICT_RETRY, ConflictRetry
from stepsaga.ledger._dynamodb import DynamoDBStore
from tests.framework.conformance.ledger.helpers import Counter, make_action


def stubbed() -> tuple[Ledger, Stubber]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    return Ledger(DynamoDBStore("ledger", client)), Stubber(client)


@pytest.mark.parametrize(
    "code",
    ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"],
)
def test_throttling_is_store_unavailable(code: str) -> None:
    ledger, stub = stubbed()
    stub.add_client_error("get_item", service_error_code=code, http_status_code=400)
    with stub, pytest.raises(StoreUnavailableError) as caught:
        ledger.perform(make_action(), Counter())
    assert caught.value.retryable
    assert isinstance(caught.value.__cause__, ClientError)


def test_server_errors_are_store_unavailable() -> None:
    ledger, stub = stubbed()
    stub.add_client_error(
        "get_item", service_error_code="InternalServerError", http_status_code=500
    )
    with stub, pytest.raises(StoreUnavailableError):
        ledger.get("acme:C-1:r1:x")


ONE_SHARD = {
    "Items": [{"pk": {"S": "BUDGET#acme"}, "sk": {"S": "SHARD#000"}, "remaining": {"N": "9"}}]
}


def add_conflict(stub: Stubber) -> None:
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        http_status_code=400,
        response_meta={},
        modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}]},
    )


def test_a_conflicting_concurrent_transaction_is_store_unavailable() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    ledger = Ledger(DynamoDBStore("ledger", client, conflict_retry=NO_CONFLICT_RETRY))
    stub = Stubber(client)
    stub.add_response("get_item", {})
    stub.add_response("query", ONE_SHARD)
    add_conflict(stub)
    with stub, pytest.raises(StoreUnavailableError, match="concurrent transaction") as caught:
        ledger.claim(make_action(cost=3))
    assert caught.value.data["code"] == "TransactionConflict"  # the metric's signal


def test_a_conflict_is_retried_after_a_jittered_pause_within_the_bound() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    pauses: list[float] = []
    policy = ConflictRetry(attempts=3, base_seconds=0.01, max_delay_seconds=0.02)
    store = DynamoDBStore("ledger", client, conflict_retry=policy, sleep=pauses.append)
    stub = Stubber(client)
    stub.add_response("get_item", {})
    for _ in range(2):  # a round: read the shards, the only candidate conflicts
        stub.add_response("query", ONE_SHARD)
        add_conflict(stub)
    stub.add_response("query", ONE_SHARD)
    stub.add_response("transact_write_items", {})
    with stub:
        claim = Ledger(store).claim(make_action(cost=3))
    stub.assert_no_pending_responses()
    assert claim.record.budget_shard == "SHARD#000"  # the refund goes back there
    assert len(pauses) == 2
    assert 0 <= pauses[0] <= 0.01
    assert 0 <= pauses[1] <= 0.02


def test_a_tenant_without_a_budget_pays_no_debit() -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")
    ledger, stub = Ledger(DynamoDBStore("ledger", client)), Stubber(client)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems",
        lambda params, **_: sent.append(params),
    )
    stub.add_response("get_item", {})
    stub.add_response("query", {"Items": []})  # no shard: no budget
    # One transaction: the conditional claim and the case's latest revision, no budget.
    stub.add_response("transact_write_items", {})
    with stub:
        claim = ledger.claim(make_action(cost=3))
    stub.assert_no_pending_responses()
    assert claim.record.debited == 0
    keys = [
        next(iter(op.values()))["Key" if "Update" in op else "Item"]
        for op in sent[0]["TransactItems"]
    ]
    assert [key["sk"]["S"] for key in keys] == ["ACTION", "LATEST_REVISION"]


def test_access_problems_are_bad_configuration() -> None:
    ledger, stub = stubbed()
    stub.add_client_error("get_item", service_error_code="AccessDeniedException")
    with stub, pytest.raises(InvalidInputError, match="AccessDeniedException"):
        ledger.get("acme:C-1:r1:x")


def test_an_unreachable_endpoint_is_store_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1")

    def unreachable(**_: object) -> None:
        raise EndpointConnectionError(endpoint_url="http://localhost:1")

    monkeypatch.setattr(client, "get_item", unreachable)
    ledger = Ledger(DynamoDBStore("ledger", client))
    with pytest.raises(StoreUnavailableError) as caught:
        ledger.get("acme:C-1:r1:x")
    assert isinstance(caught.value.__cause__, EndpointConnectionError)
