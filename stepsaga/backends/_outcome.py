"""The one rule that says what became of a case: :func:`derive_outcome`.

Both backends collect the same :class:`OutcomeFacts` (the execution's status and error, and
the callbacks it waits for — which on AWS are read from the ledger's reconciliation items)
and call this rule, so ``status`` means the same thing on the embedded engine and on AWS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stepsaga.backends._views import CaseOutcome
from stepsaga.errors import EXECUTION_STOPPED, SAGA_COMPENSATED, SAGA_COMPENSATION_FAILED


@dataclass(frozen=True)
class OutcomeFacts:
    """What the rule looks at.

    ``status``/``error``: ``DescribeExecution``'s. ``waiting_for``: states of the execution
    waiting for a callback (local: the engine's waiting tasks; AWS: the case's OPEN
    reconciliation items that carry a task token, while the execution runs).
    """

    status: str
    error: str | None = None
    waiting_for: tuple[str, ...] = ()


def derive_outcome(facts: OutcomeFacts) -> CaseOutcome:
    """``SUCCEEDED`` → completed. ``FAILED`` with ``Saga.Compensated`` → compensated (an
    escalated refund may still be open: the case itself is settled), with
    ``Saga.CompensationFailed`` → compensation_failed. ``RUNNING`` while waiting for a
    callback (only operators' decisions are callbacks in our sagas) →
    awaiting_reconciliation, otherwise running. ``ABORTED`` with ``Stepsaga.Stopped`` (an
    operator's ``stepsaga stop``) → stopped. Every other stop (retries exhausted,
    interrupted, timed out, aborted) → failed: redrive it.
    """
    status = facts.status.upper()
    if status == "SUCCEEDED":
        return CaseOutcome.COMPLETED
    if status == "RUNNING":
        return CaseOutcome.AWAITING_RECONCILIATION if facts.waiting_for else CaseOutcome.RUNNING
    if status == "PENDING_REDRIVE":
        return CaseOutcome.RUNNING
    if status == "ABORTED" and facts.error == EXECUTION_STOPPED:
        return CaseOutcome.STOPPED
    if status == "FAILED" and facts.error == SAGA_COMPENSATED:
        return CaseOutcome.COMPENSATED
    if status == "FAILED" and facts.error == SAGA_COMPENSATION_FAILED:
        return CaseOutcome.COMPENSATION_FAILED
    return CaseOutcome.FAILED


#: The execution statuses each outcome can come from: how a listing narrows ``--outcome``
#: to an indexed ``status`` query before :func:`derive_outcome` decides each row (a test
#: checks this table against the rule for every status and error).
OUTCOME_STATUSES: Mapping[CaseOutcome, frozenset[str]] = {
    CaseOutcome.COMPLETED: frozenset({"SUCCEEDED"}),
    CaseOutcome.COMPENSATED: frozenset({"FAILED"}),
    CaseOutcome.COMPENSATION_FAILED: frozenset({"FAILED"}),
    CaseOutcome.AWAITING_RECONCILIATION: frozenset({"RUNNING"}),
    CaseOutcome.RUNNING: frozenset({"RUNNING", "PENDING_REDRIVE"}),
    CaseOutcome.STOPPED: frozenset({"ABORTED"}),
    CaseOutcome.FAILED: frozenset({"FAILED", "TIMED_OUT", "ABORTED"}),
}
