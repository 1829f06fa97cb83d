"""The replacement-order saga (seed 002 in docs/explanation/background.md): reserve stock → refund
the
damaged item → create the replacement shipment.

* ``ReserveStock`` (``keyed_write``: inventory reserves by a reservation id derived from
  our key). If a later step is rejected, ``ReleaseReservation`` undoes it.
* ``RefundPayment`` (``keyed_write``: payments accept our key as Idempotency-Key). A refund
  is never reversed automatically: if the shipment is rejected, it is escalated to
  reconciliation ("refund issued, replacement not shipped") — a record for a person, not an
  automatic charge. Under ``dual_control`` a person's ``not-applied`` on its items (which
  pays the refund again) needs a second, other person.
* ``CreateShipment`` (``physical``: no key downstream, irreversible). An uncertain outcome
  is reconciled by business reference, never retried blindly (the handler raises
  ``OutcomeUnknownError``, which is never retried and routes to ``ReconcileCreateShipment``).

Each step's params model comes from the input model (``Case.reserve`` is a ``Reserve``);
each step's handler is ``tasks.<operation>:<StepName>`` (the default reference).
"""

from __future__ import annotations

from stepsaga import Compensate, EffectClass, Escalate, Saga, Step
from stepsaga.workflow import CompensationEvent, StepEvent
from workflows.case import Case, Refund, Reserve, Shipment

saga = Saga(
    name="replacement-order",
    comment="Replacement order: reserve stock, refund the damaged item, ship the replacement.",
    input_model=Case,
    steps=[
        Step(
            "ReserveStock",
            operation="reserve_stock",
            effect=EffectClass.KEYED_WRITE,
            params="reserve",
            on_later_failure=Compensate(
                "ReleaseReservation",
                operation="release_reservation",
                effect=EffectClass.KEYED_WRITE,
            ),
        ),
        Step(
            "RefundPayment",
            operation="refund_payment",
            effect=EffectClass.KEYED_WRITE,
            params="refund",
            on_later_failure=Escalate("refund issued, replacement not shipped"),
            # A person's "not applied" re-runs the refund: two people must agree.
            dual_control=True,
        ),
        Step(
            "CreateShipment",
            operation="create_shipment",
            effect=EffectClass.PHYSICAL,
            params="shipment",
            on_later_failure=Escalate("replacement shipped, case not completed"),
        ),
    ],
)

#: The events each handler of this saga receives (validate with ``parse_event``).
ReserveStockEvent = StepEvent[Reserve]
RefundPaymentEvent = StepEvent[Refund]
CreateShipmentEvent = StepEvent[Shipment]
ReleaseReservationEvent = CompensationEvent[Reserve]
