"""``Retry`` and ``Catch``: which policy matches an error, and how long to wait.

Step Functions semantics kept here:

* the first retrier whose ``ErrorEquals`` matches decides; when its ``MaxAttempts`` are used
  up the error goes to ``Catch`` (other retriers are not consulted);
* each retrier counts its own attempts, and all counters start at zero whenever the state is
  entered (including on redrive);
* delay of retry *n* (1-based) = ``IntervalSeconds * BackoffRate^(n-1)``, capped by
  ``MaxDelaySeconds``; with ``JitterStrategy: FULL`` the wait is uniform in [0, capped delay];
* ``States.ALL`` matches every error except the terminal ``States.Runtime``;
  ``States.TaskFailed`` matches every error except ``States.Timeout``/``States.HeartbeatTimeout``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from stepsaga.engine._errors import (
    STATES_ALL,
    STATES_DATA_LIMIT_EXCEEDED,
    STATES_HEARTBEAT_TIMEOUT,
    STATES_TASK_FAILED,
    STATES_TIMEOUT,
)


class JitterStrategy(StrEnum):
    FULL = "FULL"
    NONE = "NONE"


def error_matches(patterns: Sequence[str], error: str) -> bool:
    for pattern in patterns:
        if pattern == error:
            return True
        if error == STATES_DATA_LIMIT_EXCEEDED:  # only its own name matches it
            continue
        if pattern == STATES_ALL:
            return True
        if pattern == STATES_TASK_FAILED and error not in (
            STATES_TIMEOUT,
            STATES_HEARTBEAT_TIMEOUT,
        ):
            return True
    return False


@dataclass(frozen=True)
class Retrier:
    error_equals: tuple[str, ...]
    interval_seconds: int = 1
    max_attempts: int = 3
    backoff_rate: float = 2.0
    max_delay_seconds: int | None = None
    jitter: JitterStrategy = JitterStrategy.NONE

    def delay(self, retry_number: int, rng: random.Random) -> float:
        """Seconds to wait before retry ``retry_number`` (1 = the first retry)."""
        delay = self.interval_seconds * self.backoff_rate ** (retry_number - 1)
        if self.max_delay_seconds is not None:
            delay = min(delay, float(self.max_delay_seconds))
        if self.jitter is JitterStrategy.FULL:
            delay = rng.uniform(0.0, delay)
        return float(delay)


@dataclass(frozen=True)
class Catcher:
    error_equals: tuple[str, ...]
    next: str
    result_path: object  # a compiled Path, or None for "discard the error"
    assign: object = None  # a compiled Assign (variables), or None
    output: object = None  # JSONata: a compiled Output template, or None for errorOutput


@dataclass(frozen=True)
class RetryDecision:
    """What to do after an error: retry after ``delay`` using retrier ``index``, or not."""

    retry: bool
    index: int = -1
    attempt: int = 0
    delay: float = 0.0


def decide(
    retriers: Sequence[Retrier], counts: list[int], error: str, rng: random.Random
) -> RetryDecision:
    """Pick the matching retrier and bump its counter in ``counts`` (one slot per retrier)."""
    for index, retrier in enumerate(retriers):
        if not error_matches(retrier.error_equals, error):
            continue
        if counts[index] >= retrier.max_attempts:
            return RetryDecision(retry=False, index=index)
        counts[index] += 1
        attempt = counts[index]
        return RetryDecision(True, index, attempt, retrier.delay(attempt, rng))
    return RetryDecision(retry=False)
