"""An agent tool written with the decorator: ``python examples/agent_tools/decorator_tool.py DIR``.

The planner delivers one approved refund ten times (retries, timeouts, a redelivered
task); the ledger lets one through, replays the rest, and moves the agent's session
cursor in the same transaction as the outcome. Prints a JSON summary.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from payments import Payments

from stepsaga import EffectClass
from stepsaga.agents import RecordingMetrics
from stepsaga.ledger import (
    ActionScope,
    ExtraWrite,
    Intent,
    Record,
    Writes,
    absent,
    equals,
    ledgered_tool,
    open_ledger,
)

folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".stepsaga-agent")
ledger = open_ledger(f"sqlite:///{folder / 'ledger.sqlite3'}")
payments = Payments(folder)
metrics = RecordingMetrics()


@ledgered_tool(ledger, operation="create_refund", effect=EffectClass.KEYED_WRITE, metrics=metrics)
def create_refund(order_id: str, amount_cents: int, *, scope: ActionScope) -> dict[str, Any]:
    """Refund part of an order; the downstream deduplicates on the action key."""
    return payments.refund(order_id, amount_cents, idempotency_key=scope.key("create_refund"))


SESSION = ("TENANT#acme#SESSION#s1", "META")


def next_cursor(record: Record) -> list[ExtraWrite]:
    """Seed 000's session stamp: cursor 0 → 1, committed with the outcome."""
    result = record.result or {}
    return [
        ExtraWrite(
            *SESSION, {"cursor": 1, "last": str(result.get("refund_id"))}, equals("cursor", 0)
        )
    ]


if ledger.get_extra(*SESSION) is None:
    ledger.write([ExtraWrite(*SESSION, {"cursor": 0}, absent())])
# The approval flow's intent: tenant from authentication, case and revision from approval.
approved = Intent("CASE-1001", 1, datetime.now(UTC).replace(microsecond=0))
scope = ActionScope("acme", approved, writes=Writes(with_outcome=next_cursor))
results = [create_refund("ORD-77", 2000, scope=scope) for _ in range(10)]
print(
    json.dumps(
        {
            "results": len({json.dumps(r, sort_keys=True) for r in results}),
            "downstream_calls": payments.calls(),
            "refunds": payments.refunds(),
            "session": ledger.get_extra(*SESSION),
            "duplicates_replayed": metrics.total("DuplicateReplayed"),
        }
    )
)
