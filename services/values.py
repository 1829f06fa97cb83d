"""Frozen values that cross the boundary to the downstream services.

They are our own types, not the case file's pydantic models, so a change to the case format
never silently changes what goes on the wire. Handlers build them from the validated case.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from stepsaga import Money


class Service(StrEnum):
    INVENTORY = "inventory"
    PAYMENTS = "payments"
    SHIPPING = "shipping"


class Operation(StrEnum):
    """Every call a service offers; the first four apply effects, the rest only read."""

    RESERVE = "reserve"
    RELEASE = "release"
    REFUND = "refund"
    CREATE_SHIPMENT = "create_shipment"
    FIND_RESERVATION = "find_reservation"
    FIND_REFUND_BY_KEY = "find_refund_by_key"
    FIND_SHIPMENT_BY_REFERENCE = "find_shipment_by_reference"

    @property
    def service(self) -> Service:
        return _SERVICE_OF[self]

    @property
    def is_write(self) -> bool:
        """A write may apply an effect; a read never does (so it is always safe to repeat)."""
        return self in _WRITES


_SERVICE_OF: dict[Operation, Service] = {
    Operation.RESERVE: Service.INVENTORY,
    Operation.RELEASE: Service.INVENTORY,
    Operation.FIND_RESERVATION: Service.INVENTORY,
    Operation.REFUND: Service.PAYMENTS,
    Operation.FIND_REFUND_BY_KEY: Service.PAYMENTS,
    Operation.CREATE_SHIPMENT: Service.SHIPPING,
    Operation.FIND_SHIPMENT_BY_REFERENCE: Service.SHIPPING,
}
_WRITES = frozenset(
    {Operation.RESERVE, Operation.RELEASE, Operation.REFUND, Operation.CREATE_SHIPMENT}
)


# --- inventory --------------------------------------------------------------------------


class ReservationStatus(StrEnum):
    RESERVED = "reserved"
    RELEASED = "released"


@dataclass(frozen=True)
class ReserveRequest:
    """Reserve ``quantity`` of ``sku`` in ``warehouse`` under a caller-chosen id.

    The reservation id is the natural idempotency key: reserving the same id again with the
    same parameters returns the existing reservation instead of reserving twice.
    """

    reservation_id: str
    sku: str
    quantity: int
    warehouse: str


@dataclass(frozen=True)
class Reservation:
    reservation_id: str
    sku: str
    quantity: int
    warehouse: str
    status: ReservationStatus
    created_at: datetime


# --- payments ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RefundRequest:
    """Refund ``amount`` of ``payment_id``; ``idempotency_key`` makes a repeat replay the
    first refund instead of refunding twice (within the service's key window)."""

    payment_id: str
    amount: Money
    idempotency_key: str


@dataclass(frozen=True)
class RefundRecord:
    refund_id: str
    payment_id: str
    amount: Money
    idempotency_key: str
    created_at: datetime


# --- shipping ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ShippingAddress:
    """Personal data: goes on the wire, never into logs, errors or the effects table."""

    name: str
    line1: str
    city: str
    postal_code: str
    country: str
    line2: str | None = None

    def __repr__(self) -> str:  # keep addresses out of tracebacks and log lines
        return f"ShippingAddress(country={self.country!r}, ...)"


@dataclass(frozen=True)
class ShipmentLine:
    sku: str
    quantity: int


@dataclass(frozen=True)
class ShipmentRequest:
    """Create a shipment. ``reference`` is a business reference the service stores and can
    be searched by; the service does **not** deduplicate on it (there is no idempotency key),
    so a blind repeat creates a second shipment."""

    reference: str
    address: ShippingAddress
    items: tuple[ShipmentLine, ...]


@dataclass(frozen=True)
class ShipmentRecord:
    shipment_id: str
    reference: str
    created_at: datetime
