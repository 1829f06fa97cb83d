"""The ledger's rules, asserted identically on every store (docs/explanation/design.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    BusinessRejectedError,
    IllegalTransitionError,
    InvalidActionError,
    InvalidInputError,
    OutcomeUnknownError,
    ReplayWindowExpiredError,
    TransientError,
)
from stepsaga.ledger import Ledger, LedgerPolicy, Status
from stepsaga.ledger._models import Claim, Replay
from tests.framework.conformance.ledger.conftest import LedgerFactory
from tests.framework.conformance.ledger.helpers import (
    APPROVED_AT,
    START,
    Counter,
    Recorder,
    make_action,
)


def claim_of(ledger: Ledger, action: Any) -> Claim:
    granted = ledger.claim(action)
    assert isinstance(granted, Claim)
    return granted


# --- perform: once, then replay --------------------------------------------------------


def test_first_call_runs_fn_once_and_replays_after(ledger: Ledger) -> None:
    action, fn = make_action(), Counter({"refund_id": "RF-1"})

    first = ledger.perform(action, fn)
    second = ledger.perform(action, fn)

    assert first == second == {"refund_id": "RF-1"}
    assert fn.calls == 1
    record = ledger.get(action.key)
    assert record is not None
    assert (record.status, record.attempts, record.result) == (
        Status.COMPLETED,
        1,
        {"refund_id": "RF-1"},
    )
    assert record.key == "acme:CASE-1001:r1:refund_payment"
    assert record.digest == action.digest


def test_fn_receives_its_claim(ledger: Ledger) -> None:
    fn = Recorder()
    ledger.perform(make_action(), fn)
    assert fn.claims[0].attempt == 1
    assert fn.claims[0].key == make_action().key
    assert not fn.claims[0].takeover


def test_every_record_expires_at_approval_plus_retention(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(LedgerPolicy(retention=timedelta(days=7)))
    action = make_action()
    ledger.perform(action, Counter())
    record = ledger.get(action.key)
    assert record is not None
    assert record.expires_at == APPROVED_AT + timedelta(days=7)


def test_result_is_returned_as_it_reads_back(ledger: Ledger) -> None:
    result = ledger.perform(make_action(), lambda _: {"items": (1, 2), "note": "é"})
    assert result == {"items": [1, 2], "note": "é"}
    assert ledger.perform(make_action(), Counter()) == result


def test_read_actions_run_every_time_and_leave_no_record(ledger: Ledger) -> None:
    action, fn = make_action("get_order", effect=EffectClass.READ), Counter()
    ledger.perform(action, fn)
    ledger.perform(action, fn)
    assert fn.calls == 2
    assert ledger.get(action.key) is None
    with pytest.raises(InvalidActionError):
        ledger.claim(action)


# --- digests and conflicts -------------------------------------------------------------


def test_same_key_with_other_parameters_is_a_conflict_and_changes_nothing(ledger: Ledger) -> None:
    original = make_action()
    ledger.perform(original, Counter())
    before = ledger.get(original.key)
    changed = make_action(params={"payment_id": "PAY-991", "amount": "21.00", "currency": "USD"})

    with pytest.raises(ActionConflictError) as caught:
        ledger.perform(changed, Counter())

    assert caught.value.data["key"] == original.key
    assert caught.value.data["stored_digest"] == original.digest
    assert caught.value.data["request_digest"] == changed.digest
    assert not caught.value.retryable
    assert ledger.get(original.key) == before


def test_conflict_is_reported_even_while_another_attempt_holds_the_lease(ledger: Ledger) -> None:
    claim_of(ledger, make_action())
    with pytest.raises(ActionConflictError):
        ledger.claim(make_action(params={"amount": "1.00", "currency": "USD"}))


@pytest.mark.parametrize("amount", [20, 20.0, "20.00", "20"])
def test_equal_money_replays_instead_of_conflicting(ledger: Ledger, amount: Any) -> None:
    ledger.perform(make_action(params={"amount": "20.00", "currency": "USD"}), Counter())
    fn = Counter({"other": True})
    replayed = ledger.perform(make_action(params={"amount": amount, "currency": "usd"}), fn)
    assert fn.calls == 0
    assert replayed == {"refund_id": "RF-1"}


def test_a_new_approval_time_is_another_intent(ledger: Ledger) -> None:
    ledger.perform(make_action(), Counter())
    with pytest.raises(ActionConflictError):
        ledger.perform(make_action(approved_at=APPROVED_AT + timedelta(minutes=1)), Counter())


def test_too_fine_amounts_are_refused_before_any_record(ledger: Ledger) -> None:
    with pytest.raises(InvalidActionError):
        make_action(params={"amount": "20.001", "currency": "USD"})
    assert ledger.list() == []


# --- leases ----------------------------------------------------------------------------


def test_live_lease_means_in_progress_with_retry_after(ledger: Ledger, clock: ManualClock) -> None:
    claim_of(ledger, make_action())
    clock.advance(20)
    with pytest.raises(ActionInProgressError) as caught:
        ledger.perform(make_action(), Counter())
    assert caught.value.retryable
    assert caught.value.retry_after_seconds == pytest.approx(40)


@pytest.mark.parametrize("effect", [EffectClass.KEYED_WRITE, EffectClass.BLIND_WRITE])
def test_expired_lease_is_taken_over_for_repeatable_effects(
    ledger: Ledger, clock: ManualClock, effect: EffectClass
) -> None:
    action = make_action(effect=effect)
    lost = claim_of(ledger, action)
    clock.advance(61)

    fn = Recorder({"n": 2})
    result = ledger.perform(action, fn)

    assert result == {"n": 2}
    assert fn.claims[0].takeover
    assert fn.claims[0].attempt == 2
    with pytest.raises(IllegalTransitionError):
        ledger.complete(lost, {"n": 1})
    record = ledger.get(action.key)
    assert record is not None
    assert record.result == {"n": 2}


def test_expired_lease_of_a_physical_effect_goes_unknown(
    ledger: Ledger, clock: ManualClock
) -> None:
    action = make_action("create_shipment", effect=EffectClass.PHYSICAL)
    lost = claim_of(ledger, action)
    clock.advance(61)
    fn = Counter()

    with pytest.raises(OutcomeUnknownError):
        ledger.perform(action, fn)
    with pytest.raises(OutcomeUnknownError):
        ledger.perform(action, fn)

    assert fn.calls == 0
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.UNKNOWN
    with pytest.raises(IllegalTransitionError):
        ledger.complete(lost, {"late": True})


def test_undeclared_effect_is_treated_as_physical(ledger: Ledger, clock: ManualClock) -> None:
    action = make_action(effect="something-new")
    assert action.effect is EffectClass.PHYSICAL
    claim_of(ledger, action)
    clock.advance(61)
    with pytest.raises(OutcomeUnknownError):
        ledger.claim(action)


# --- what fn's exceptions mean ---------------------------------------------------------


def test_business_rejection_fails_and_replays_the_same_error(ledger: Ledger) -> None:
    action = make_action()

    def reject(_: Claim) -> dict[str, Any]:
        raise BusinessRejectedError("card expired", code="expired")

    with pytest.raises(BusinessRejectedError):
        ledger.perform(action, reject)
    fn = Counter()
    with pytest.raises(BusinessRejectedError) as replayed:
        ledger.perform(action, fn)

    assert fn.calls == 0
    assert replayed.value.message == "card expired"
    assert replayed.value.data["code"] == "expired"
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.FAILED
    granted = ledger.claim(action)
    assert isinstance(granted, Replay)


def test_transient_error_releases_and_the_next_call_retries(ledger: Ledger) -> None:
    action = make_action()

    def throttle(_: Claim) -> dict[str, Any]:
        raise TransientError("throttled")

    with pytest.raises(TransientError):
        ledger.perform(action, throttle)
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.RELEASED

    fn = Recorder()
    ledger.perform(action, fn)
    assert fn.attempts == [2]


def test_outcome_unknown_from_fn_marks_unknown(ledger: Ledger) -> None:
    action = make_action()

    def lost_reply(_: Claim) -> dict[str, Any]:
        raise OutcomeUnknownError("reply lost")

    with pytest.raises(OutcomeUnknownError):
        ledger.perform(action, lost_reply)
    with pytest.raises(OutcomeUnknownError):
        ledger.perform(action, Counter())
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.UNKNOWN


@pytest.mark.parametrize(
    ("effect", "status", "raised"),
    [
        (EffectClass.PHYSICAL, Status.UNKNOWN, OutcomeUnknownError),
        (EffectClass.KEYED_WRITE, Status.UNKNOWN, OutcomeUnknownError),
        (EffectClass.BLIND_WRITE, Status.RELEASED, TransientError),
    ],
)
def test_unexpected_exception_is_unknown_unless_blind(
    ledger: Ledger, effect: EffectClass, status: Status, raised: type[Exception]
) -> None:
    action = make_action(effect=effect)

    def crash(_: Claim) -> dict[str, Any]:
        raise RuntimeError("bug")

    with pytest.raises(raised) as caught:
        ledger.perform(action, crash)
    assert isinstance(caught.value.__cause__, RuntimeError)
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is status


def test_a_result_that_is_not_json_counts_as_an_unexpected_error(ledger: Ledger) -> None:
    # The effect happened; only its result cannot be kept: uncertain, never FAILED.
    action = make_action(effect=EffectClass.KEYED_WRITE)
    with pytest.raises(OutcomeUnknownError) as caught:
        ledger.perform(action, lambda _: {"when": object()})
    assert isinstance(caught.value.__cause__, InvalidInputError)
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.UNKNOWN


# --- attempts, retention ---------------------------------------------------------------


def test_attempts_are_a_lifetime_budget(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(LedgerPolicy(attempt_budget=3))
    action = make_action()
    for expected in (1, 2, 3):
        claim = claim_of(ledger, action)
        assert claim.attempt == expected
        ledger.release(claim, "throttled before dispatch")

    with pytest.raises(AttemptBudgetExhaustedError) as caught:
        ledger.claim(action)
    assert caught.value.data["attempts"] == 3
    assert not caught.value.retryable


def test_takeovers_count_against_the_attempt_budget(
    make_ledger: LedgerFactory, clock: ManualClock
) -> None:
    ledger = make_ledger(LedgerPolicy(attempt_budget=2))
    action = make_action()
    claim_of(ledger, action)
    clock.advance(61)
    assert claim_of(ledger, action).attempt == 2
    clock.advance(61)
    with pytest.raises(AttemptBudgetExhaustedError):
        ledger.claim(action)


def test_intents_older_than_retention_are_refused(ledger: Ledger) -> None:
    old = make_action(approved_at=START - timedelta(days=30, seconds=1))
    with pytest.raises(ReplayWindowExpiredError):
        ledger.perform(old, Counter())
    assert ledger.get(old.key) is None


def test_expired_but_undeleted_records_no_longer_protect(
    ledger: Ledger, clock: ManualClock
) -> None:
    action = make_action()
    ledger.perform(action, Counter())
    clock.set(APPROVED_AT + timedelta(days=30))
    with pytest.raises(ReplayWindowExpiredError):
        ledger.perform(action, Counter())


# --- conditional transitions -----------------------------------------------------------


def test_repeating_the_same_transition_is_harmless(ledger: Ledger) -> None:
    claim = claim_of(ledger, make_action())
    first = ledger.complete(claim, {"ok": 1}, reference="RF-1")
    again = ledger.complete(claim, {"ok": 1}, reference="RF-1")
    assert again.status is Status.COMPLETED
    assert again.reference == first.reference == "RF-1"


def test_transitions_need_the_current_status(ledger: Ledger) -> None:
    claim = claim_of(ledger, make_action())
    ledger.release(claim, "never dispatched")
    with pytest.raises(IllegalTransitionError):
        ledger.complete(claim, {"ok": 1})
    with pytest.raises(IllegalTransitionError):
        ledger.fail(claim, {"error": "BusinessRejectedError", "message": "no"})
    with pytest.raises(IllegalTransitionError):
        ledger.mark_unknown(claim, "hm")
    record = ledger.get(claim.key)
    assert record is not None
    assert record.status is Status.RELEASED


def test_transitions_need_the_current_owner(ledger: Ledger, clock: ManualClock) -> None:
    action = make_action()
    stale = claim_of(ledger, action)
    clock.advance(61)
    current = claim_of(ledger, action)
    with pytest.raises(IllegalTransitionError):
        ledger.release(stale, "late")
    record = ledger.get(action.key)
    assert record is not None
    assert record.owner == current.owner
    assert record.status is Status.IN_PROGRESS


def test_reference_is_kept_with_the_result(ledger: Ledger) -> None:
    claim = claim_of(ledger, make_action())
    ledger.complete(claim, {"ok": 1}, reference="RF-77")
    record = ledger.get(claim.key)
    assert record is not None
    assert record.reference == "RF-77"


# --- budgets ---------------------------------------------------------------------------


def test_budget_is_debited_with_the_claim_and_kept_on_success(ledger: Ledger) -> None:
    ledger.set_budget("acme", 10)
    ledger.perform(make_action(cost=4), Counter())
    ledger.perform(make_action(cost=4), Counter())  # a replay costs nothing
    assert ledger.budget("acme") == 6


def test_exhausted_budget_refuses_and_writes_nothing(ledger: Ledger) -> None:
    ledger.set_budget("acme", 3)
    action = make_action(cost=4)
    fn = Counter()
    with pytest.raises(BudgetExhaustedError) as caught:
        ledger.perform(action, fn)
    assert caught.value.data["remaining"] == 3
    assert fn.calls == 0
    assert ledger.get(action.key) is None
    assert ledger.budget("acme") == 3


def test_tenants_without_a_budget_are_not_debited(ledger: Ledger) -> None:
    assert ledger.budget("acme") is None
    assert ledger.perform(make_action(cost=4), Counter()) == {"refund_id": "RF-1"}
    assert ledger.budget("acme") is None


def test_release_and_failure_refund_unknown_does_not(ledger: Ledger) -> None:
    ledger.set_budget("acme", 10)
    released = claim_of(ledger, make_action("a", cost=2))
    failed = claim_of(ledger, make_action("b", cost=3))
    unknown = claim_of(ledger, make_action("c", cost=4))
    assert ledger.budget("acme") == 1

    ledger.release(released, "before dispatch")
    ledger.fail(failed, BusinessRejectedError("no").to_dict())
    ledger.mark_unknown(unknown, "timeout after dispatch")

    assert ledger.budget("acme") == 6


def test_a_released_action_is_debited_again_when_reclaimed(ledger: Ledger) -> None:
    ledger.set_budget("acme", 10)
    action = make_action(cost=4)
    ledger.release(claim_of(ledger, action), "throttled")
    assert ledger.budget("acme") == 10
    claim_of(ledger, action)
    assert ledger.budget("acme") == 6


def test_takeover_does_not_debit_twice(ledger: Ledger, clock: ManualClock) -> None:
    ledger.set_budget("acme", 10)
    action = make_action(cost=4)
    claim_of(ledger, action)
    clock.advance(61)
    ledger.perform(action, Counter())
    assert ledger.budget("acme") == 6


# --- sweeping --------------------------------------------------------------------------


def test_sweep_turns_stale_claims_unknown_without_refund(
    make_ledger: LedgerFactory, clock: ManualClock
) -> None:
    ledger = make_ledger(LedgerPolicy(lease_seconds=60, sweep_grace_seconds=300))
    ledger.set_budget("acme", 10)
    stale = make_action("stale", cost=5)
    claim_of(ledger, stale)
    clock.advance(200)
    fresh = make_action("fresh")
    claim_of(ledger, fresh)
    clock.advance(200)  # stale: 400 s since claim, 340 past lease; fresh: 140 past lease

    swept = ledger.sweep()

    assert [r.key for r in swept] == [stale.key]
    assert swept[0].status is Status.UNKNOWN
    stale_record, fresh_record = ledger.get(stale.key), ledger.get(fresh.key)
    assert stale_record is not None
    assert stale_record.status is Status.UNKNOWN
    assert fresh_record is not None
    assert fresh_record.status is Status.IN_PROGRESS
    assert ledger.budget("acme") == 5
    assert ledger.sweep() == []


# --- listing ---------------------------------------------------------------------------


def test_list_filters_and_orders_oldest_first(ledger: Ledger, clock: ManualClock) -> None:
    ledger.perform(make_action("reserve_stock"), Counter())
    clock.advance(1)
    ledger.perform(make_action("refund_payment", case="CASE-2"), Counter())
    clock.advance(1)
    claim_of(ledger, make_action("create_shipment", tenant="globex"))

    assert [r.operation for r in ledger.list()] == [
        "reserve_stock",
        "refund_payment",
        "create_shipment",
    ]
    assert [r.case_id for r in ledger.list(tenant="acme")] == ["CASE-1001", "CASE-2"]
    assert [r.operation for r in ledger.list(case="CASE-2")] == ["refund_payment"]
    assert [r.tenant_id for r in ledger.list(status="in_progress")] == ["globex"]
    assert len(ledger.list(limit=2)) == 2
    with pytest.raises(InvalidInputError):
        ledger.list(status="DONE")


def test_compensations_have_their_own_record(ledger: Ledger) -> None:
    forward = make_action("reserve_stock")
    ledger.perform(forward, Counter())
    undo = forward.compensation("release_stock", EffectClass.KEYED_WRITE, {"sku": "SKU-1"})
    assert undo.key == f"{forward.key}:compensate:release_stock"
    fn = Counter({"released": True})
    assert ledger.perform(undo, fn) == {"released": True}
    assert ledger.perform(undo, fn) == {"released": True}
    assert fn.calls == 1
    assert {r.key for r in ledger.list()} == {forward.key, undo.key}


def test_an_oversized_result_is_refused_like_an_unexpected_error(ledger: Ledger) -> None:
    action = make_action(effect=EffectClass.PHYSICAL)
    with pytest.raises(OutcomeUnknownError, match="larger than"):
        ledger.perform(action, lambda _: {"blob": "x" * 70_000})
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.UNKNOWN
