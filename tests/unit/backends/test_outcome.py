"""The outcome rule on its own: one case per row of its docstring."""

from __future__ import annotations

import pytest

from stepsaga.backends import Outcome, OutcomeFacts, derive_outcome


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (OutcomeFacts("SUCCEEDED"), Outcome.COMPLETED),
        (OutcomeFacts("FAILED", "Saga.Compensated"), Outcome.COMPENSATED),
        (OutcomeFacts("FAILED", "Saga.CompensationFailed"), Outcome.COMPENSATION_FAILED),
        (OutcomeFacts("RUNNING"), Outcome.RUNNING),
        (
            OutcomeFacts("RUNNING", waiting_for=("AwaitDecisionCreateShipment",)),
            Outcome.AWAITING_RECONCILIATION,
        ),
        (OutcomeFacts("PENDING_REDRIVE"), Outcome.RUNNING),
        (OutcomeFacts("FAILED", "TransientError"), Outcome.FAILED),
        (OutcomeFacts("FAILED", "States.Timeout"), Outcome.FAILED),
        (OutcomeFacts("ABORTED", "Stepsaga.Interrupted"), Outcome.FAILED),
        (OutcomeFacts("TIMED_OUT"), Outcome.FAILED),
        (OutcomeFacts("succeeded"), Outcome.COMPLETED),
    ],
)
def test_derive_outcome(facts: OutcomeFacts, expected: Outcome) -> None:
    assert derive_outcome(facts) is expected


def test_a_compensated_case_stays_compensated_whatever_waits() -> None:
    # An escalated refund leaves an open item, but the execution itself has ended.
    facts = OutcomeFacts("FAILED", "Saga.Compensated", waiting_for=("X",))
    assert derive_outcome(facts) is Outcome.COMPENSATED
