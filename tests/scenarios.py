"""The replacement-order saga's scenarios: a mock config test case per failure route, and
the behaviour each must produce on any backend (``stepsaga.testing.Scenario``).

Every one mocks every state it reaches. The reconciliation scenarios end without waiting
on a task token: some are decided by the automatic reconciler (mocked ``Reconcile…`` or
``Record…Failure`` results ``applied``/``not_applied``), one waits in ``AwaitDecision…``
whose mocked result is the operator's decision. ``python -m tests.scenarios`` prints
their mock config file (``examples/mock-config/replacement-order.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepsaga.testing import MockConfigBuilder, Return, step_result
from stepsaga.testing._scenarios import Scenario, mock_config, reconciliation_result, task_error
from workflows.case import parse_case
from workflows.replacement_order import saga

#: A valid case (``stepsaga._model.case.Case``) as the execution input the scenarios run with.
REPLACEMENT_ORDER_CASE: Mapping[str, Any] = {
    "tenant_id": "acme",
    "case_id": "CASE-1001",
    "approval": {
        "approved_by": "ops@acme.example",
        "approved_at": "2026-11-29T09:30:00Z",
        "revision": 1,
    },
    "order_id": "ORD-77",
    "reserve": {"sku": "SKU-RED-MUG", "quantity": 1, "warehouse": "eu-west"},
    "refund": {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"},
    "shipment": {
        "address": {
            "name": "A. Buyer",
            "line1": "1 Main St",
            "city": "Berlin",
            "postal_code": "10115",
            "country": "DE",
        },
        "items": [{"sku": "SKU-RED-MUG", "quantity": 1}],
    },
}

_KEY = "acme:CASE-1001:r1"


def replacement_order_input() -> dict[str, Any]:
    """``REPLACEMENT_ORDER_CASE`` validated and canonicalized as ``stepsaga start`` would."""
    return parse_case(REPLACEMENT_ORDER_CASE).execution_input()


def _completed(operation: str, result: dict[str, Any], *, replayed: bool = False) -> Return:
    return step_result(f"{_KEY}:{operation}", result, replayed=replayed)


_error = task_error
_recorded = reconciliation_result


_RESERVED = _completed("reserve_stock", {"reservation_id": "RES-1"})
_REFUNDED = _completed("refund_payment", {"refund_id": "RF-1"})
_REFUND_REPLAYED = _completed("refund_payment", {"refund_id": "RF-1"}, replayed=True)
_SHIPPED = _completed("create_shipment", {"shipment_id": "SH-1"})
_SHIPMENT_REPLAYED = _completed("create_shipment", {"shipment_id": "SH-1"}, replayed=True)
_RELEASED = step_result(
    f"{_KEY}:reserve_stock:compensate:release_reservation",
    {"reservation_id": "RES-1", "released": True},
)
_SHIPMENT_REJECTED = _error("BusinessRejectedError", "shipping: rejected (422)")
_RELEASE_UNAVAILABLE = "inventory: not sent (503)"
_RELEASE_UNCERTAIN = _error("OutcomeUnknownError", "inventory.release: no reply (timeout)")
_ESCALATED = _recorded("undecided", "RECON-REFUND-1")

_FORWARD = ("ReserveStock", "RefundPayment", "CreateShipment")
_REJECTED = (*_FORWARD, "EscalateRefundPayment", "ReleaseReservation")
#: A failed release, reconciled automatically; the Choice then routes on its outcome.
_RELEASE_RECONCILED = ("RecordReleaseReservationFailure", "ReleaseReservationDecision")

REPLACEMENT_ORDER_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="HappyPath",
        summary="every step completes",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPPED,),
        },
        path=_FORWARD,
        status="SUCCEEDED",
    ),
    Scenario(
        name="RefundThrottledTwice",
        summary="payments throttle the refund twice; the third attempt succeeds",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (
                _error("TransientError", "payments: throttled (429)", times=2),
                _REFUNDED,
            ),
            "CreateShipment": (_SHIPPED,),
        },
        path=_FORWARD,
        status="SUCCEEDED",
        retries={"RefundPayment": 2},
    ),
    Scenario(
        name="ShipmentRejected",
        summary="shipping rejects the replacement: refund escalated, reservation released",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPMENT_REJECTED,),
            "EscalateRefundPayment": (_ESCALATED,),
            "ReleaseReservation": (_RELEASED,),
        },
        path=(*_REJECTED, "Compensated"),
        status="FAILED",
        error="Saga.Compensated",
        caught={"CreateShipment": "BusinessRejectedError"},
    ),
    Scenario(
        name="ReleaseFailsOnce",
        summary="shipment rejected; releasing the reservation fails once, then succeeds",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPMENT_REJECTED,),
            "EscalateRefundPayment": (_ESCALATED,),
            "ReleaseReservation": (_error("TransientError", _RELEASE_UNAVAILABLE), _RELEASED),
        },
        path=(*_REJECTED, "Compensated"),
        status="FAILED",
        error="Saga.Compensated",
        retries={"ReleaseReservation": 1},
        caught={"CreateShipment": "BusinessRejectedError"},
    ),
    Scenario(
        name="ReleaseExhausted",
        summary="shipment rejected; releasing fails through every retry, so the failed "
        "compensation is recorded for reconciliation",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPMENT_REJECTED,),
            "EscalateRefundPayment": (_ESCALATED,),
            "ReleaseReservation": (_error("TransientError", _RELEASE_UNAVAILABLE, times=8),),
            "RecordReleaseReservationFailure": (_recorded("undecided", "RECON-RELEASE-1"),),
        },
        path=(*_REJECTED, *_RELEASE_RECONCILED, "CompensationFailed"),
        status="FAILED",
        error="Saga.CompensationFailed",
        retries={"ReleaseReservation": 7},
        caught={"CreateShipment": "BusinessRejectedError", "ReleaseReservation": "TransientError"},
    ),
    Scenario(
        name="ReleaseOutcomeUnknown",
        summary="shipment rejected; the release's reply is lost, and automatic reconciliation "
        "finds the reservation released (applied), so the unwinding goes on",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPMENT_REJECTED,),
            "EscalateRefundPayment": (_ESCALATED,),
            "ReleaseReservation": (_RELEASE_UNCERTAIN,),
            "RecordReleaseReservationFailure": (_recorded("applied", "RECON-RELEASE-1"),),
        },
        path=(*_REJECTED, *_RELEASE_RECONCILED, "Compensated"),
        status="FAILED",
        error="Saga.Compensated",
        caught={
            "CreateShipment": "BusinessRejectedError",
            "ReleaseReservation": "OutcomeUnknownError",
        },
    ),
    Scenario(
        name="ReleaseNotApplied",
        summary="shipment rejected; the release's outcome is uncertain, reconciliation finds "
        "the reservation still held (not applied), and the release runs again with its key",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPMENT_REJECTED,),
            "EscalateRefundPayment": (_ESCALATED,),
            "ReleaseReservation": (_RELEASE_UNCERTAIN, _RELEASED),
            "RecordReleaseReservationFailure": (_recorded("not_applied", "RECON-RELEASE-1"),),
        },
        path=(*_REJECTED, *_RELEASE_RECONCILED, "ReleaseReservation", "Compensated"),
        status="FAILED",
        error="Saga.Compensated",
        caught={
            "CreateShipment": "BusinessRejectedError",
            "ReleaseReservation": "OutcomeUnknownError",
        },
    ),
    Scenario(
        name="RefundOutcomeUnknown",
        summary="the refund's outcome is uncertain; reconciliation cannot decide, an operator "
        "resolves it as applied, and the refund replays its recorded outcome",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (
                _error("OutcomeUnknownError", "payments: no reply (timeout)"),
                _REFUND_REPLAYED,
            ),
            "ReconcileRefundPayment": (_recorded("undecided", "RECON-REFUND-1"),),
            # The callback output, as `stepsaga recon resolve` sends it with SendTaskSuccess.
            "AwaitDecisionRefundPayment": (
                Return(
                    {
                        "outcome": "applied",
                        "item_id": "RECON-REFUND-1",
                        "decided_by": "ops@acme.example",
                        "note": "refund RF-1 found at the provider",
                    }
                ),
            ),
            "CreateShipment": (_SHIPPED,),
        },
        path=(
            "ReserveStock",
            "RefundPayment",
            "ReconcileRefundPayment",
            "RefundPaymentDecision",
            "AwaitDecisionRefundPayment",
            "RefundPaymentDecision",
            "RefundPayment",
            "CreateShipment",
        ),
        status="SUCCEEDED",
        caught={"RefundPayment": "OutcomeUnknownError"},
    ),
    Scenario(
        name="AttemptBudgetExhausted",
        summary="the shipment's lifetime attempt budget is spent; automatic reconciliation "
        "finds the shipment by reference (applied) and the step replays it",
        mocks={
            "ReserveStock": (_RESERVED,),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (
                _error("AttemptBudgetExhaustedError", "create_shipment: 5 of 5 attempts used"),
                _SHIPMENT_REPLAYED,
            ),
            "ReconcileCreateShipment": (_recorded("applied", None),),
        },
        path=(
            *_FORWARD,
            "ReconcileCreateShipment",
            "CreateShipmentDecision",
            "CreateShipment",
        ),
        status="SUCCEEDED",
        caught={"CreateShipment": "AttemptBudgetExhaustedError"},
    ),
)


def replacement_order_mock_config() -> MockConfigBuilder:
    """The mock config of ``REPLACEMENT_ORDER_SCENARIOS`` (test case = scenario name)."""
    return mock_config(REPLACEMENT_ORDER_SCENARIOS, saga.name)


if __name__ == "__main__":
    print(replacement_order_mock_config().to_json(), end="")
