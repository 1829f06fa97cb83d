"""Retry policies: bounded, capped and jittered, validated when they are written.

A ``RetryPolicy`` is one ASL retrier. It refuses what would make recovery unbounded or
unsafe: more than 10 attempts, a backoff rate below 1, a missing ``max_delay_seconds``
when it retries more than once, and any error name the contract says must never be
retried (conflict, outcome unknown, budgets, invalid input, business rejection) — including
the wildcards ``States.ALL`` and ``States.TaskFailed`` that would match them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stepsaga.errors import COMPENSATE, LAMBDA_SERVICE_ERRORS, RECONCILE, RETRYABLE, names


class SagaDefinitionError(ValueError):
    """A saga, step or retry policy is not well formed; the message says what and where."""


class JitterStrategy(StrEnum):
    #: Each delay is uniform in [0, capped delay] (AWS "full jitter").
    FULL = "FULL"
    NONE = "NONE"


#: ASL's own bounds.
MAX_INTERVAL_SECONDS = 99_999_999
MAX_DELAY_SECONDS = 31_622_400
#: Our bound: more attempts hide failures; the ledger's attempt budget bounds recovery.
MAX_ATTEMPTS = 10

#: Wildcards that would also match the never-retried errors.
_WILDCARDS = ("States.ALL", "States.TaskFailed")
#: Errors the contract says are never retried (docs/design.md, "Error names are a contract").
NEVER_RETRIED: tuple[str, ...] = tuple(names(RECONCILE) + names(COMPENSATE))


@dataclass(frozen=True)
class RetryPolicy:
    """One ASL retrier (``Retry[i]``)."""

    #: Error names (``ErrorEquals``), e.g. ``names(RETRYABLE)``.
    errors: Sequence[str]
    #: Seconds before the first retry (``IntervalSeconds``).
    interval_seconds: int = 1
    #: Retries after the first attempt (``MaxAttempts``); 1 to 10.
    max_attempts: int = 2
    #: Multiplier of the delay per retry (``BackoffRate``); at least 1.
    backoff_rate: float = 2.0
    #: Cap on any single delay (``MaxDelaySeconds``); required when retrying more than once.
    max_delay_seconds: int | None = None
    #: ``FULL`` (the default) spreads retries of many executions over the whole window.
    jitter: JitterStrategy = JitterStrategy.FULL

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors", tuple(self.errors))
        _validate(self)

    def to_asl(self) -> dict[str, Any]:
        retrier: dict[str, Any] = {
            "ErrorEquals": list(self.errors),
            "IntervalSeconds": self.interval_seconds,
            "MaxAttempts": self.max_attempts,
            "BackoffRate": self.backoff_rate,
        }
        if self.max_delay_seconds is not None:
            retrier["MaxDelaySeconds"] = self.max_delay_seconds
        retrier["JitterStrategy"] = self.jitter.value
        return retrier


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate(policy: RetryPolicy) -> None:
    errors = policy.errors
    if not errors:
        raise SagaDefinitionError("retry policy: errors must name at least one error")
    for name in errors:
        if not isinstance(name, str) or not name:
            raise SagaDefinitionError(
                f"retry policy: error names must be non-empty strings, got {name!r}"
            )
    duplicates = sorted({n for n in errors if errors.count(n) > 1})
    if duplicates:
        raise SagaDefinitionError(f"retry policy: {', '.join(duplicates)} listed twice")
    for name in errors:
        if name in _WILDCARDS:
            raise SagaDefinitionError(
                f"retry policy: {name} would also retry errors that must never be retried; "
                "name the retryable errors instead"
            )
        if name in NEVER_RETRIED:
            raise SagaDefinitionError(
                f"retry policy: {name} is never retried (it goes to compensation or "
                "reconciliation; see stepsaga.errors)"
            )
    if not _is_int(policy.interval_seconds):
        raise SagaDefinitionError("retry policy: interval_seconds must be an integer")
    if not 1 <= policy.interval_seconds <= MAX_INTERVAL_SECONDS:
        raise SagaDefinitionError(
            f"retry policy: interval_seconds must be between 1 and {MAX_INTERVAL_SECONDS}, "
            f"got {policy.interval_seconds}"
        )
    if not _is_int(policy.max_attempts):
        raise SagaDefinitionError("retry policy: max_attempts must be an integer")
    if policy.max_attempts < 1:
        raise SagaDefinitionError(
            f"retry policy: max_attempts must be at least 1, got {policy.max_attempts} "
            "(leave the error out instead of retrying it 0 times)"
        )
    if policy.max_attempts > MAX_ATTEMPTS:
        raise SagaDefinitionError(
            f"retry policy: max_attempts must be at most {MAX_ATTEMPTS}, got "
            f"{policy.max_attempts} (the ledger's attempt budget bounds recovery, not retries)"
        )
    if isinstance(policy.backoff_rate, bool) or not isinstance(policy.backoff_rate, int | float):
        raise SagaDefinitionError("retry policy: backoff_rate must be a number")
    if policy.backoff_rate < 1:
        raise SagaDefinitionError(
            f"retry policy: backoff_rate must be at least 1.0, got {policy.backoff_rate}"
        )
    if policy.max_delay_seconds is None:
        if policy.max_attempts > 1:
            raise SagaDefinitionError(
                "retry policy: max_delay_seconds is required when max_attempts > 1 "
                "(it caps the exponential backoff)"
            )
    else:
        if not _is_int(policy.max_delay_seconds):
            raise SagaDefinitionError("retry policy: max_delay_seconds must be an integer")
        if not 1 <= policy.max_delay_seconds <= MAX_DELAY_SECONDS:
            raise SagaDefinitionError(
                f"retry policy: max_delay_seconds must be between 1 and {MAX_DELAY_SECONDS}, "
                f"got {policy.max_delay_seconds}"
            )
        if policy.max_delay_seconds < policy.interval_seconds:
            raise SagaDefinitionError(
                f"retry policy: max_delay_seconds ({policy.max_delay_seconds}) must be at "
                f"least interval_seconds ({policy.interval_seconds})"
            )
    if not isinstance(policy.jitter, JitterStrategy):
        raise SagaDefinitionError(
            f"retry policy: jitter must be a JitterStrategy (FULL or NONE), got {policy.jitter!r}"
        )


#: AWS-recommended retrier for every ``lambda:invoke`` task: service errors and throttling.
LAMBDA_SERVICE_RETRY = RetryPolicy(
    errors=LAMBDA_SERVICE_ERRORS,
    interval_seconds=1,
    max_attempts=3,
    backoff_rate=2.0,
    max_delay_seconds=8,
)

#: Our transient handler errors (throttled downstream, store busy, action in progress):
#: two retries with the same action key and capped, jittered delays (seed 002, docs/background.md).
TRANSIENT_RETRY = RetryPolicy(
    errors=names(RETRYABLE),
    interval_seconds=2,
    max_attempts=2,
    backoff_rate=2.0,
    max_delay_seconds=10,
)

#: What every task gets unless it says otherwise, in this order.
DEFAULT_RETRY: tuple[RetryPolicy, ...] = (LAMBDA_SERVICE_RETRY, TRANSIENT_RETRY)
