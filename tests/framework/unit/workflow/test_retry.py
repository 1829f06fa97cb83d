"""RetryPolicy: bounded, capped, jittered; one test per validation message."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga import RetryPolicy
from stepsaga.errors import (
    LAMBDA_SERVICE_ERRORS,
    LAMBDA_TIMEOUT_ERRORS,
    RETRYABLE,
    SagaDefinitionError,
    names,
)
from stepsaga.ledger import LedgerPolicy
from stepsaga.workflow import JitterStrategy
from stepsaga.workflow._retry import (
    DEFAULT_RETRY,
    IN_PROGRESS_RETRY,
    LAMBDA_SERVICE_RETRY,
    LAMBDA_TIMEOUT_RETRY,
    TRANSIENT_RETRY,
    WORST_CASE_RETRY_SECONDS,
    chance_wait_below,
    delays,
    mean_seconds,
    worst_case_seconds,
)
from stepsaga.workflow._saga import DEFAULT_TASK_TIMEOUT


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


def test_default_retry_is_service_errors_timeouts_transient_then_in_progress() -> None:
    assert DEFAULT_RETRY == (
        LAMBDA_SERVICE_RETRY,
        LAMBDA_TIMEOUT_RETRY,
        TRANSIENT_RETRY,
        IN_PROGRESS_RETRY,
    )
    assert list(LAMBDA_SERVICE_RETRY.errors) == list(LAMBDA_SERVICE_ERRORS)
    assert list(LAMBDA_TIMEOUT_RETRY.errors) == list(LAMBDA_TIMEOUT_ERRORS)
    retried = [e for p in (TRANSIENT_RETRY, IN_PROGRESS_RETRY) for e in p.errors]
    assert sorted(retried) == sorted(names(RETRYABLE))
    assert list(IN_PROGRESS_RETRY.errors) == ["ActionInProgressError"]
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


# --- the envelopes' sizes (docs/reference/recovery.md) -------------------------------------------


def test_delays_are_capped_exponential_backoff() -> None:
    assert delays(TRANSIENT_RETRY) == (3, 6, 12, 24, 48, 60, 60)
    assert delays(LAMBDA_SERVICE_RETRY) == (2, 4, 8, 16, 30, 30)
    assert delays(LAMBDA_TIMEOUT_RETRY) == (5, 10)
    assert delays(IN_PROGRESS_RETRY) == (10, 20, 40, 60, 60, 60, 60, 60)


def test_worst_case_retry_time_is_documented() -> None:
    worst = [worst_case_seconds(p) for p in DEFAULT_RETRY]
    assert worst == [90, 15, 213, 370]
    assert WORST_CASE_RETRY_SECONDS == 688
    assert mean_seconds(TRANSIENT_RETRY) == 106.5
    # A transient blip of up to about three and a half minutes needs no redrive.
    assert worst_case_seconds(TRANSIENT_RETRY) > 180


def test_the_in_progress_wait_covers_the_lease() -> None:
    """The holder's lease ends at its invocation's deadline: at most the default task
    timeout, or the ledger's lease without a Lambda context."""
    lease = max(LedgerPolicy().lease_seconds, DEFAULT_TASK_TIMEOUT)
    assert mean_seconds(IN_PROGRESS_RETRY) >= 3 * lease
    assert chance_wait_below(IN_PROGRESS_RETRY, lease) < 0.001
    assert chance_wait_below(IN_PROGRESS_RETRY, worst_case_seconds(IN_PROGRESS_RETRY)) == 1.0


def test_the_attempt_budget_holds_three_transient_runs() -> None:
    """Each transient retry is a claim; the budget lets a first run and two redrives use
    the whole envelope before reconciliation takes over."""
    per_run = 1 + TRANSIENT_RETRY.max_attempts
    assert LedgerPolicy().attempt_budget == 3 * per_run


@settings(max_examples=40, deadline=None)
@given(
    caps=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=5),
    seconds=st.floats(min_value=0, max_value=300),
)
def test_chance_wait_below_matches_sampling(caps: list[int], seconds: float) -> None:
    """The exact distribution of a sum of FULL-jitter draws agrees with sampling it."""
    retrier = RetryPolicy(
        ["TransientError"],
        interval_seconds=caps[0],
        max_attempts=len(caps),
        backoff_rate=1.0,
        max_delay_seconds=caps[0],
    )
    rng = random.Random(7)
    drawn = delays(retrier)
    samples = 4000
    hits = sum(sum(rng.uniform(0, d) for d in drawn) <= seconds for _ in range(samples))
    assert abs(chance_wait_below(retrier, seconds) - hits / samples) < 0.04
