"""The multi-warehouse saga's scenarios (a per-item step and a parallel group): a mock
config test case per route, and what each must do on any backend
(``stepsaga.testing.Scenario``; ``ordered=False``: lines and branches run at once).

The same three routes run for real through the CLI in
``tests/framework/functional/test_cli_multi_warehouse.py``; here every Task is mocked, so another
backend (Step Functions Local, LocalStack) runs them without our functions.
``python -m tests.multi_warehouse_scenarios`` prints the mock config file.
"""

from __future__ import annotations

from typing import Any

from stepsaga.testing import MockConfigBuilder, Return, step_result
from stepsaga.testing._scenarios import Scenario, mock_config, reconciliation_result, task_error
from workflows.multi_warehouse import parse_case, saga

_KEY = "acme:CASE-2001:r1"
LINES = ("L1", "L2", "L3")

#: A valid multi-warehouse case (``examples/case-multi-warehouse.json``).
MULTI_WAREHOUSE_CASE: dict[str, Any] = {
    "tenant_id": "acme",
    "case_id": "CASE-2001",
    "approval": {
        "approved_by": "ops@acme.example",
        "approved_at": "2026-11-29T09:30:00Z",
        "revision": 1,
    },
    "order_id": "ORD-88",
    "lines": [
        {"line_id": "L1", "sku": "SKU-RED-MUG", "quantity": 1, "warehouse": "eu-west"},
        {"line_id": "L2", "sku": "SKU-BLUE-MUG", "quantity": 2, "warehouse": "eu-central"},
        {"line_id": "L3", "sku": "SKU-SAUCER", "quantity": 2, "warehouse": "us-east"},
    ],
    "refund": {"payment_id": "PAY-992", "amount": "45.00", "currency": "USD"},
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


def multi_warehouse_input() -> dict[str, Any]:
    """``MULTI_WAREHOUSE_CASE`` validated and canonicalized as ``stepsaga start`` would."""
    return parse_case(MULTI_WAREHOUSE_CASE).execution_input()


def _reserved(*, replayed: bool = False) -> Return:
    # Lines run two at a time, so which line gets which mocked response is not fixed: every
    # reservation response is alike (the machine never reads the key back).
    return step_result(f"{_KEY}:reserve_line", {"reservation_id": "RES"}, replayed=replayed)


_REFUNDED = step_result(f"{_KEY}:refund_payment", {"refund_id": "RF-1"})
_SHIPPED = step_result(f"{_KEY}:create_shipment", {"shipment_id": "SH-1"})
_RELEASED = step_result(f"{_KEY}:release_line", {"released": True})

_RESERVE_LINES = (
    "ReserveLines",
    *["ReserveLine", "ReserveLineItemDone"] * len(LINES),
    "ReserveLinesOutcome",
)
_REFUND_AND_SHIP = ("RefundAndShip", "RefundPayment", "CreateShipment", "RefundAndShipOutcome")
_UNDO_LINES = (
    "UndoReserveLineItems",
    *["WasReserveLineApplied", "ReleaseLine", "ReserveLineItemUndone"] * len(LINES),
    "UndoReserveLineOutcome",
)

MULTI_WAREHOUSE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="HappyPath",
        summary="every line reserved, then refund and shipment at once",
        mocks={
            "ReserveLine": (_reserved(),) * len(LINES),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPPED,),
        },
        path=(
            *_RESERVE_LINES,
            *_REFUND_AND_SHIP,
            "RefundAndShipBranch1Done",
            "RefundAndShipBranch2Done",
            "Completed",
        ),
        status="SUCCEEDED",
        ordered=False,
    ),
    Scenario(
        name="ShipmentBranchRejected",
        summary="the shipment branch is rejected: the refund branch still completes and is "
        "escalated, every reserved line is released once",
        mocks={
            "ReserveLine": (_reserved(),) * len(LINES),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (task_error("BusinessRejectedError", "shipping: rejected (422)"),),
            "EscalateRefundPayment": (reconciliation_result("undecided", "RECON-REFUND-1"),),
            "ReleaseLine": (_RELEASED,) * len(LINES),
        },
        path=(
            *_RESERVE_LINES,
            *_REFUND_AND_SHIP,
            "RefundAndShipBranch1Done",
            "RefundAndShipBranch2Rejected",
            "RefundAndShipRejected",
            "WasCreateShipmentApplied",
            "WasRefundPaymentApplied",
            "EscalateRefundPayment",
            *_UNDO_LINES,
            "Compensated",
        ),
        status="FAILED",
        error="Saga.Compensated",
        caught={"CreateShipment": "BusinessRejectedError"},
        ordered=False,
    ),
    Scenario(
        name="LineOutcomeUnknown",
        summary="one line's reservation is uncertain: it waits for a person while the other "
        "lines complete; the person finds it applied, the step replays it, the case completes",
        mocks={
            "ReserveLine": (
                _reserved(),
                task_error("OutcomeUnknownError", "inventory.reserve: reply lost (timeout)"),
                _reserved(),
                _reserved(replayed=True),
            ),
            "ReconcileReserveLine": (reconciliation_result("undecided", "RECON-LINE-1"),),
            "AwaitDecisionReserveLine": (
                Return({"outcome": "applied", "item_id": "RECON-LINE-1"}),
            ),
            "RefundPayment": (_REFUNDED,),
            "CreateShipment": (_SHIPPED,),
        },
        path=(
            *_RESERVE_LINES,
            "ReserveLine",
            "ReconcileReserveLine",
            "ReserveLineDecision",
            "AwaitDecisionReserveLine",
            "ReserveLineDecision",
            *_REFUND_AND_SHIP,
            "RefundAndShipBranch1Done",
            "RefundAndShipBranch2Done",
            "Completed",
        ),
        status="SUCCEEDED",
        caught={"ReserveLine": "OutcomeUnknownError"},
        ordered=False,
    ),
)


def multi_warehouse_mock_config() -> MockConfigBuilder:
    """The mock config of ``MULTI_WAREHOUSE_SCENARIOS`` (test case = scenario name)."""
    return mock_config(MULTI_WAREHOUSE_SCENARIOS, saga.name)


if __name__ == "__main__":
    print(multi_warehouse_mock_config().to_json(), end="")
