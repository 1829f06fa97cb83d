"""The bulk redrive's rule (``bulk_redrive.RULES``): which failed executions it redrives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends._bulk_redrive import RedriveDecision, check_error, check_max, decide
from stepsaga.backends._views import CaseOutcome, ExecutionView
from stepsaga.errors import InvalidInputError

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def failed(**changes: Any) -> ExecutionView:
    fields: dict[str, Any] = {
        "executionArn": "arn:aws:states:us-east-1:123456789012:execution:m:acme-C-r1",
        "stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:m",
        "name": "acme-C-r1",
        "status": "FAILED",
        "startDate": NOW - timedelta(hours=2),
        "stopDate": NOW - timedelta(hours=1),
        "error": "TransientError",
        "redriveStatus": "REDRIVABLE",
        "saga": "replacement-order",
        "tenant_id": "acme",
        "case_id": "C",
        "revision": 1,
        "outcome": CaseOutcome.FAILED,
        "steps": (),
    }
    fields.update(changes)
    return ExecutionView.model_validate(fields)


@given(suffix=st.text(min_size=0, max_size=20))
def test_a_saga_outcome_is_never_redriven(suffix: str) -> None:
    decision, _ = decide(failed(error=f"Saga.{suffix}"), error=None, now=NOW)
    assert decision is RedriveDecision.SKIPPED_BUSINESS_OUTCOME


@pytest.mark.parametrize(
    ("changes", "wanted", "decision"),
    [
        ({}, None, RedriveDecision.REDRIVEN),
        ({"error": "States.Timeout"}, None, RedriveDecision.REDRIVEN),
        ({"error": None, "status": "ABORTED"}, None, RedriveDecision.REDRIVEN),
        ({}, "TransientError", RedriveDecision.REDRIVEN),
        (
            {"status": "ABORTED", "error": "Stepsaga.Stopped"},
            None,
            RedriveDecision.SKIPPED_STOPPED,
        ),
        ({}, "StoreUnavailableError", RedriveDecision.SKIPPED_OTHER_ERROR),
        ({"redriveStatus": "NOT_REDRIVABLE"}, None, RedriveDecision.SKIPPED_NOT_REDRIVABLE),
        ({"stopDate": NOW - timedelta(days=14)}, None, RedriveDecision.REDRIVEN),
        (
            {"stopDate": NOW - timedelta(days=14, seconds=1)},
            None,
            RedriveDecision.SKIPPED_OUTSIDE_WINDOW,
        ),
    ],
)
def test_each_row_of_the_rule(
    changes: dict[str, Any], wanted: str | None, decision: RedriveDecision
) -> None:
    assert decide(failed(**changes), error=wanted, now=NOW)[0] is decision


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: check_max(0), "--max must be a whole number from 1 to 1000"),
        (lambda: check_max(True), "--max must be a whole number from 1 to 1000"),
        (lambda: check_error(""), "--error: must not be empty"),
        (lambda: check_error("Saga.Compensated"), "--error: Saga.Compensated is a business"),
    ],
)
def test_each_refused_flag_has_its_message(call: Any, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert caught.value.message.startswith(message)
