"""The outcome rule on its own: one case per row of its docstring."""

from __future__ import annotations

import pytest

from stepsaga.backends import CaseOutcome
from stepsaga.backends._outcome import OutcomeFacts, derive_outcome


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (OutcomeFacts("SUCCEEDED"), CaseOutcome.COMPLETED),
        (OutcomeFacts("FAILED", "Saga.Compensated"), CaseOutcome.COMPENSATED),
        (OutcomeFacts("FAILED", "Saga.CompensationFailed"), CaseOutcome.COMPENSATION_FAILED),
        (OutcomeFacts("RUNNING"), CaseOutcome.RUNNING),
        (
            OutcomeFacts("RUNNING", waiting_for=("AwaitDecisionCreateShipment",)),
            CaseOutcome.AWAITING_RECONCILIATION,
        ),
        (OutcomeFacts("PENDING_REDRIVE"), CaseOutcome.RUNNING),
        (OutcomeFacts("FAILED", "TransientError"), CaseOutcome.FAILED),
        (OutcomeFacts("FAILED", "States.Timeout"), CaseOutcome.FAILED),
        (OutcomeFacts("ABORTED", "Stepsaga.Interrupted"), CaseOutcome.FAILED),
        (OutcomeFacts("TIMED_OUT"), CaseOutcome.FAILED),
        (OutcomeFacts("succeeded"), CaseOutcome.COMPLETED),
    ],
)
def test_derive_outcome(facts: OutcomeFacts, expected: CaseOutcome) -> None:
    assert derive_outcome(facts) is expected


def test_a_compensated_case_stays_compensated_whatever_waits() -> None:
    # An escalated refund leaves an open item, but the execution itself has ended.
    facts = OutcomeFacts("FAILED", "Saga.Compensated", waiting_for=("X",))
    assert derive_outcome(facts) is CaseOutcome.COMPENSATED
