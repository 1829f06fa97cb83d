"""Simulated shipping: every call that gets through ships. No idempotency key, no dedupe.

That is the point: a blind repeat after an uncertain outcome creates a second shipment, and
the effects table shows it. Only the ledger (and reconciliation by reference) prevents it.
The address is accepted and dropped: the simulation keeps no personal data.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable

from services.simulated.db import ServicesDb, from_text, to_text
from services.simulated.effects import record_effect
from services.simulated.injector import FaultInjector
from services.values import Operation, ShipmentRecord, ShipmentRequest
from stepsaga import CallContext, Clock
from stepsaga.errors import BusinessRejectedError


def new_shipment_id() -> str:
    return f"shp_{uuid.uuid4().hex[:24]}"


class SimulatedShipping:
    def __init__(
        self,
        db: ServicesDb,
        injector: FaultInjector,
        clock: Clock,
        *,
        new_id: Callable[[], str] = new_shipment_id,
    ) -> None:
        self._db = db
        self._faults = injector
        self._clock = clock
        self._new_id = new_id

    def close(self) -> None:
        """Close the store's connections (shared by the bundle; closing twice is fine)."""
        self._db.close()

    def create_shipment(self, ctx: CallContext, request: ShipmentRequest) -> ShipmentRecord:
        plan = self._faults.before_effect(ctx, Operation.CREATE_SHIPMENT)
        if not request.items or any(line.quantity < 1 for line in request.items):
            raise BusinessRejectedError(
                "shipping.create_shipment: needs at least one item, each quantity at least 1",
                service="shipping",
            )
        now = self._clock.now()
        shipment = ShipmentRecord(
            shipment_id=self._new_id(), reference=request.reference, created_at=now
        )
        items = json.dumps([{"sku": line.sku, "quantity": line.quantity} for line in request.items])
        with self._db.write() as conn:
            conn.execute(
                """INSERT INTO shipments (shipment_id, tenant_id, reference, items, created_at)
                   VALUES (?, ?, ?, ?, ?)""",
                (shipment.shipment_id, ctx.tenant_id, shipment.reference, items, to_text(now)),
            )
            record_effect(
                conn,
                ctx,
                Operation.CREATE_SHIPMENT,
                reference=request.reference,
                resource_id=shipment.shipment_id,
                call_number=plan.call_number,
                at=now,
                quantity=sum(line.quantity for line in request.items),
            )
        self._faults.after_effect(plan)
        return shipment

    def find_shipment_by_reference(self, ctx: CallContext, reference: str) -> ShipmentRecord | None:
        plan = self._faults.before_effect(ctx, Operation.FIND_SHIPMENT_BY_REFERENCE)
        with self._db.read() as conn:
            found = _earliest(conn, ctx.tenant_id, reference)
        self._faults.after_effect(plan)
        return found


def _earliest(conn: sqlite3.Connection, tenant_id: str, reference: str) -> ShipmentRecord | None:
    row = conn.execute(
        """SELECT * FROM shipments WHERE tenant_id = ? AND reference = ?
           ORDER BY created_at, rowid LIMIT 1""",
        (tenant_id, reference),
    ).fetchone()
    if row is None:
        return None
    return ShipmentRecord(
        shipment_id=row["shipment_id"],
        reference=row["reference"],
        created_at=from_text(row["created_at"]),
    )
