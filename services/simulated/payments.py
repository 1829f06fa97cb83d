"""Simulated payments: refunds deduplicated by idempotency key for 24 hours, as Stripe does.

Within the window, the same key with the same parameters replays the first refund (no
second refund, no effect row); with other parameters it is a conflict. After the window the
key is forgotten for deduplication and a repeat refunds again — the hazard a ledger whose
replay horizon outlives the key window must guard against. The key stays searchable
forever (``find_refund_by_key``), as a key stored in refund metadata would be, so
reconciliation can still find the refund.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from services.simulated.db import ServicesDb, from_text, to_text
from services.simulated.effects import record_effect
from services.simulated.injector import FaultInjector
from services.values import Operation, RefundRecord, RefundRequest
from stepsaga import CallContext, Clock, Money
from stepsaga.errors import ActionConflictError, BusinessRejectedError

KEY_WINDOW = timedelta(hours=24)


def new_refund_id() -> str:
    return f"re_{uuid.uuid4().hex[:24]}"


class SimulatedPayments:
    def __init__(
        self,
        db: ServicesDb,
        injector: FaultInjector,
        clock: Clock,
        *,
        key_window: timedelta = KEY_WINDOW,
        new_id: Callable[[], str] = new_refund_id,
    ) -> None:
        self._db = db
        self._faults = injector
        self._clock = clock
        self._key_window = key_window
        self._new_id = new_id

    def close(self) -> None:
        """Close the store's connections (shared by the bundle; closing twice is fine)."""
        self._db.close()

    def refund(self, ctx: CallContext, request: RefundRequest) -> RefundRecord:
        plan = self._faults.before_effect(ctx, Operation.REFUND)
        if request.amount.minor <= 0:
            raise BusinessRejectedError(
                "payments.refund: amount must be positive", service="payments"
            )
        now = self._clock.now()
        with self._db.write() as conn:
            remembered = _latest(
                conn, ctx.tenant_id, request.idempotency_key, since=now - self._key_window
            )
            if remembered is not None:
                if (remembered.payment_id, remembered.amount) != (
                    request.payment_id,
                    request.amount,
                ):
                    raise ActionConflictError(
                        "payments.refund: idempotency key reused with other parameters",
                        service="payments",
                        key=request.idempotency_key,
                    )
                refund = remembered  # a replay: no second refund, no effect row
            else:
                refund = RefundRecord(
                    refund_id=self._new_id(),
                    payment_id=request.payment_id,
                    amount=request.amount,
                    idempotency_key=request.idempotency_key,
                    created_at=now,
                )
                _insert(conn, ctx.tenant_id, refund)
                record_effect(
                    conn,
                    ctx,
                    Operation.REFUND,
                    reference=request.idempotency_key,
                    resource_id=refund.refund_id,
                    call_number=plan.call_number,
                    at=now,
                    payment_id=request.payment_id,
                    amount_minor=request.amount.minor,
                    currency=request.amount.currency,
                )
        self._faults.after_effect(plan)
        return refund

    def find_refund_by_key(self, ctx: CallContext, idempotency_key: str) -> RefundRecord | None:
        plan = self._faults.before_effect(ctx, Operation.FIND_REFUND_BY_KEY)
        with self._db.read() as conn:
            found = _latest(conn, ctx.tenant_id, idempotency_key, since=None)
        self._faults.after_effect(plan)
        return found


def _latest(
    conn: sqlite3.Connection, tenant_id: str, key: str, *, since: datetime | None
) -> RefundRecord | None:
    """The newest refund under ``key``, made after ``since`` if given."""
    query = "SELECT * FROM refunds WHERE tenant_id = ? AND idempotency_key = ?"
    params: list[str] = [tenant_id, key]
    if since is not None:
        query += " AND created_at > ?"
        params.append(to_text(since))
    row = conn.execute(query + " ORDER BY created_at DESC LIMIT 1", params).fetchone()
    if row is None:
        return None
    return RefundRecord(
        refund_id=row["refund_id"],
        payment_id=row["payment_id"],
        amount=Money(row["amount_minor"], row["currency"]),
        idempotency_key=row["idempotency_key"],
        created_at=from_text(row["created_at"]),
    )


def _insert(conn: sqlite3.Connection, tenant_id: str, refund: RefundRecord) -> None:
    conn.execute(
        """INSERT INTO refunds (refund_id, tenant_id, payment_id, amount_minor, currency,
               idempotency_key, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (
            refund.refund_id,
            tenant_id,
            refund.payment_id,
            refund.amount.minor,
            refund.amount.currency,
            refund.idempotency_key,
            to_text(refund.created_at),
        ),
    )
