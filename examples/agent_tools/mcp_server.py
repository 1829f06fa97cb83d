"""Refund tools served over MCP (stdio): ``python examples/agent_tools/mcp_server.py DIR``.

The host launches one server per authenticated tenant and says which in ``AGENT_TENANT``
(the model never chooses it). ``DIR`` is the stepsaga home (``$STEPSAGA_HOME``): the
ledger is its ``ledger.sqlite3``, so ``stepsaga recon list`` shows the items an uncertain
tool call opens. Every mutating tool needs an idempotency key the approval flow issued for
exactly that call (the ``idempotencyKey`` argument, or the request's
``_meta["stepsaga/idempotencyKey"]``, which wins; with ``AGENT_KEY_IN_META=1`` only the
latter, and the schemas have no key argument); ``request_approval`` asks a person through MCP
elicitation and mints one. ``get_refunds`` is a read and never touches the ledger. Metrics
go to stderr as EMF: stdout is the protocol's channel.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict, cast

from mcp.server.mcpserver import MCPServer
from payments import Payments
from pydantic import Field

from stepsaga import Absent, EffectClass, Found
from stepsaga.agents import EmfMetrics, LedgeredTools
from stepsaga.ledger import ActionScope, open_ledger

folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".stepsaga-agent")
payments = Payments(folder)  # creates the folder
ledger = open_ledger(f"sqlite:///{folder / 'ledger.sqlite3'}")
metrics = EmfMetrics(
    "stepsaga",  # the namespace and service the stack's alarms select
    "stepsaga",
    write=lambda line: print(line, file=sys.stderr, flush=True),
)

server = MCPServer("refunds")
tools = LedgeredTools(
    server,
    ledger=ledger,
    tenant=os.environ["AGENT_TENANT"],
    metrics=metrics,
    # A host that always sends the key in _meta: no key argument for the model to invent.
    key_in_meta=os.environ.get("AGENT_KEY_IN_META") == "1",
)
tools.approval()

OrderId = Annotated[str, Field(description="The order, e.g. ORD-77.")]
Cents = Annotated[int, Field(description="The amount in cents of the order's currency.", gt=0)]


def find_refund(order_id: str, amount_cents: int, *, scope: ActionScope) -> Found | Absent:
    """Looks for the refund made with our key (payments deduplicate on it)."""
    found = payments.find(scope.key("create_refund"))
    if found is None:
        return Absent("no refund holds our key")
    rowid, _, cents = found
    result = {"refund_id": f"RF-{rowid}", "order_id": order_id, "amount_cents": int(cents)}
    return Found(f"refund RF-{rowid} holds our key", result=result, reference=f"RF-{rowid}")


@tools.mutating(effect=EffectClass.KEYED_WRITE, lookup=find_refund)
def create_refund(order_id: OrderId, amount_cents: Cents, *, scope: ActionScope) -> dict[str, Any]:
    """Refund part of an order to the original payment."""
    return payments.refund(order_id, amount_cents, idempotency_key=scope.key("create_refund"))


@tools.mutating(effect=EffectClass.KEYED_WRITE)
def issue_credit(order_id: OrderId, amount_cents: Cents, *, scope: ActionScope) -> dict[str, Any]:
    """Give store credit for an order instead of a refund."""
    return payments.credit(order_id, amount_cents, idempotency_key=scope.key("issue_credit"))


class Shipment(TypedDict):
    """A replacement on its way (the tool's outputSchema, or Reconciled after a person's
    resolve: the warehouse cannot be asked)."""

    shipment_id: str
    order_id: str
    sku: str


@tools.mutating(effect=EffectClass.PHYSICAL)
def ship_replacement(
    order_id: OrderId,
    sku: Annotated[str, Field(description="The item to ship again, e.g. SKU-RED-MUG.")],
    *,
    scope: ActionScope,
) -> Shipment:
    """Ship a replacement item; the warehouse cannot be asked whether a parcel left."""
    shipped = payments.ship(order_id, sku, idempotency_key=scope.key("ship_replacement"))
    return cast(Shipment, shipped)


@tools.read()
def get_refunds() -> dict[str, Any]:
    """The refunds the payments API holds."""
    return {"refunds": [list(row) for row in payments.refunds()]}


if __name__ == "__main__":
    server.run("stdio")
