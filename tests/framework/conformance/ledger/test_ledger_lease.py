"""A claim's lease ends with the Lambda invocation that holds it (both stores).

The deadline comes from a fake Lambda context's ``get_remaining_time_in_millis``, as the
handlers' wrapper registers it; without one the lease is ``LedgerPolicy.lease_seconds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.errors import ActionInProgressError, OutcomeUnknownError
from stepsaga.ledger import Ledger, LedgerPolicy, Status
from stepsaga.ledger._lease import current_deadline, invocation_deadline
from stepsaga.ledger._models import Claim
from tests.framework.conformance.ledger.conftest import LedgerFactory
from tests.framework.conformance.ledger.helpers import START, make_action


@dataclass
class FakeContext:
    """The one method of Lambda's context object the lease reads."""

    remaining_millis: int

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def claim_in(ledger: Ledger, clock: ManualClock, remaining_millis: int, **kw: object) -> Claim:
    with invocation_deadline(FakeContext(remaining_millis), clock):
        granted = ledger.claim(make_action(**kw))  # type: ignore[arg-type]
    assert isinstance(granted, Claim)
    return granted


def test_without_a_context_the_lease_is_the_policys(ledger: Ledger) -> None:
    claim = ledger.claim(make_action())
    assert isinstance(claim, Claim)
    stored = ledger.get(claim.key)
    assert stored is not None
    assert stored.lease_expires_at == START + timedelta(seconds=60)


def test_the_lease_ends_at_the_invocations_deadline(ledger: Ledger, clock: ManualClock) -> None:
    """A 5-minute invocation keeps its claim past the 60 s policy lease, and no longer."""
    claim = claim_in(ledger, clock, 300_000)
    stored = ledger.get(claim.key)
    assert stored is not None
    assert stored.status is Status.IN_PROGRESS
    assert stored.lease_expires_at == START + timedelta(seconds=300)

    clock.advance(61)
    with pytest.raises(ActionInProgressError) as caught:
        claim_in(ledger, clock, 300_000)
    assert caught.value.retry_after_seconds == pytest.approx(239)

    clock.advance(239)
    taken = claim_in(ledger, clock, 300_000)
    assert (taken.attempt, taken.takeover) == (2, True)


def test_after_a_timeout_the_next_attempt_takes_over_at_once(
    ledger: Ledger, clock: ManualClock
) -> None:
    """An invocation with 5 s left dies at its deadline; the retry 5 s later (the timeout
    retrier's first interval) need not wait out a 60 s lease."""
    claim_in(ledger, clock, 5_000)
    clock.advance(5)
    taken = claim_in(ledger, clock, 60_000)
    assert (taken.attempt, taken.takeover) == (2, True)


def test_a_physical_action_whose_invocation_ended_goes_to_reconciliation(
    ledger: Ledger, clock: ManualClock
) -> None:
    claim = claim_in(ledger, clock, 5_000, effect=EffectClass.PHYSICAL)
    clock.advance(5)
    with pytest.raises(OutcomeUnknownError):
        claim_in(ledger, clock, 60_000, effect=EffectClass.PHYSICAL)
    stored = ledger.get(claim.key)
    assert stored is not None
    assert stored.status is Status.UNKNOWN


def test_a_long_invocation_outlives_a_short_policy_lease(
    make_ledger: LedgerFactory, clock: ManualClock
) -> None:
    ledger = make_ledger(LedgerPolicy(lease_seconds=10))
    claim_in(ledger, clock, 120_000)
    clock.advance(11)
    with pytest.raises(ActionInProgressError):
        claim_in(ledger, clock, 120_000)


def test_the_deadline_is_only_registered_inside_the_block(clock: ManualClock) -> None:
    assert current_deadline() is None
    with invocation_deadline(FakeContext(1_500), clock) as deadline:
        assert deadline == START + timedelta(seconds=1.5)
        assert current_deadline() == deadline
    assert current_deadline() is None
    with invocation_deadline(object(), clock) as none:  # no get_remaining_time_in_millis
        assert none is None
