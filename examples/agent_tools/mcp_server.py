"""The same tool served over MCP (stdio): ``python examples/agent_tools/mcp_server.py DIR``.

The host launches one server per authenticated tenant and says which in ``AGENT_TENANT``
(the model never chooses it). Every mutating tool requires the ``idempotencyKey`` the
approval flow issued; ``get_refunds`` is a read and never touches the ledger. Metrics go
to stderr as EMF: stdout is the protocol's channel.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from payments import Payments

from stepsaga import metric_names
from stepsaga.agents import LedgeredTools
from stepsaga.handlers.metrics import EmfMetrics
from stepsaga.ledger import ActionScope, EffectClass, open_ledger

folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".stepsaga-agent")
ledger = open_ledger(f"sqlite:///{folder / 'ledger.sqlite3'}")
payments = Payments(folder)
metrics = EmfMetrics(
    metric_names.NAMESPACE,
    metric_names.SERVICE_NAME,
    write=lambda line: print(line, file=sys.stderr, flush=True),
)

server = MCPServer("refunds")
tools = LedgeredTools(server, ledger=ledger, tenant=os.environ["AGENT_TENANT"], metrics=metrics)


@tools.mutating(effect=EffectClass.KEYED_WRITE)
def create_refund(order_id: str, amount_cents: int, *, scope: ActionScope) -> dict[str, Any]:
    """Refund part of an order (amount in cents)."""
    return payments.refund(order_id, amount_cents, idempotency_key=scope.key("create_refund"))


@tools.read()
def get_refunds() -> dict[str, Any]:
    """The refunds the payments API holds."""
    return {"refunds": [list(row) for row in payments.refunds()]}


if __name__ == "__main__":
    server.run("stdio")
