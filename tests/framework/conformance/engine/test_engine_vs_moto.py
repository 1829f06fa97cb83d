"""The embedded engine and the reference interpreters (moto, LocalStack) agree on compiled
sagas.

Each scenario runs the same definition with the same scripted Lambda results on the engine
and on each reference (``reference``: moto, then LocalStack) and compares the states
entered, the attempts of each task visit (so retry counts), the final status, error, cause
and output, and the events each function got. Where a reference deviates from AWS the
engine follows AWS and the test says so (``@deviates``: a strict xfail on that reference,
with the reason).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepsaga.workflow._compiler import compile as compile_saga
from stepsaga.workflow._retry import TRANSIENT_RETRY
from tests.deviations import LOCALSTACK_SINGLE_MATCH
from tests.framework.conformance.engine.conftest import deviates
from tests.framework.conformance.engine.harness import (
    Err,
    Moto,
    Ok,
    Reference,
    Scripts,
    Trace,
    compiled,
    run_engine,
)
from workflows.replacement_order import saga

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SAGA = compiled(compile_saga(saga))
CASE = {
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
        "address": {"name": "A. Buyer", "country": "DE"},
        "items": [{"sku": "SKU-RED-MUG", "quantity": 1}],
    },
}


def done(key: str) -> Ok:
    return Ok({"action_key": key, "status": "COMPLETED", "result": {"id": key}, "replayed": False})


def reconciled(outcome: str) -> Ok:
    return Ok({"outcome": outcome, "item_id": "recon-1"})


HAPPY: dict[str, list[Any]] = {
    "ReserveStockFunction": [done("reserve")],
    "RefundPaymentFunction": [done("refund")],
    "CreateShipmentFunction": [done("ship")],
    "ReleaseReservationFunction": [done("release")],
    "ReconcileFunction": [reconciled("applied")],
}


def scripts(**overrides: list[Any]) -> Scripts:
    return {**HAPPY, **overrides}


def both(
    reference: Reference, tmp_path: Path, definition: dict[str, Any], script: Scripts, payload: Any
) -> Trace:
    ours = run_engine(tmp_path, definition, script, payload)
    theirs = reference.run(definition, script, payload, ours)
    assert ours.comparable() == theirs.comparable()
    if isinstance(reference, Moto):  # LocalStack sleeps for real: no delays to read
        assert len(ours.delays) == len(theirs.delays)
    return ours


def test_happy_path(reference: Reference, tmp_path: Path) -> None:
    trace = both(reference, tmp_path, SAGA, scripts(), CASE)
    assert trace.status == "SUCCEEDED"
    # No Pass before the first task, no Succeed after the last: it ends the execution.
    assert trace.entered == ["ReserveStock", "RefundPayment", "CreateShipment"]


def test_retry_then_success(reference: Reference, tmp_path: Path) -> None:
    script = scripts(
        RefundPaymentFunction=[
            Err("Lambda.TooManyRequestsException"),
            Err("TransientError"),
            done("refund"),
        ]
    )
    trace = both(reference, tmp_path, SAGA, script, CASE)
    assert ("RefundPayment", 3) in trace.attempts
    assert trace.status == "SUCCEEDED"
    assert all(0 <= d <= 10 for d in trace.delays)


def test_lambda_timeouts_and_in_progress_are_retried(reference: Reference, tmp_path: Path) -> None:
    """The envelopes of ``stepsaga.workflow._retry``: a timed-out invocation is tried again
    (LAMBDA_TIMEOUT_RETRY), a live lease elsewhere is waited out (IN_PROGRESS_RETRY)."""
    script = scripts(
        RefundPaymentFunction=[
            Err("Sandbox.Timedout"),
            Err("ActionInProgressError"),
            Err("ActionInProgressError"),
            done("refund"),
        ]
    )
    trace = both(reference, tmp_path, SAGA, script, CASE)
    assert ("RefundPayment", 4) in trace.attempts
    assert trace.status == "SUCCEEDED"
    assert all(0 <= d <= 20 for d in trace.delays)


def test_retries_exhausted_fail_uncaught_at_that_step(reference: Reference, tmp_path: Path) -> None:
    trace = both(
        reference,
        tmp_path,
        SAGA,
        scripts(RefundPaymentFunction=[Err("TransientError", "still busy")]),
        CASE,
    )
    assert (trace.status, trace.error) == ("FAILED", "TransientError")
    assert trace.cause == {"errorType": "TransientError", "errorMessage": "still busy"}
    assert trace.attempts[-1] == ("RefundPayment", 1 + TRANSIENT_RETRY.max_attempts)


def test_business_rejection_runs_compensations(reference: Reference, tmp_path: Path) -> None:
    trace = both(
        reference,
        tmp_path,
        SAGA,
        scripts(CreateShipmentFunction=[Err("BusinessRejectedError")]),
        CASE,
    )
    assert trace.entered[-4:] == [
        "CreateShipment",
        "EscalateRefundPayment",
        "ReleaseReservation",
        "Compensated",
    ]
    assert (trace.status, trace.error) == ("FAILED", "Saga.Compensated")


RELEASE_RECONCILED = ["RecordReleaseReservationFailure", "ReleaseReservationDecision"]


def test_compensation_failure_is_recorded_for_reconciliation(
    reference: Reference, tmp_path: Path
) -> None:
    script = scripts(
        CreateShipmentFunction=[Err("BusinessRejectedError")],
        ReleaseReservationFunction=[Err("TransientError")],
        ReconcileFunction=[reconciled("undecided")],
    )
    trace = both(reference, tmp_path, SAGA, script, CASE)
    assert trace.entered[-4:] == ["ReleaseReservation", *RELEASE_RECONCILED, "CompensationFailed"]
    assert ("ReleaseReservation", 1 + TRANSIENT_RETRY.max_attempts) in trace.attempts
    assert trace.error == "Saga.CompensationFailed"


def test_a_compensation_reconciled_as_applied_unwinds_on(
    reference: Reference, tmp_path: Path
) -> None:
    script = scripts(
        CreateShipmentFunction=[Err("BusinessRejectedError")],
        ReleaseReservationFunction=[Err("OutcomeUnknownError")],
        ReconcileFunction=[reconciled("applied")],
    )
    trace = both(reference, tmp_path, SAGA, script, CASE)
    assert trace.entered[-4:] == ["ReleaseReservation", *RELEASE_RECONCILED, "Compensated"]
    assert trace.error == "Saga.Compensated"


def test_a_compensation_goes_round_until_reconciliation_stops_it(
    reference: Reference, tmp_path: Path
) -> None:
    script = scripts(
        CreateShipmentFunction=[Err("BusinessRejectedError")],
        ReleaseReservationFunction=[
            Err("OutcomeUnknownError"),
            Err("OutcomeUnknownError"),
            Err("AttemptBudgetExhaustedError"),
        ],
        ReconcileFunction=[
            reconciled("undecided"),  # EscalateRefundPayment
            reconciled("not_applied"),
            reconciled("not_applied"),
            reconciled("undecided"),
        ],
    )
    trace = both(reference, tmp_path, SAGA, script, CASE)
    rounds = ["ReleaseReservation", *RELEASE_RECONCILED]
    assert trace.entered[-10:] == [*(rounds * 3), "CompensationFailed"]
    assert trace.error == "Saga.CompensationFailed"


def test_uncertain_outcome_goes_through_the_reconciliation_choice(
    reference: Reference, tmp_path: Path
) -> None:
    script = scripts(CreateShipmentFunction=[Err("OutcomeUnknownError"), done("ship")])
    trace = both(reference, tmp_path, SAGA, script, CASE)
    assert trace.entered[-4:] == [
        "CreateShipment",
        "ReconcileCreateShipment",
        "CreateShipmentDecision",
        "CreateShipment",
    ]
    assert trace.status == "SUCCEEDED"


# --- data flow combinations --------------------------------------------------------------

TASK = "arn:aws:states:::lambda:invoke"


def flow(**fields: Any) -> dict[str, Any]:
    return {
        "StartAt": "A",
        "States": {
            "A": {
                "Type": "Task",
                "Resource": TASK,
                "Parameters": {"FunctionName": "Echo", "Payload.$": "$"},
                **fields,
                "Next": "B",
            },
            "B": {"Type": "Pass", "End": True},
        },
    }


ECHO = {"Echo": [Ok({"answer": 42, "nested": {"x": [1, 2]}})]}
INPUT = {"order": {"id": "O-1", "lines": [1, 2]}, "keep": True}


@pytest.mark.parametrize(
    "fields",
    [
        {"ResultSelector": {"a.$": "$.Payload.answer"}, "ResultPath": "$.result"},
        {"ResultSelector": {"a.$": "$.Payload.nested.x[1]", "static": "s"}, "ResultPath": "$"},
        {"ResultSelector": {"p.$": "$.Payload"}, "ResultPath": "$.deep.new.path"},
        {"ResultPath": None},
        {
            "InputPath": "$.order",
            "ResultSelector": {"a.$": "$.Payload"},
            "ResultPath": "$.r",
            "OutputPath": "$.r",
        },
        {
            "Parameters": {"FunctionName": "Echo", "Payload": {"id.$": "$.order.id", "n": 1}},
            "OutputPath": "$.Payload",
        },
        {
            "Parameters": {
                "FunctionName": "Echo",
                "Payload": {"s.$": "States.Format('id={}', $.order.id)"},
            },
            "ResultSelector": {"a.$": "$.Payload.answer"},
        },
    ],
    ids=[
        "selector+path",
        "selector-replaces",
        "creates-objects",
        "discard",
        "input+output",
        "parameters",
        "intrinsic",
    ],
)
def test_result_selector_and_path_combinations(
    reference: Reference, tmp_path: Path, fields: dict[str, Any]
) -> None:
    trace = both(reference, tmp_path, flow(**fields), ECHO, INPUT)
    assert trace.status == "SUCCEEDED"


def test_catch_result_path_and_choice(reference: Reference, tmp_path: Path) -> None:
    definition = {
        "StartAt": "A",
        "States": {
            "A": {
                "Type": "Task",
                "Resource": TASK,
                "Parameters": {"FunctionName": "Echo", "Payload.$": "$"},
                "Catch": [
                    {
                        "ErrorEquals": ["BusinessRejectedError"],
                        "ResultPath": "$.failure",
                        "Next": "Route",
                    }
                ],
                "ResultSelector": {"p.$": "$.Payload"},
                "ResultPath": "$.result",
                "Next": "Route",
            },
            "Route": {
                "Type": "Choice",
                "Choices": [
                    {
                        "And": [
                            {"Variable": "$.failure", "IsPresent": True},
                            {
                                "Variable": "$.failure.Error",
                                "StringEquals": "BusinessRejectedError",
                            },
                        ],
                        "Next": "Rejected",
                    },
                    {
                        "And": [
                            {"Variable": "$.n", "NumericGreaterThan": 1},
                            {"Not": {"Variable": "$.n", "NumericEquals": 3}},
                        ],
                        "Next": "Big",
                    },
                ],
                "Default": "Small",
            },
            "Rejected": {
                "Type": "Fail",
                "Error": "Saga.Compensated",
                "CausePath": "$.failure.Error",
            },
            "Big": {"Type": "Succeed"},
            "Small": {"Type": "Succeed"},
        },
    }
    rejected = both(
        reference, tmp_path, definition, {"Echo": [Err("BusinessRejectedError", "no")]}, {"n": 2}
    )
    assert (rejected.entered[-1], rejected.error) == ("Rejected", "Saga.Compensated")
    big = both(reference, tmp_path, definition, {"Echo": [Ok({})]}, {"n": 2})
    assert big.entered[-1] == "Big"
    small = both(reference, tmp_path, definition, {"Echo": [Ok({})]}, {"n": 3})
    assert small.entered[-1] == "Small"


@deviates(
    moto="moto deviates from AWS: a Choice rule whose Variable is not in the input counts "
    "as no match there; AWS (and the engine) fail the execution with States.Runtime "
    '("Invalid path ... The choice state\'s condition path references an invalid value")',
    localstack="LocalStack deviates from AWS as moto does (same interpreter): a Choice rule "
    "on a Variable absent from the input is no match; AWS documents States.Runtime",
)
def test_choice_on_a_missing_variable(reference: Reference, tmp_path: Path) -> None:
    definition = {
        "StartAt": "Route",
        "States": {
            "Route": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.missing", "StringEquals": "x", "Next": "Hit"}],
                "Default": "Miss",
            },
            "Hit": {"Type": "Succeed"},
            "Miss": {"Type": "Succeed"},
        },
    }
    both(reference, tmp_path, definition, {}, {"n": 1})


@deviates(
    moto="moto deviates from AWS: its lambda:invoke task result has only StatusCode and "
    "Payload; AWS (and the engine) also return ExecutedVersion, SdkHttpMetadata and "
    "SdkResponseMetadata, visible when ResultPath keeps the raw result",
)
def test_raw_integration_result(reference: Reference, tmp_path: Path) -> None:
    both(reference, tmp_path, flow(ResultPath="$.raw"), ECHO, INPUT)


@deviates(localstack=LOCALSTACK_SINGLE_MATCH)
def test_a_wildcard_with_one_match_yields_an_array(reference: Reference, tmp_path: Path) -> None:
    definition = {
        "StartAt": "Pick",
        "States": {
            "Pick": {
                "Type": "Pass",
                "Parameters": {"failures.$": "$.branches[*].failure", "all.$": "$.branches[*].n"},
                "End": True,
            }
        },
    }
    payload = {"branches": [{"n": 1}, {"n": 2, "failure": {"Error": "Rejected"}}]}
    trace = both(reference, tmp_path, definition, {}, payload)
    assert trace.output == {"failures": [{"Error": "Rejected"}], "all": [1, 2]}
