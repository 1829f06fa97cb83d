"""Retry policies: bounded, capped and jittered, validated when they are written.

A ``RetryPolicy`` is one ASL retrier. It refuses what would make recovery unbounded or
unsafe: more than 10 attempts, a backoff rate below 1, a missing ``max_delay_seconds``
when it retries more than once, and any error name the contract says must never be
retried (conflict, outcome unknown, budgets, invalid input, business rejection) — including
the wildcards ``States.ALL`` and ``States.TaskFailed`` that would match them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import product
from typing import Any

from stepsaga.errors import (
    COMPENSATE,
    LAMBDA_SERVICE_ERRORS,
    LAMBDA_TIMEOUT_ERRORS,
    RECONCILE,
    ActionInProgressError,
    SagaDefinitionError,
    StoreUnavailableError,
    TransientError,
    names,
)


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
#: Errors the contract says are never retried (docs/explanation/design.md, "Error names are a
#: contract").
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


def delays(policy: RetryPolicy) -> tuple[float, ...]:
    """The capped delay before each retry (what FULL jitter draws uniformly below)."""
    cap = policy.max_delay_seconds
    out = []
    for n in range(policy.max_attempts):
        delay = policy.interval_seconds * policy.backoff_rate**n
        out.append(float(min(delay, cap) if cap is not None else delay))
    return tuple(out)


def worst_case_seconds(policy: RetryPolicy) -> float:
    """Longest total wait of one retrier (every jittered draw at its cap)."""
    return sum(delays(policy))


def mean_seconds(policy: RetryPolicy) -> float:
    """Expected total wait: half the worst case under FULL jitter, all of it under NONE."""
    total = worst_case_seconds(policy)
    return total / 2 if policy.jitter is JitterStrategy.FULL else total


def chance_wait_below(policy: RetryPolicy, seconds: float) -> float:
    """Probability that all of ``policy``'s retries are spent within ``seconds``.

    Under FULL jitter the total wait is a sum of uniform draws on [0, cap_i]; this is its
    exact distribution function (inclusion-exclusion over the caps), so docs and tests can
    state how often an in-progress wait ends before the lease it waits for.
    """
    caps = delays(policy)
    if policy.jitter is JitterStrategy.NONE:
        return 1.0 if sum(caps) <= seconds else 0.0
    n = len(caps)
    total = 0.0
    for chosen in product((0, 1), repeat=n):
        rest = seconds - sum(c for c, pick in zip(caps, chosen, strict=True) if pick)
        if rest > 0:
            total += (-1) ** sum(chosen) * rest**n
    return min(1.0, max(0.0, total / (math.factorial(n) * math.prod(caps))))


# --- the envelopes every Lambda task gets (docs/reference/recovery.md sizes them) ----------------

#: Lambda service errors and throttling (``Lambda.TooManyRequestsException``): the
#: invocation did not run, so retrying costs no attempt; sized for a throttling burst of
#: about a minute and a half (worst case 90 s).
LAMBDA_SERVICE_RETRY = RetryPolicy(
    errors=LAMBDA_SERVICE_ERRORS,
    interval_seconds=2,
    max_attempts=6,
    backoff_rate=2.0,
    max_delay_seconds=30,
)

#: The task or the function timed out (a slow downstream). Two more tries: each one may run
#: for the whole timeout again, and the ledger (lease ended with the invocation) lets a
#: keyed or blind write take over, looking first, and sends a physical one to reconciliation.
LAMBDA_TIMEOUT_RETRY = RetryPolicy(
    errors=LAMBDA_TIMEOUT_ERRORS,
    interval_seconds=5,
    max_attempts=2,
    backoff_rate=2.0,
    max_delay_seconds=10,
)

#: A downstream or store blip known to precede any effect (throttled, 503, refused
#: connection, DynamoDB throttling): seven retries over up to 213 s (mean 107 s), so a
#: blip of a few minutes needs no redrive. Each retry is one claim of the ledger's attempt
#: budget (``LedgerPolicy.attempt_budget`` is sized for three such runs).
TRANSIENT_RETRY = RetryPolicy(
    errors=(TransientError.error_name(), StoreUnavailableError.error_name()),
    interval_seconds=3,
    max_attempts=7,
    backoff_rate=2.0,
    max_delay_seconds=60,
)

#: Another attempt holds the action's lease: wait it out. The lease ends with the holder's
#: invocation (at most the task's timeout, 60 s by default) or after
#: ``LedgerPolicy.lease_seconds`` (60 s); this wait is up to 370 s (mean 185 s) and ends
#: before 60 s with probability 0.05 % (``chance_wait_below``). Costs no attempt.
IN_PROGRESS_RETRY = RetryPolicy(
    errors=(ActionInProgressError.error_name(),),
    interval_seconds=10,
    max_attempts=8,
    backoff_rate=2.0,
    max_delay_seconds=60,
)

#: What every Lambda task gets unless it says otherwise, in this order.
DEFAULT_RETRY: tuple[RetryPolicy, ...] = (
    LAMBDA_SERVICE_RETRY,
    LAMBDA_TIMEOUT_RETRY,
    TRANSIENT_RETRY,
    IN_PROGRESS_RETRY,
)

#: A task waiting for a task token (``AwaitDecision``): its ``States.Timeout`` is the end
#: of the decision window, never retried.
WAIT_FOR_TOKEN_RETRY: tuple[RetryPolicy, ...] = tuple(
    p for p in DEFAULT_RETRY if p is not LAMBDA_TIMEOUT_RETRY
)

#: The worst-case retry wait of one task with the default envelopes (one error family
#: after another), in seconds: 90 + 15 + 213 + 370 = 688 s; far inside the 14-day redrive
#: window and the default 7-day decision timeout.
WORST_CASE_RETRY_SECONDS = sum(worst_case_seconds(p) for p in DEFAULT_RETRY)
