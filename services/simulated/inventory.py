"""Simulated inventory: stock per (tenant, sku, warehouse), reservations by our id.

A sku/warehouse the service has not seen starts with ``default_stock`` units (so the demo
needs no seeding); ``Simulation.set_stock`` sets exact figures for tests.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from services.simulated.db import ServicesDb, from_text, to_text
from services.simulated.effects import record_effect
from services.simulated.injector import FaultInjector
from services.values import Operation, Reservation, ReservationStatus, ReserveRequest
from stepsaga import CallContext, Clock
from stepsaga.errors import ActionConflictError, BusinessRejectedError, NotFoundError

DEFAULT_STOCK = 1000


class SimulatedInventory:
    def __init__(
        self,
        db: ServicesDb,
        injector: FaultInjector,
        clock: Clock,
        *,
        default_stock: int = DEFAULT_STOCK,
    ) -> None:
        self._db = db
        self._faults = injector
        self._clock = clock
        self._default_stock = default_stock

    def close(self) -> None:
        """Close the store's connections (shared by the bundle; closing twice is fine)."""
        self._db.close()

    def reserve(self, ctx: CallContext, request: ReserveRequest) -> Reservation:
        plan = self._faults.before_effect(ctx, Operation.RESERVE)
        if request.quantity < 1:
            raise BusinessRejectedError(
                "inventory.reserve: quantity must be at least 1", service="inventory"
            )
        now = self._clock.now()
        with self._db.write() as conn:
            existing = _load(conn, ctx.tenant_id, request.reservation_id)
            if existing is not None:
                if (existing.sku, existing.quantity, existing.warehouse) != (
                    request.sku,
                    request.quantity,
                    request.warehouse,
                ):
                    raise ActionConflictError(
                        f"inventory.reserve: reservation {request.reservation_id} exists "
                        "with other parameters",
                        service="inventory",
                        reservation_id=request.reservation_id,
                    )
                reservation = existing  # a replay: no second reservation, no effect row
            else:
                available = _available(conn, ctx.tenant_id, request, self._default_stock)
                if available < request.quantity:
                    raise BusinessRejectedError(
                        f"inventory.reserve: insufficient stock of {request.sku} in "
                        f"{request.warehouse} ({available} < {request.quantity})",
                        service="inventory",
                        code="insufficient_stock",
                    )
                reservation = _insert(conn, ctx, request, now, available)
                record_effect(
                    conn,
                    ctx,
                    Operation.RESERVE,
                    reference=request.reservation_id,
                    resource_id=request.reservation_id,
                    call_number=plan.call_number,
                    at=now,
                    sku=request.sku,
                    warehouse=request.warehouse,
                    quantity=request.quantity,
                )
        self._faults.after_effect(plan)
        return reservation

    def release(self, ctx: CallContext, reservation_id: str) -> Reservation:
        plan = self._faults.before_effect(ctx, Operation.RELEASE)
        now = self._clock.now()
        with self._db.write() as conn:
            existing = _load(conn, ctx.tenant_id, reservation_id)
            if existing is None:
                raise NotFoundError(
                    f"inventory.release: no reservation {reservation_id}",
                    service="inventory",
                    reservation_id=reservation_id,
                )
            if existing.status is ReservationStatus.RELEASED:
                reservation = existing  # idempotent: no second release, no effect row
            else:
                conn.execute(
                    """UPDATE reservations SET status = ?, released_at = ?
                       WHERE tenant_id = ? AND reservation_id = ?""",
                    (ReservationStatus.RELEASED.value, to_text(now), ctx.tenant_id, reservation_id),
                )
                conn.execute(
                    """UPDATE stock SET available = available + ?
                       WHERE tenant_id = ? AND sku = ? AND warehouse = ?""",
                    (existing.quantity, ctx.tenant_id, existing.sku, existing.warehouse),
                )
                reservation = _load_required(conn, ctx.tenant_id, reservation_id)
                record_effect(
                    conn,
                    ctx,
                    Operation.RELEASE,
                    reference=reservation_id,
                    resource_id=reservation_id,
                    call_number=plan.call_number,
                    at=now,
                    sku=existing.sku,
                    warehouse=existing.warehouse,
                    quantity=existing.quantity,
                )
        self._faults.after_effect(plan)
        return reservation

    def find_reservation(self, ctx: CallContext, reservation_id: str) -> Reservation | None:
        plan = self._faults.before_effect(ctx, Operation.FIND_RESERVATION)
        with self._db.read() as conn:
            found = _load(conn, ctx.tenant_id, reservation_id)
        self._faults.after_effect(plan)
        return found


def _available(
    conn: sqlite3.Connection, tenant_id: str, request: ReserveRequest, default: int
) -> int:
    conn.execute(
        """INSERT INTO stock (tenant_id, sku, warehouse, available) VALUES (?, ?, ?, ?)
           ON CONFLICT DO NOTHING""",
        (tenant_id, request.sku, request.warehouse, default),
    )
    row = conn.execute(
        "SELECT available FROM stock WHERE tenant_id = ? AND sku = ? AND warehouse = ?",
        (tenant_id, request.sku, request.warehouse),
    ).fetchone()
    return int(row["available"])


def _insert(
    conn: sqlite3.Connection,
    ctx: CallContext,
    request: ReserveRequest,
    now: datetime,
    available: int,
) -> Reservation:
    conn.execute(
        "UPDATE stock SET available = ? WHERE tenant_id = ? AND sku = ? AND warehouse = ?",
        (available - request.quantity, ctx.tenant_id, request.sku, request.warehouse),
    )
    conn.execute(
        """INSERT INTO reservations (tenant_id, reservation_id, sku, warehouse, quantity, status,
               created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (
            ctx.tenant_id,
            request.reservation_id,
            request.sku,
            request.warehouse,
            request.quantity,
            ReservationStatus.RESERVED.value,
            to_text(now),
        ),
    )
    return _load_required(conn, ctx.tenant_id, request.reservation_id)


def _load(conn: sqlite3.Connection, tenant_id: str, reservation_id: str) -> Reservation | None:
    row = conn.execute(
        "SELECT * FROM reservations WHERE tenant_id = ? AND reservation_id = ?",
        (tenant_id, reservation_id),
    ).fetchone()
    if row is None:
        return None
    return Reservation(
        reservation_id=row["reservation_id"],
        sku=row["sku"],
        quantity=row["quantity"],
        warehouse=row["warehouse"],
        status=ReservationStatus(row["status"]),
        created_at=from_text(row["created_at"]),
    )


def _load_required(conn: sqlite3.Connection, tenant_id: str, reservation_id: str) -> Reservation:
    found = _load(conn, tenant_id, reservation_id)
    assert found is not None, "written in this transaction"
    return found
