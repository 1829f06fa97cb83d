"""Why an action needs reconciliation, from the error name Step Functions caught."""

from __future__ import annotations

from enum import StrEnum

from stepsaga.errors import (
    ActionConflictError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    OutcomeUnknownError,
    ReplayWindowExpiredError,
)

#: Who resolves what automatic reconciliation decided (the audit trail's ``resolved_by``).
AUTO_RESOLVER = "stepsaga:auto"


class Reason(StrEnum):
    OUTCOME_UNKNOWN = "outcome unknown"
    ATTEMPT_BUDGET_EXHAUSTED = "attempt budget exhausted"
    BUDGET_EXHAUSTED = "tenant budget exhausted"
    ACTION_CONFLICT = "action key conflict"
    REPLAY_WINDOW_EXPIRED = "replay window expired"
    REVISION_CONFLICT = "revision conflict"
    """A later revision meets an earlier one's changed or uncertain effect (the record says
    so: ``OutcomeUnknownError`` is the error name), so only a person decides."""
    EXECUTION_STOPPED = "execution stopped"
    """An operator stopped the execution while the action was in flight."""
    OTHER = "failed"

    @classmethod
    def from_error(cls, error_name: str) -> Reason:
        return _BY_ERROR.get(error_name, cls.OTHER)


_BY_ERROR = {
    OutcomeUnknownError.error_name(): Reason.OUTCOME_UNKNOWN,
    AttemptBudgetExhaustedError.error_name(): Reason.ATTEMPT_BUDGET_EXHAUSTED,
    BudgetExhaustedError.error_name(): Reason.BUDGET_EXHAUSTED,
    ActionConflictError.error_name(): Reason.ACTION_CONFLICT,
    ReplayWindowExpiredError.error_name(): Reason.REPLAY_WINDOW_EXPIRED,
}


def escalation_reason(text: str) -> str:
    return f"escalated: {text}"


def compensation_failed_reason(operation: str) -> str:
    return f"compensation {operation} failed"
