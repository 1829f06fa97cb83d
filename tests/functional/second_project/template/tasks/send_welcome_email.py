from __future__ import annotations

from clients import Fakes
from workflows.upgrade import Welcome

from stepsaga import Call, Outcome, StepHandler


class SendWelcomeEmail(StepHandler[Welcome, Fakes]):
    def perform(self, clients: Fakes, call: Call[Welcome]) -> Outcome:
        clients.apply("send_welcome_email", call.action.key, call.params.template, keyed=False)
        return Outcome(result={"sent": True})
