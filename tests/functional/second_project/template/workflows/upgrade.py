"""Subscription upgrade: charge the card, provision the seats, send the welcome email."""

from __future__ import annotations

from pydantic import BaseModel

from stepsaga import ApprovedCase, Compensate, EffectClass, Escalate, Saga, Step

#: Marks this package as the team's own, not the reference app's ``workflows``.
OWNER = "upgrade-app"


class Charge(BaseModel):
    card_id: str
    amount: str
    currency: str


class Seats(BaseModel):
    plan: str
    seats: int


class Welcome(BaseModel):
    template: str


class Upgrade(ApprovedCase):
    charge: Charge
    seats: Seats
    welcome: Welcome


saga = Saga(
    name="subscription-upgrade",
    input_model=Upgrade,
    steps=[
        Step(
            "ChargeCard",
            operation="charge_card",
            effect=EffectClass.KEYED_WRITE,
            params="charge",
            on_later_failure=Escalate("card charged, seats not provisioned"),
        ),
        Step(
            "ProvisionSeat",
            operation="provision_seat",
            effect=EffectClass.PHYSICAL,
            params="seats",
            on_later_failure=Compensate(
                "DeprovisionSeat", operation="deprovision_seat", effect=EffectClass.KEYED_WRITE
            ),
        ),
        Step(
            "SendWelcomeEmail",
            operation="send_welcome_email",
            effect=EffectClass.BLIND_WRITE,
            params="welcome",
            on_later_failure=Escalate("welcome sent"),
        ),
    ],
)
