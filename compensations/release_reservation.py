"""ReleaseReservation (``keyed_write``): undo ReserveStock by releasing its reservation.

Its action key derives from the reservation's (``…:reserve_stock:compensate:
release_reservation``) and the ledger records its outcome, so any number of runs make one
release; inventory's release is idempotent too (releasing a released reservation returns
it). ``lookup`` (``find_reservation``) tells whether the release happened: before a repeat
attempt, and when a failed release is reconciled (released → ``applied``, the unwinding goes
on; still reserved or absent → ``not_applied``, the release runs again with the same key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services import ReservationStatus, Services
from stepsaga import Absent, Call, Found, Lookup, Outcome, StepHandler
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import Action
from tasks.reserve_stock import reservation_id, reservation_outcome
from workflows.case import Reserve


def _reserved_id(call: Call[Reserve]) -> str:
    original: Action | None = call.original
    if original is None:
        raise InvalidInputError(
            "original: a release needs the reservation it undoes", field="original"
        )
    return reservation_id(original.key)


class ReleaseReservation(StepHandler[Reserve, Services]):
    def consequential(self, params: Reserve) -> Mapping[str, Any]:
        return {"sku": params.sku, "quantity": params.quantity, "warehouse": params.warehouse}

    def perform(self, services: Services, call: Call[Reserve]) -> Outcome:
        return reservation_outcome(services.inventory.release(call.ctx, _reserved_id(call)))

    def lookup(self, services: Services, call: Call[Reserve]) -> Lookup:
        wanted = _reserved_id(call)
        found = services.inventory.find_reservation(call.ctx, wanted)
        if found is None:
            return Absent(f"inventory.find_reservation: no reservation {wanted}")
        if found.status is not ReservationStatus.RELEASED:
            return Absent(f"inventory.find_reservation: {wanted} is still {found.status.value}")
        outcome = reservation_outcome(found)
        return Found(
            f"inventory.find_reservation: {wanted} is released", outcome.result, outcome.reference
        )
