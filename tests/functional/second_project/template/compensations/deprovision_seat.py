from __future__ import annotations

from clients import Fakes
from workflows.upgrade import Seats

from stepsaga import Call, Outcome, StepHandler


class DeprovisionSeat(StepHandler[Seats, Fakes]):
    def perform(self, clients: Fakes, call: Call[Seats]) -> Outcome:
        clients.apply("deprovision_seat", call.action.key, call.params.plan, keyed=True)
        return Outcome(result={"deprovisioned": True})
