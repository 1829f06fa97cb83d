from __future__ import annotations

from clients import Fakes
from workflows.upgrade import Charge

from stepsaga import Absent, Call, Found, Lookup, Outcome, StepHandler


class ChargeCard(StepHandler[Charge, Fakes]):
    def perform(self, clients: Fakes, call: Call[Charge]) -> Outcome:
        charge_id = clients.apply("charge_card", call.action.key, call.params.amount, keyed=True)
        return Outcome(result={"charge_id": charge_id}, reference=charge_id)

    def lookup(self, clients: Fakes, call: Call[Charge]) -> Lookup:
        if clients.found("charge_card", call.action.key):
            return Found("billing: charge under our key", {"charge_id": "found"})
        return Absent("billing: no charge under our key")
