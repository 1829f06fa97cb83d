"""How the ledger retries a write another writer's transaction cancelled: one table.

DynamoDB cancels a transaction that touches an item another transaction is changing
(``TransactionConflict``); nothing was written, so running it again is safe. Retrying in
the store, after a short full-jitter delay, absorbs a burst of claims of one tenant
without failing the Lambda invocation; once these attempts are spent the store raises a
retryable ``StoreUnavailableError`` and the state machine's ``Retry`` takes over.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from stepsaga.errors import InvalidInputError


@dataclass(frozen=True)
class ConflictRetry:
    """Bounded, capped, full-jitter retries of a conflicted transaction."""

    attempts: int = 5
    """Tries in all (the first included); at least 1."""
    base_seconds: float = 0.02
    """Cap of the first delay; each later cap doubles."""
    max_delay_seconds: float = 0.25
    """No delay is longer than this (the defaults pause at most 0.3 s over all five tries)."""

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise InvalidInputError("attempts must be an integer", field="attempts")
        if self.attempts < 1:
            raise InvalidInputError("attempts must be at least 1", field="attempts")
        if not 0 <= self.base_seconds <= self.max_delay_seconds:
            raise InvalidInputError(
                "base_seconds must be between 0 and max_delay_seconds", field="base_seconds"
            )

    def delays(self, rng: Callable[[], float] = random.random) -> Iterator[float]:
        """The sleep before each retry: uniform in [0, min(cap, base·2^n)] (AWS full jitter)."""
        for n in range(self.attempts - 1):
            yield rng() * min(self.max_delay_seconds, self.base_seconds * 2**n)


#: What every store uses unless a test passes another.
CONFLICT_RETRY: Final = ConflictRetry()
#: No retries, no sleeps: for tests that count conflicts.
NO_CONFLICT_RETRY: Final = ConflictRetry(attempts=1, base_seconds=0, max_delay_seconds=0)

__all__ = ["CONFLICT_RETRY", "NO_CONFLICT_RETRY", "ConflictRetry"]
