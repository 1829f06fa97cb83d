"""The replacement-order case (the file format in docs/explanation/design.md): the approved intent
plus what each step needs — a reservation, a refund, a shipment."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from stepsaga import Amount, ApprovedCase, Currency, Money, Reference, StrictModel, Text
from stepsaga import load_case as _load
from stepsaga import parse_case as _parse
from stepsaga.errors import InvalidActionError

Country = Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")]


class Reserve(StrictModel):
    sku: Reference
    quantity: int = Field(ge=1, le=10_000, strict=True)
    warehouse: Reference


class Refund(StrictModel):
    payment_id: Reference
    amount: Amount
    currency: Currency

    @model_validator(mode="after")
    def _money_fits_currency(self) -> Refund:
        money = self.money
        if money.minor <= 0:
            raise ValueError("amount must be positive")
        if money.minor > 10**12:
            raise ValueError("amount is implausibly large")
        return self

    @field_validator("amount", mode="before")
    @classmethod
    def _no_bool_or_float_noise(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be a number or a decimal string")
        if isinstance(value, str) and len(value) > 32:
            raise ValueError("is too long")
        if isinstance(value, float):
            return Decimal(str(value))
        return value

    @property
    def money(self) -> Money:
        try:
            return Money.parse(self.amount, self.currency)
        except InvalidActionError as exc:
            raise ValueError(exc.message) from None


class Address(StrictModel):
    name: Text
    line1: Text
    line2: Text | None = None
    city: Text
    postal_code: Annotated[str, StringConstraints(min_length=1, max_length=16)]
    country: Country


class ShipmentItem(StrictModel):
    sku: Reference
    quantity: int = Field(ge=1, le=10_000, strict=True)


class Shipment(StrictModel):
    address: Address
    items: list[ShipmentItem] = Field(min_length=1, max_length=100)


class Case(ApprovedCase):
    """An approved replacement-order case."""

    order_id: Reference
    reserve: Reserve
    refund: Refund
    shipment: Shipment

    def execution_input(self) -> dict[str, Any]:
        """The JSON the state machine starts with: canonical money, ISO timestamps."""
        data = super().execution_input()
        money = self.refund.money
        data["refund"]["amount"] = money.format()
        data["refund"]["currency"] = money.currency
        return data


def parse_case(data: object) -> Case:
    """Validate decoded JSON as a replacement-order case (``InvalidInputError`` on failure)."""
    return _parse(data, Case)


def load_case(path: Path) -> Case:
    """Read and validate a replacement-order case file (one ``InvalidInputError`` line)."""
    return _load(path, Case)
