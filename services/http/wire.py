"""The JSON wire contract with the real services (documented in ``services/README.md``).

Requests are built from our frozen values; replies are validated with pydantic and turned
back into them. Replies ignore unknown fields (a service may add fields) but every field we
rely on must be there: a reply we cannot read is a ``WireFormatError``, which the client maps
to an uncertain outcome on a write (the service answered 2xx, so it did something).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from services.values import (
    RefundRecord,
    RefundRequest,
    Reservation,
    ReservationStatus,
    ReserveRequest,
    ShipmentRecord,
    ShipmentRequest,
)
from stepsaga import Money
from stepsaga.errors import InvalidActionError


class WireFormatError(ValueError):
    """A 2xx reply that does not follow the contract."""


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReservationReply(_Reply):
    reservation_id: str
    sku: str
    quantity: int
    warehouse: str
    status: ReservationStatus
    created_at: AwareDatetime


class RefundReply(_Reply):
    refund_id: str
    payment_id: str
    amount_minor: int
    currency: str = Field(min_length=3, max_length=3)
    idempotency_key: str
    created_at: AwareDatetime


class ShipmentReply(_Reply):
    shipment_id: str
    reference: str
    created_at: AwareDatetime


class RefundList(_Reply):
    data: list[RefundReply]


class ShipmentList(_Reply):
    data: list[ShipmentReply]


M = TypeVar("M", bound=BaseModel)


def _validate(model: type[M], data: Any) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise WireFormatError(f"{where}: {first['msg']}") from None


# --- inventory --------------------------------------------------------------------------


def reserve_body(request: ReserveRequest) -> dict[str, Any]:
    return {"sku": request.sku, "quantity": request.quantity, "warehouse": request.warehouse}


def reservation_from(data: Any) -> Reservation:
    reply = _validate(ReservationReply, data)
    return Reservation(
        reservation_id=reply.reservation_id,
        sku=reply.sku,
        quantity=reply.quantity,
        warehouse=reply.warehouse,
        status=reply.status,
        created_at=reply.created_at,
    )


# --- payments ---------------------------------------------------------------------------


def refund_body(request: RefundRequest) -> dict[str, Any]:
    return {
        "payment_id": request.payment_id,
        "amount_minor": request.amount.minor,
        "currency": request.amount.currency,
    }


def _refund(reply: RefundReply) -> RefundRecord:
    try:
        amount = Money(reply.amount_minor, reply.currency.upper())
        amount.exponent  # noqa: B018 - validates the currency code
    except InvalidActionError as exc:
        raise WireFormatError(f"currency: {exc.message}") from None
    return RefundRecord(
        refund_id=reply.refund_id,
        payment_id=reply.payment_id,
        amount=amount,
        idempotency_key=reply.idempotency_key,
        created_at=reply.created_at,
    )


def refund_from(data: Any) -> RefundRecord:
    return _refund(_validate(RefundReply, data))


def first_refund_from(data: Any) -> RefundRecord | None:
    """``GET /refunds?idempotency_key=…`` lists newest first."""
    listed = _validate(RefundList, data).data
    return _refund(listed[0]) if listed else None


# --- shipping ---------------------------------------------------------------------------


def shipment_body(request: ShipmentRequest) -> dict[str, Any]:
    address = request.address
    wire_address = {
        "name": address.name,
        "line1": address.line1,
        "city": address.city,
        "postal_code": address.postal_code,
        "country": address.country,
    }
    if address.line2 is not None:
        wire_address["line2"] = address.line2
    return {
        "reference": request.reference,
        "address": wire_address,
        "items": [{"sku": line.sku, "quantity": line.quantity} for line in request.items],
    }


def _shipment(reply: ShipmentReply) -> ShipmentRecord:
    return ShipmentRecord(
        shipment_id=reply.shipment_id, reference=reply.reference, created_at=reply.created_at
    )


def shipment_from(data: Any) -> ShipmentRecord:
    return _shipment(_validate(ShipmentReply, data))


def first_shipment_from(data: Any) -> ShipmentRecord | None:
    """``GET /shipments?reference=…`` lists oldest first."""
    listed = _validate(ShipmentList, data).data
    return _shipment(listed[0]) if listed else None
