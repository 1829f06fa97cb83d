"""The ``effects`` table: one row per effect a simulated service applied.

Written in the same transaction as the effect itself, so a row exists iff the effect does —
even when the process is killed right after. Replays (an idempotent refund repeated, a
reservation reserved again, a released reservation released again) add no row. Anyone can
count rows per case to check "exactly once" from the outside.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from services.simulated.db import from_text, to_text
from services.values import Operation, Service
from stepsaga import CallContext


@dataclass(frozen=True)
class Effect:
    id: int
    service: Service
    operation: Operation
    tenant_id: str
    case_id: str
    reference: str
    """reserve/release: the reservation id; refund: the idempotency key; create_shipment:
    the shipment reference."""
    resource_id: str
    """What the service created or changed: reservation, refund or shipment id."""
    action_key: str
    call_number: int
    """The n-th call of this operation for this tenant and case (what faults' ``attempt``
    counts)."""
    at: datetime
    payment_id: str | None = None
    amount_minor: int | None = None
    currency: str | None = None
    sku: str | None = None
    warehouse: str | None = None
    quantity: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["service"] = str(self.service)
        data["operation"] = str(self.operation)
        data["at"] = to_text(self.at)
        return data


def record_effect(
    conn: sqlite3.Connection,
    ctx: CallContext,
    operation: Operation,
    *,
    reference: str,
    resource_id: str,
    call_number: int,
    at: datetime,
    payment_id: str | None = None,
    amount_minor: int | None = None,
    currency: str | None = None,
    sku: str | None = None,
    warehouse: str | None = None,
    quantity: int | None = None,
) -> None:
    """Call inside the effect's own transaction (``ServicesDb.write``)."""
    conn.execute(
        """INSERT INTO effects (service, operation, tenant_id, case_id, reference, resource_id,
               action_key, call_number, at, payment_id, amount_minor, currency, sku, warehouse,
               quantity)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            str(operation.service),
            str(operation),
            ctx.tenant_id,
            ctx.case_id,
            reference,
            resource_id,
            ctx.action_key,
            call_number,
            to_text(at),
            payment_id,
            amount_minor,
            currency,
            sku,
            warehouse,
            quantity,
        ),
    )


def list_effects(
    conn: sqlite3.Connection, *, tenant_id: str | None = None, case_id: str | None = None
) -> list[Effect]:
    """Effects in the order they were applied, optionally narrowed to a tenant and/or case."""
    clauses: list[str] = []
    params: list[str] = []
    if tenant_id is not None:
        clauses.append("tenant_id = ?")
        params.append(tenant_id)
    if case_id is not None:
        clauses.append("case_id = ?")
        params.append(case_id)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(f"SELECT * FROM effects {where} ORDER BY id", params).fetchall()
    return [_effect(row) for row in rows]


def _effect(row: sqlite3.Row) -> Effect:
    return Effect(
        id=row["id"],
        service=Service(row["service"]),
        operation=Operation(row["operation"]),
        tenant_id=row["tenant_id"],
        case_id=row["case_id"],
        reference=row["reference"],
        resource_id=row["resource_id"],
        action_key=row["action_key"],
        call_number=row["call_number"],
        at=from_text(row["at"]),
        payment_id=row["payment_id"],
        amount_minor=row["amount_minor"],
        currency=row["currency"],
        sku=row["sku"],
        warehouse=row["warehouse"],
        quantity=row["quantity"],
    )
