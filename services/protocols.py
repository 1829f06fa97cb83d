"""What handlers and reconciliation may ask of the downstream services.

Two implementations each: HTTP (``services.http``) and simulated on SQLite
(``services.simulated``). Every method raises only ``stepsaga.errors`` classes:

- writes: ``TransientError`` (known not applied, safe to retry), ``OutcomeUnknownError``
  (may or may not have been applied), ``BusinessRejectedError`` (permanently refused, not
  applied), ``ActionConflictError`` (identifier reused with other parameters, nothing
  changed), ``ActionInProgressError`` (the same key is being processed right now);
- reads: ``TransientError`` only (a read can always be repeated); "not there" is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, runtime_checkable

from services.values import (
    RefundRecord,
    RefundRequest,
    Reservation,
    ReserveRequest,
    ShipmentRecord,
    ShipmentRequest,
)
from stepsaga import CallContext


class InventoryService(Protocol):
    def reserve(self, ctx: CallContext, request: ReserveRequest) -> Reservation:
        """Reserve stock under ``request.reservation_id``; repeating the same request
        returns the existing reservation (whatever its status) without reserving again.
        The same id with other parameters is an ``ActionConflictError``."""
        ...

    def release(self, ctx: CallContext, reservation_id: str) -> Reservation:
        """Release a reservation; idempotent (releasing a released one returns it again).
        An id the service never saw raises ``NotFoundError``."""
        ...

    def find_reservation(self, ctx: CallContext, reservation_id: str) -> Reservation | None: ...


class PaymentsService(Protocol):
    def refund(self, ctx: CallContext, request: RefundRequest) -> RefundRecord:
        """Refund once per idempotency key (within the service's key window)."""
        ...

    def find_refund_by_key(self, ctx: CallContext, idempotency_key: str) -> RefundRecord | None:
        """The refund made under this key, if any (reconciliation's proof of presence or
        absence)."""
        ...


class ShippingService(Protocol):
    def create_shipment(self, ctx: CallContext, request: ShipmentRequest) -> ShipmentRecord:
        """Create a shipment. Not idempotent: each call that reaches the service ships."""
        ...

    def find_shipment_by_reference(self, ctx: CallContext, reference: str) -> ShipmentRecord | None:
        """The earliest shipment carrying ``reference``, if any."""
        ...


@runtime_checkable
class Closeable(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class Services:
    """The three services a saga talks to, opened together and closed together."""

    inventory: InventoryService
    payments: PaymentsService
    shipping: ShippingService

    def close(self) -> None:
        for service in (self.inventory, self.payments, self.shipping):
            if isinstance(service, Closeable):
                service.close()

    def __enter__(self) -> Services:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
