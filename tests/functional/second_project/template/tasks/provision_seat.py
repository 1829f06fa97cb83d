from __future__ import annotations

from clients import Fakes
from workflows.upgrade import Seats

from stepsaga import Call, Outcome, StepHandler


class ProvisionSeat(StepHandler[Seats, Fakes]):
    """Physical: no key downstream and no way to look, so doubt goes to a person."""

    def perform(self, clients: Fakes, call: Call[Seats]) -> Outcome:
        seat_id = clients.apply("provision_seat", call.action.key, call.params.plan, keyed=False)
        return Outcome(result={"seat_id": seat_id}, reference=seat_id)
