"""The approved case: the only trusted source of tenant, case and intent.

Validated at the boundary (CLI ``start``, the AWS backend, handlers' events); unknown
fields are rejected so a typo never silently drops a consequential parameter.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from stepsaga.approval_time import ApprovedAt
from stepsaga.errors import InvalidActionError
from stepsaga.inputs import read_json_file, validate_object
from stepsaga.money import Amount, Money
from stepsaga.person import PersonId

#: Identifiers become parts of ledger keys and execution names: keep them to safe characters.
TenantId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$")]
CaseId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")]
Reference = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=True)]
Country = Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")]

MAX_CASE_FILE_BYTES = 64 * 1024
#: The highest approved revision a case (and so a task event) may carry.
MAX_REVISION = 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Approval(_Strict):
    approved_by: PersonId
    approved_at: ApprovedAt
    revision: int = Field(ge=1, le=MAX_REVISION, strict=True)


class Reserve(_Strict):
    sku: Reference
    quantity: int = Field(ge=1, le=10_000, strict=True)
    warehouse: Reference


class Refund(_Strict):
    payment_id: Reference
    amount: Amount
    currency: Annotated[str, StringConstraints(min_length=3, max_length=3)]

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


class Address(_Strict):
    name: Text
    line1: Text
    line2: Text | None = None
    city: Text
    postal_code: Annotated[str, StringConstraints(min_length=1, max_length=16)]
    country: Country


class ShipmentItem(_Strict):
    sku: Reference
    quantity: int = Field(ge=1, le=10_000, strict=True)


class Shipment(_Strict):
    address: Address
    items: list[ShipmentItem] = Field(min_length=1, max_length=100)


class Case(_Strict):
    """An approved replacement-order case (the file format in DESIGN.md)."""

    tenant_id: TenantId
    case_id: CaseId
    approval: Approval
    order_id: Reference
    reserve: Reserve
    refund: Refund
    shipment: Shipment

    def execution_input(self) -> dict[str, Any]:
        """The JSON the state machine starts with: canonical money, ISO timestamps."""
        data = self.model_dump(mode="json", exclude_none=True)
        money = self.refund.money
        data["refund"]["amount"] = money.format()
        data["refund"]["currency"] = money.currency
        data["approval"]["approved_at"] = self.approval.approved_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        return data


def parse_case(data: object) -> Case:
    """Validate already-decoded JSON; raises ``InvalidInputError`` with the field named."""
    return validate_object(Case.model_validate, data, "case")


def load_case(path: Path) -> Case:
    """Read and validate a case file; every failure is one ``InvalidInputError`` line."""
    return parse_case(read_json_file(path, what="case file", max_bytes=MAX_CASE_FILE_BYTES))
