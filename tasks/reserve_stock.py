"""ReserveStock (``keyed_write``): inventory reserves under a reservation id = our action key.

Reserving the same id again returns the existing reservation, so a repeat with the same key
never reserves twice; ``find_reservation`` proves presence or absence for reconciliation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services import Reservation, ReserveRequest, Services
from stepsaga import Absent, Call, Found, Lookup, Outcome, StepHandler
from workflows.case import Reserve


def reservation_id(action_key: str) -> str:
    """The reservation id of the reserve action ``action_key`` (stable across attempts)."""
    return action_key


def reservation_outcome(reservation: Reservation) -> Outcome:
    return Outcome(
        result={
            "reservation_id": reservation.reservation_id,
            "sku": reservation.sku,
            "quantity": reservation.quantity,
            "warehouse": reservation.warehouse,
            "status": reservation.status.value,
        },
        reference=reservation.reservation_id,
    )


class ReserveStock(StepHandler[Reserve, Services]):
    cost = 1

    def consequential(self, params: Reserve) -> Mapping[str, Any]:
        return {"sku": params.sku, "quantity": params.quantity, "warehouse": params.warehouse}

    def perform(self, services: Services, call: Call[Reserve]) -> Outcome:
        request = ReserveRequest(
            reservation_id=reservation_id(call.action.key),
            sku=call.params.sku,
            quantity=call.params.quantity,
            warehouse=call.params.warehouse,
        )
        return reservation_outcome(services.inventory.reserve(call.ctx, request))

    def lookup(self, services: Services, call: Call[Reserve]) -> Lookup:
        wanted = reservation_id(call.action.key)
        found = services.inventory.find_reservation(call.ctx, wanted)
        if found is None:
            return Absent(f"inventory.find_reservation: no reservation {wanted}")
        outcome = reservation_outcome(found)
        return Found(
            f"inventory.find_reservation: {wanted} is {found.status.value}",
            outcome.result,
            outcome.reference,
        )
