"""RetryPolicy: bounded, capped, jittered; one test per validation message."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.errors import LAMBDA_SERVICE_ERRORS, RETRYABLE, names
from stepsaga.workflow import (
    DEFAULT_RETRY,
    LAMBDA_SERVICE_RETRY,
    TRANSIENT_RETRY,
    JitterStrategy,
    RetryPolicy,
    SagaDefinitionError,
)


def policy(**overrides: Any) -> RetryPolicy:
    fields: dict[str, Any] = {
        "errors": ["TransientError"],
        "interval_seconds": 1,
        "max_attempts": 3,
        "backoff_rate": 2.0,
        "max_delay_seconds": 10,
    }
    fields.update(overrides)
    return RetryPolicy(**fields)


def test_defaults_are_full_jitter_and_render_every_field() -> None:
    retrier = policy().to_asl()
    assert retrier == {
        "ErrorEquals": ["TransientError"],
        "IntervalSeconds": 1,
        "MaxAttempts": 3,
        "BackoffRate": 2.0,
        "MaxDelaySeconds": 10,
        "JitterStrategy": "FULL",
    }
    assert RetryPolicy(["TransientError"], max_attempts=1).jitter is JitterStrategy.FULL


def test_single_attempt_needs_no_max_delay() -> None:
    retrier = RetryPolicy(["TransientError"], max_attempts=1).to_asl()
    assert "MaxDelaySeconds" not in retrier


def test_default_retry_is_lambda_service_errors_then_our_transient_errors() -> None:
    assert DEFAULT_RETRY == (LAMBDA_SERVICE_RETRY, TRANSIENT_RETRY)
    assert list(LAMBDA_SERVICE_RETRY.errors) == list(LAMBDA_SERVICE_ERRORS)
    assert list(TRANSIENT_RETRY.errors) == names(RETRYABLE)
    assert "ActionInProgressError" in TRANSIENT_RETRY.errors
    for retrier in DEFAULT_RETRY:
        assert retrier.max_delay_seconds is not None
        assert retrier.jitter is JitterStrategy.FULL
        assert retrier.max_attempts <= 10


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"errors": []}, "errors must name at least one error"),
        ({"errors": [""]}, "error names must be non-empty strings"),
        ({"errors": ["TransientError", "TransientError"]}, "TransientError listed twice"),
        ({"errors": ["States.ALL"]}, "States.ALL would also retry errors that must never"),
        ({"errors": ["States.TaskFailed"]}, "States.TaskFailed would also retry"),
        ({"errors": ["OutcomeUnknownError"]}, "OutcomeUnknownError is never retried"),
        ({"errors": ["ActionConflictError"]}, "ActionConflictError is never retried"),
        ({"errors": ["BusinessRejectedError"]}, "BusinessRejectedError is never retried"),
        ({"errors": ["BudgetExhaustedError"]}, "BudgetExhaustedError is never retried"),
        (
            {"errors": ["AttemptBudgetExhaustedError"]},
            "AttemptBudgetExhaustedError is never retried",
        ),
        ({"errors": ["InvalidInputError"]}, "InvalidInputError is never retried"),
        ({"interval_seconds": 1.5}, "interval_seconds must be an integer"),
        ({"interval_seconds": 0}, "interval_seconds must be between 1 and 99999999, got 0"),
        ({"max_attempts": True}, "max_attempts must be an integer"),
        ({"max_attempts": 0}, "max_attempts must be at least 1, got 0"),
        ({"max_attempts": 11}, "max_attempts must be at most 10, got 11"),
        ({"backoff_rate": "2"}, "backoff_rate must be a number"),
        ({"backoff_rate": 0.5}, "backoff_rate must be at least 1.0, got 0.5"),
        ({"max_delay_seconds": None}, "max_delay_seconds is required when max_attempts > 1"),
        ({"max_delay_seconds": 2.5}, "max_delay_seconds must be an integer"),
        ({"max_delay_seconds": 0}, "max_delay_seconds must be between 1 and 31622400, got 0"),
        (
            {"max_delay_seconds": 40_000_000},
            "max_delay_seconds must be between 1 and 31622400",
        ),
        (
            {"interval_seconds": 30, "max_delay_seconds": 10},
            "max_delay_seconds (10) must be at least interval_seconds (30)",
        ),
        ({"jitter": "FULL"}, "jitter must be a JitterStrategy (FULL or NONE)"),
    ],
)
def test_each_invalid_policy_has_its_own_message(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(SagaDefinitionError, match="retry policy: ") as raised:
        policy(**overrides)
    assert message in str(raised.value)


def test_policies_are_frozen_values() -> None:
    retrier = policy(errors=["TransientError"])
    assert isinstance(retrier.errors, tuple)
    with pytest.raises(AttributeError):
        retrier.max_attempts = 5  # type: ignore[misc]
    assert retrier == policy(errors=("TransientError",))
