"""The compiled Payloads, evaluated against a real execution input, validate against the
event models the handlers import — and the ResultSelectors keep exactly the result models."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from stepsaga.errors import InvalidInputError
from stepsaga.workflow import EscalationEvent, StepEvent
from stepsaga.workflow._events import (
    AwaitDecisionEvent,
    CompensationFailureEvent,
    OperatorDecision,
    ReconcileEvent,
    ReconciliationResult,
    StepResult,
    parse_event,
    parse_reconciliation_event,
)
from stepsaga.workflow._names import RESERVED_CASE_FIELDS
from stepsaga.workflow._payloads import Path, template
from tests.framework.unit.workflow.asl_eval import evaluate, get_path
from workflows.case import Case
from workflows.replacement_order import (
    CreateShipmentEvent,
    RefundPaymentEvent,
    ReleaseReservationEvent,
    ReserveStockEvent,
)

CONTEXT = {
    "Execution": {"Name": "acme-CASE-1001-r1"},
    "State": {"Name": "ReserveStock", "RetryCount": 1},
    "Task": {"Token": "token-123"},
}
COMPLETED = {
    "action_key": "acme:CASE-1001:r1:reserve_stock",
    "status": "COMPLETED",
    "result": {"reservation_id": "RSV-1"},
    "replayed": False,
}


def state_after_failure(definition: dict[str, Any], case: Case) -> dict[str, Any]:
    """The state as it is when the compensation chain runs: two steps done, one caught error."""
    state: dict[str, Any] = case.execution_input()  # the state data starts as the case
    state["results"] = {"ReserveStock": COMPLETED, "RefundPayment": COMPLETED}
    state["failure"] = {"Error": "BusinessRejectedError", "Cause": '{"errorMessage": "no"}'}
    state["compensation_failure"] = {"Error": "States.Timeout", "Cause": "timed out"}
    state["reconciliation"] = {"CreateShipment": {"outcome": "undecided", "item_id": "R-1"}}
    return state


def payload(definition: dict[str, Any], state_name: str, state: dict[str, Any]) -> Any:
    parameters = definition["States"][state_name]["Parameters"]
    case = {k: v for k, v in state.items() if k not in RESERVED_CASE_FIELDS}
    context = {**CONTEXT, "Execution": {"Name": "acme-CASE-1001-r1", "Input": case}}
    return evaluate(parameters, state, context)["Payload"]


@pytest.mark.parametrize(
    ("state_name", "model"),
    [
        ("ReserveStock", ReserveStockEvent),
        ("RefundPayment", RefundPaymentEvent),
        ("CreateShipment", CreateShipmentEvent),
        ("ReleaseReservation", ReleaseReservationEvent),
        ("ReconcileCreateShipment", ReconcileEvent),
        ("AwaitDecisionCreateShipment", AwaitDecisionEvent),
        ("EscalateRefundPayment", EscalationEvent),
        ("RecordReleaseReservationFailure", CompensationFailureEvent),
    ],
)
def test_every_task_payload_validates_against_its_model(
    definition: dict[str, Any], case: Case, state_name: str, model: type[BaseModel]
) -> None:
    event = model.model_validate(
        payload(definition, state_name, state_after_failure(definition, case))
    )
    fields = event.model_dump()
    assert (fields["tenant_id"], fields["case_id"], fields["revision"]) == ("acme", "CASE-1001", 1)
    assert fields["execution"] == {
        "name": "acme-CASE-1001-r1",
        "state": "ReserveStock",
        "retry_count": 1,
    }


def test_forward_event_carries_intent_and_canonical_params(
    definition: dict[str, Any], case: Case
) -> None:
    state = state_after_failure(definition, case)
    raw = payload(definition, "RefundPayment", state)
    assert raw["params"] == {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"}
    refund = RefundPaymentEvent.model_validate(raw)
    assert refund.operation == "refund_payment"
    assert refund.effect == "keyed_write"
    assert refund.params.money.minor == 2000
    assert refund.params.currency == "USD"
    assert refund.approved_at.isoformat() == "2026-11-29T09:30:00+00:00"
    assert refund.saga == "replacement-order"


def test_compensation_event_names_what_it_undoes(definition: dict[str, Any], case: Case) -> None:
    state = state_after_failure(definition, case)
    event = ReleaseReservationEvent.model_validate(payload(definition, "ReleaseReservation", state))
    assert event.operation == "release_reservation"
    assert event.compensates.step == "ReserveStock"
    assert event.compensates.operation == "reserve_stock"
    assert event.original.action_key == COMPLETED["action_key"]
    assert event.failure.error == "BusinessRejectedError"
    assert event.params.sku == "SKU-RED-MUG"


def test_reconciliation_events_are_told_apart_by_kind(
    definition: dict[str, Any], case: Case
) -> None:
    state = state_after_failure(definition, case)
    kinds = {
        "ReconcileCreateShipment": ReconcileEvent,
        "AwaitDecisionCreateShipment": AwaitDecisionEvent,
        "EscalateRefundPayment": EscalationEvent,
        "RecordReleaseReservationFailure": CompensationFailureEvent,
    }
    for state_name, model in kinds.items():
        event = parse_reconciliation_event(payload(definition, state_name, state))
        assert isinstance(event, model), state_name
    wait = parse_reconciliation_event(payload(definition, "AwaitDecisionCreateShipment", state))
    assert isinstance(wait, AwaitDecisionEvent)
    assert wait.task_token == "token-123"
    assert wait.item_id == "R-1"
    escalation = parse_reconciliation_event(payload(definition, "EscalateRefundPayment", state))
    assert isinstance(escalation, EscalationEvent)
    assert escalation.reason == "refund issued, replacement not shipped"
    failed = parse_reconciliation_event(
        payload(definition, "RecordReleaseReservationFailure", state)
    )
    assert isinstance(failed, CompensationFailureEvent)
    assert failed.error.error == "States.Timeout"


def lambda_response(body: dict[str, Any]) -> dict[str, Any]:
    """What lambda:invoke returns to the state machine."""
    return {"ExecutedVersion": "$LATEST", "Payload": body, "StatusCode": 200}


def test_step_result_selector_keeps_exactly_the_handler_result(definition: dict[str, Any]) -> None:
    selector = definition["States"]["ReserveStock"]["ResultSelector"]
    kept = evaluate(selector, lambda_response(COMPLETED), {})
    assert StepResult.model_validate(kept).model_dump() == COMPLETED


def test_reconciliation_selectors_keep_the_result_shape(definition: dict[str, Any]) -> None:
    reconcile = definition["States"]["ReconcileCreateShipment"]["ResultSelector"]
    kept = evaluate(reconcile, lambda_response({"outcome": "undecided", "item_id": "R-1"}), {})
    assert ReconciliationResult.model_validate(kept).outcome == "undecided"
    wait = definition["States"]["AwaitDecisionCreateShipment"]["ResultSelector"]
    decision = OperatorDecision(outcome="applied", item_id="R-1", decided_by="ops", note="found")
    kept = evaluate(wait, decision.model_dump(mode="json"), {})
    assert ReconciliationResult.model_validate(kept).model_dump(mode="json") == {
        "outcome": "applied",
        "item_id": "R-1",
    }


def test_decision_choice_reads_the_stored_outcome(definition: dict[str, Any]) -> None:
    choice = definition["States"]["CreateShipmentDecision"]
    stored = {"reconciliation": {"CreateShipment": {"outcome": "applied", "item_id": "R-1"}}}
    assert get_path(stored, choice["Choices"][0]["Variable"]) == "applied"


def test_operator_decision_is_applied_or_not_applied_only() -> None:
    with pytest.raises(ValidationError):
        OperatorDecision.model_validate({"outcome": "undecided", "item_id": "R-1"})


def test_parse_event_names_the_offending_field(definition: dict[str, Any], case: Case) -> None:
    event = payload(definition, "ReserveStock", state_after_failure(definition, case))
    assert parse_event(ReserveStockEvent, event).params.quantity == 1
    with pytest.raises(InvalidInputError, match=r"^params\.quantity: ") as raised:
        parse_event(ReserveStockEvent, {**event, "params": {**event["params"], "quantity": 0}})
    assert raised.value.data["field"] == "params.quantity"
    # A field a release added is ignored, not refused.
    assert parse_event(ReserveStockEvent, {**event, "surprise": 1}) == parse_event(
        ReserveStockEvent, event
    )
    with pytest.raises(InvalidInputError, match="event: must be a JSON object"):
        parse_event(ReserveStockEvent, ["not", "an", "object"])
    with pytest.raises(InvalidInputError, match="tenant_id"):
        parse_event(ReserveStockEvent, {**event, "tenant_id": "ACME Corp"})
    with pytest.raises(InvalidInputError, match="kind"):
        parse_reconciliation_event({**event, "kind": "nope"})


def test_events_are_frozen(definition: dict[str, Any], case: Case) -> None:
    event = parse_event(
        StepEvent, payload(definition, "ReserveStock", state_after_failure(definition, case))
    )
    with pytest.raises(ValidationError):
        event.step = "Other"  # type: ignore[misc]


def test_a_payload_template_cannot_drift_from_its_model() -> None:
    with pytest.raises(TypeError, match=r"missing: .*params.*unknown: extra"):
        template(
            StepEvent,
            kind="step",
            saga="s",
            tenant_id=Path("$$.Execution.Input.tenant_id"),
            case_id=Path("$$.Execution.Input.case_id"),
            revision=Path("$$.Execution.Input.approval.revision"),
            approved_at=Path("$$.Execution.Input.approval.approved_at"),
            step="S",
            operation="s",
            effect="physical",
            execution={},
            extra=1,
        )
