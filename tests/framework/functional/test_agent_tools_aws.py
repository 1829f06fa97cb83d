"""Agent tools on the AWS backend's ledger (DynamoDB on moto): the same items, the same
resolve, the same key binding as on SQLite."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from pydantic import Field

try:
    from mcp.server.mcpserver import MCPServer
except ImportError:  # pragma: no cover - the dev extra installs it
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("mcp is not installed: pip install 'stepsaga[mcp]'", allow_module_level=True)

from stepsaga import EffectClass
from stepsaga.agents import Grant, KeyBook, LedgeredTools
from stepsaga.backends import ReconOutcome
from stepsaga.errors import OutcomeUnknownError
from stepsaga.ledger import ActionScope, Status
from tests.framework.functional.aws_support import FakeAws, fake_aws

Order = Annotated[str, Field(description="The order.")]
Sku = Annotated[str, Field(description="The item.")]


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def call(server: MCPServer[Any], name: str, arguments: dict[str, Any]) -> Any:
    return asyncio.run(server.call_tool(name, arguments, None))


def test_an_uncertain_tool_outcome_is_an_item_the_aws_backend_lists_and_resolves(
    aws: FakeAws,
) -> None:
    ledger = aws.ledger()
    server: MCPServer[Any] = MCPServer("t")
    tools = LedgeredTools(server, ledger=ledger, tenant="acme")
    shipped: list[str] = []

    @tools.mutating(effect=EffectClass.PHYSICAL)
    def ship_replacement(order_id: Order, sku: Sku, *, scope: ActionScope) -> dict[str, Any]:
        shipped.append(sku)
        raise OutcomeUnknownError("the warehouse did not answer")

    key = KeyBook(ledger).issue(
        "acme", tool="ship_replacement", args={"order_id": "ORD-1", "sku": "SKU-MUG"}
    )
    arguments = {"order_id": "ORD-1", "sku": "SKU-MUG", "idempotencyKey": key}
    first = call(server, "ship_replacement", arguments)
    item_id = first.structured_content["item_id"]
    assert first.structured_content["error"] == "OutcomeUnknownError"
    assert call(server, "ship_replacement", arguments).structured_content["item_id"] == item_id

    backend = aws.backend()
    (listed,) = backend.recon_list(tenant="acme")
    assert listed.id == item_id
    assert listed.step == "ship_replacement"
    assert listed.evidence["tool"] == "ship_replacement"
    resolution = backend.recon_resolve(item_id, ReconOutcome.APPLIED, None, "parcel left")
    assert resolution.item.status == "RESOLVED"
    assert resolution.execution is None  # no execution waits on a tool's item

    settled = call(server, "ship_replacement", arguments)
    assert not settled.is_error
    assert settled.structured_content["reconciled"]["item_id"] == item_id
    assert shipped == ["SKU-MUG"]  # one attempt: never shipped twice
    (record,) = ledger.list(tenant="acme")
    assert record.status is Status.COMPLETED


class StaleOnce(KeyBook):
    """Answers one grant as it was read before another call bound the key: two first
    calls of an unbound key racing, each having read "any tool"."""

    stale: Grant | None = None

    def grant(self, tenant_id: str, key: str) -> Grant:
        if self.stale is not None:
            stale, self.stale = self.stale, None
            return stale
        return super().grant(tenant_id, key)


def test_an_unbound_key_binds_its_first_tool_in_the_claims_transaction(aws: FakeAws) -> None:
    ledger = aws.ledger()
    server: MCPServer[Any] = MCPServer("t")
    book = StaleOnce(ledger)
    tools = LedgeredTools(server, ledger=ledger, tenant="acme", keys=book)

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(order_id: Order, *, scope: ActionScope) -> dict[str, Any]:
        return {"refund": order_id}

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def issue_credit(order_id: Order, *, scope: ActionScope) -> dict[str, Any]:
        return {"credit": order_id}

    key = book.issue("acme", unbound=True)
    stale = book.grant("acme", key)
    assert call(
        server, "create_refund", {"order_id": "O-1", "idempotencyKey": key}
    ).structured_content == {"refund": "O-1"}
    assert book.grant("acme", key).tool == "create_refund"
    book.stale = stale  # only the claim transaction's condition keeps the credit out
    refused = call(server, "issue_credit", {"order_id": "O-1", "idempotencyKey": key})
    assert refused.structured_content["error"] == "ActionConflictError"
    assert "approved for create_refund (any arguments" in refused.structured_content["message"]
    assert [r.operation for r in ledger.list(tenant="acme")] == ["create_refund"]
