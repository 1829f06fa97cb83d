"""How long claims live and how far recovery may go; validated before any use."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from stepsaga.errors import InvalidInputError


@dataclass(frozen=True)
class LedgerPolicy:
    """The ledger's tunable rules. Defaults suit a Lambda task with a 60 s timeout."""

    lease_seconds: float = 60
    """How long a claim owns its action when no Lambda invocation holds it (inside one, the
    lease ends at the invocation's deadline: ``stepsaga.ledger._lease``). Set it above the
    longest run of ``fn``: an expired lease lets another worker act on the action."""

    attempt_budget: int = 24
    """Lifetime claims per action, counted across retries *and* redrives (Step Functions
    resets its own retry counters on redrive; this count does not reset). 24 = three runs of
    the default transient envelope (1 + 7 claims each): the first, and two redrives."""

    retention: timedelta = timedelta(days=30)
    """How long after approval a record protects its action; also its ``expires_at`` (the
    DynamoDB TTL). Claims for intents approved longer ago are refused."""

    sweep_grace_seconds: float = 300
    """How long past lease expiry the sweeper waits before declaring an ``IN_PROGRESS``
    action ``UNKNOWN`` (gives a slow worker the chance to record its outcome)."""

    def __post_init__(self) -> None:
        _seconds("lease_seconds", self.lease_seconds, allow_zero=False)
        _seconds("sweep_grace_seconds", self.sweep_grace_seconds, allow_zero=True)
        budget = self.attempt_budget
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise InvalidInputError(
                f"attempt_budget must be an integer of at least 1, got {budget!r}",
                field="attempt_budget",
            )
        if not isinstance(self.retention, timedelta):
            raise InvalidInputError(
                f"retention must be a timedelta, got {self.retention!r}", field="retention"
            )
        if self.retention.total_seconds() <= self.lease_seconds:
            raise InvalidInputError(
                "retention must be longer than lease_seconds", field="retention"
            )

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.lease_seconds)

    @property
    def sweep_grace(self) -> timedelta:
        return timedelta(seconds=self.sweep_grace_seconds)


def _seconds(name: str, value: object, *, allow_zero: bool) -> None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value >= 0 if allow_zero else value > 0)
    )
    if not ok:
        need = "a non-negative" if allow_zero else "a positive"
        raise InvalidInputError(
            f"{name} must be {need} number of seconds, got {value!r}", field=name
        )
