"""The multi-warehouse replacement: the replacement-order saga for a case of several lines,
each reserved in its own warehouse, written with a per-item step and a parallel group.

* ``ReserveLines`` (``ForEach`` over ``lines``, keyed by ``line_id``, two at a time):
  ``ReserveLine`` reserves one line (``keyed_write``; action key ``…:reserve_line#<line>``,
  the reservation id inventory dedupes on). If anything later is rejected, each reserved
  line is released by ``ReleaseLine``, once.
* ``RefundAndShip`` (``Parallel``): the refund and the replacement shipment at once. A
  rejected shipment does not stop the refund: the refund completes and is escalated to
  reconciliation ("refund issued, replacement not shipped"), the lines are released.

The handlers are the replacement-order saga's (``tasks.reserve_stock:ReserveStock`` works
on any ``Reserve``, and a ``Line`` is one), referenced by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from stepsaga import (
    ApprovedCase,
    Compensate,
    EffectClass,
    Escalate,
    ForEach,
    Parallel,
    Reference,
    Saga,
    Step,
)
from stepsaga import load_case as _load
from stepsaga import parse_case as _parse
from workflows.case import Refund, Reserve, Shipment


class Line(Reserve):
    """One line of the replacement: what to reserve where, and its id in the order."""

    line_id: Reference


class MultiWarehouseCase(ApprovedCase):
    """An approved replacement of several lines, each from its own warehouse."""

    order_id: Reference
    lines: list[Line] = Field(min_length=1, max_length=40)
    refund: Refund
    shipment: Shipment

    @model_validator(mode="after")
    def _line_ids_unique(self) -> MultiWarehouseCase:
        seen: set[str] = set()
        for line in self.lines:
            if line.line_id in seen:
                raise ValueError(f"lines: line_id {line.line_id!r} appears twice")
            seen.add(line.line_id)
        return self

    def execution_input(self) -> dict[str, Any]:
        """The JSON the state machine starts with: canonical money, ISO timestamps."""
        data = super().execution_input()
        money = self.refund.money
        data["refund"]["amount"] = money.format()
        data["refund"]["currency"] = money.currency
        return data


saga = Saga(
    name="multi-warehouse-replacement",
    comment="Reserve each line in its warehouse, then refund and ship at once.",
    input_model=MultiWarehouseCase,
    steps=[
        ForEach(
            "ReserveLines",
            items="lines",
            item_key="line_id",
            max_concurrency=2,
            step=Step(
                "ReserveLine",
                operation="reserve_line",
                effect=EffectClass.KEYED_WRITE,
                handler="tasks.reserve_stock:ReserveStock",
                on_later_failure=Compensate(
                    "ReleaseLine",
                    operation="release_line",
                    effect=EffectClass.KEYED_WRITE,
                    handler="compensations.release_reservation:ReleaseReservation",
                ),
            ),
        ),
        Parallel(
            "RefundAndShip",
            branches=[
                [
                    Step(
                        "RefundPayment",
                        operation="refund_payment",
                        effect=EffectClass.KEYED_WRITE,
                        params="refund",
                        on_later_failure=Escalate("refund issued, replacement not shipped"),
                    )
                ],
                [
                    Step(
                        "CreateShipment",
                        operation="create_shipment",
                        effect=EffectClass.PHYSICAL,
                        params="shipment",
                        on_later_failure=Escalate("replacement shipped, case not completed"),
                    )
                ],
            ],
        ),
    ],
)


def parse_case(data: object) -> MultiWarehouseCase:
    """Validate decoded JSON as a multi-warehouse case (``InvalidInputError`` on failure)."""
    return _parse(data, MultiWarehouseCase)


def load_case(path: Path) -> MultiWarehouseCase:
    return _load(path, MultiWarehouseCase)
