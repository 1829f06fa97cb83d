"""The reconciliation handler: automatic decisions first, items only for what is undecidable."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga._aws import metric_names
from stepsaga._reconciliation import AUTO_RESOLVER, Resolution, resolve
from stepsaga.backends import ReconOutcome
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    BusinessRejectedError,
    IllegalTransitionError,
    InvalidInputError,
    OutcomeUnknownError,
    ReplayWindowExpiredError,
    TransientError,
)
from stepsaga.ledger import LedgerPolicy, Status
from stepsaga.ledger._models import Claim, ReconStatus
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import (
    World,
    await_event,
    case_input,
    compensation_event,
    compensation_failed_event,
    escalate_event,
    fault,
    reconcile_event,
    step_event,
)

REFUND_KEY = "acme:CASE-1001:r1:refund_payment"
RESERVE_KEY = "acme:CASE-1001:r1:reserve_stock"
BUDGET = "BudgetExhaustedError"


def refund_case(amount: str = "20.00") -> dict[str, Any]:
    return case_input(refund={"payment_id": "PAY-991", "amount": amount, "currency": "USD"})


def unknown_refund(world: World) -> None:
    with pytest.raises(OutcomeUnknownError):
        world.run("RefundPayment", step_event("RefundPayment"))


# --- automatic outcomes ------------------------------------------------------------------


def test_found_by_key_completes_with_the_refund_id(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("refund", "lose_response")]})
    unknown_refund(world)
    refund_id = world.effects("refund")[0].resource_id

    verdict = world.run("Reconcile", reconcile_event("RefundPayment"))

    assert verdict["outcome"] == "applied"
    record = world.ledger.get(REFUND_KEY)
    assert record.status is Status.COMPLETED
    assert record.result["refund_id"] == refund_id
    assert record.reference == refund_id  # the downstream id, as a completed call keeps it
    item = world.ledger.get_item(verdict["item_id"])
    assert item.status is ReconStatus.RESOLVED
    assert item.outcome is ReconOutcome.APPLIED
    assert item.resolved_by == AUTO_RESOLVER
    assert refund_id in item.note
    assert "find_refund_by_key" in item.note
    assert item.evidence["request_digest"] == record.digest
    assert item.evidence["last_error"]["error"] == "OutcomeUnknownError"
    assert item.evidence["attempts"] == 1
    # The step then replays the refund; nothing opened for a person.
    replay = world.run("RefundPayment", step_event("RefundPayment"))
    assert replay["replayed"] is True
    assert replay["result"]["refund_id"] == refund_id
    assert len(world.effects("refund")) == 1
    assert world.metrics.total(metric_names.RECONCILIATION_OPENED) == 0


def test_proven_absent_releases_for_the_same_key(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("refund", "timeout_before_effect", times=2)]})
    unknown_refund(world)
    assert world.effects("refund") == []

    verdict = world.run("Reconcile", reconcile_event("RefundPayment"))

    assert verdict["outcome"] == "not_applied"
    assert world.ledger.get(REFUND_KEY).status is Status.RELEASED
    item = world.ledger.get_item(verdict["item_id"])
    assert (item.outcome, item.resolved_by) == (ReconOutcome.NOT_APPLIED, AUTO_RESOLVER)
    result = world.run("RefundPayment", step_event("RefundPayment"))
    assert result["action_key"] == REFUND_KEY
    assert len(world.effects("refund")) == 1
    assert world.effects("refund")[0].reference == REFUND_KEY  # the same key went down


def not_applied_by_two(world: World, item_id: str, note: str, *, send: bool = True) -> Resolution:
    """``RefundPayment`` is under dual control: a person's not-applied takes two people."""
    sender = world.sent if send else None
    first = resolve(world.ledger, item_id, "not-applied", "ops", note, send_task_success=sender)
    assert (first.awaiting_second_approver, first.resumed) == (True, False)
    return resolve(world.ledger, item_id, "not-applied", "ops-2", note, send_task_success=sender)


def test_absent_with_every_attempt_used_waits_for_a_person(make: WorldFactory) -> None:
    world = make(
        policy=LedgerPolicy(attempt_budget=1),
        faults={"faults": [fault("refund", "timeout_before_effect", times=2)]},
    )
    unknown_refund(world)

    verdict = world.run("Reconcile", reconcile_event("RefundPayment"))

    # "Not applied" would grant an attempt past the lifetime budget: only a person may.
    assert verdict["outcome"] == "undecided"
    assert world.ledger.get(REFUND_KEY).status is Status.UNKNOWN
    item = world.ledger.get_item(verdict["item_id"])
    assert (item.reason, item.status) == ("outcome unknown (attempt 1)", ReconStatus.OPEN)
    assert item.evidence["lookup"].startswith("absent downstream: ")
    assert "only a person grants another" in item.evidence["lookup"]
    not_applied_by_two(world, item.item_id, "no refund")
    world.run("RefundPayment", step_event("RefundPayment"))
    assert len(world.effects("refund")) == 1


def test_a_failing_lookup_stays_open_once(make: WorldFactory) -> None:
    world = make(
        faults={
            "faults": [fault("refund", "lose_response"), fault("find_refund_by_key", "throttle")]
        }
    )
    unknown_refund(world)

    first = world.run("Reconcile", reconcile_event("RefundPayment"))
    again = world.run("Reconcile", reconcile_event("RefundPayment"))

    assert first == again
    assert first["outcome"] == "undecided"
    item = world.ledger.get_item(first["item_id"])
    assert item.status is ReconStatus.OPEN
    assert item.reason == "outcome unknown (attempt 1)"
    assert item.step == "RefundPayment"
    assert item.evidence["lookup"].startswith("failed:")
    assert world.metrics.total(metric_names.RECONCILIATION_OPENED) == 1


def test_completed_record_is_applied_without_an_item(world: World) -> None:
    world.run("RefundPayment", step_event("RefundPayment"))
    verdict = world.run("Reconcile", reconcile_event("RefundPayment"))
    assert verdict == {"outcome": "applied", "item_id": None}


def test_a_live_lease_is_asked_again_later(world: World) -> None:
    from stepsaga._handlers.identity import action_of
    from stepsaga.workflow._events import parse_event
    from tasks.refund_payment import RefundPayment
    from workflows.replacement_order import RefundPaymentEvent

    parsed = parse_event(RefundPaymentEvent, step_event("RefundPayment"))
    action = action_of(
        parsed, "refund_payment", parsed.effect, RefundPayment().consequential(parsed.params), 1
    )
    assert isinstance(world.ledger.claim(action), Claim)

    with pytest.raises(ActionInProgressError):
        world.run("Reconcile", reconcile_event("RefundPayment"))


def test_tenant_budget_topped_up_before_reconciling_runs_the_step_again(world: World) -> None:
    world.ledger.set_budget("acme", 0)
    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))

    world.ledger.set_budget("acme", 3)
    verdict = world.run("Reconcile", reconcile_event("RefundPayment", "BudgetExhaustedError"))

    assert verdict == {"outcome": "not_applied", "item_id": None}
    world.run("RefundPayment", step_event("RefundPayment"))
    assert world.ledger.budget("acme") == 2


def test_tenant_budget_without_a_record_opens_an_item_and_waits(world: World) -> None:
    world.ledger.set_budget("acme", 0)
    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))

    first = world.run("Reconcile", reconcile_event("RefundPayment", "BudgetExhaustedError"))
    again = world.run("Reconcile", reconcile_event("RefundPayment", "BudgetExhaustedError"))

    assert first == again
    assert first["outcome"] == "undecided"
    item = world.ledger.get_item(first["item_id"])
    assert world.ledger.get(REFUND_KEY) is None  # nothing was claimed
    assert (item.record_key, item.tenant_id, item.case_id, item.step) == (
        REFUND_KEY,
        "acme",
        "CASE-1001",
        "RefundPayment",
    )
    assert item.reason == "tenant budget exhausted (never claimed)"
    assert item.evidence["record_status"] is None
    assert item.evidence["request_digest"]
    assert item.evidence["last_error"]["error"] == "BudgetExhaustedError"
    assert "top up" in item.evidence["next"]
    assert world.metrics.total(metric_names.RECONCILIATION_OPENED) == 1

    world.run("Reconcile", await_event("RefundPayment", item.item_id, "tok-1", error=BUDGET))
    assert world.ledger.get_item(item.item_id).task_token == "tok-1"
    assert world.sent.calls == []  # the budget is still short: the case waits

    with pytest.raises(IllegalTransitionError, match="never claimed"):
        resolve(world.ledger, item.item_id, "applied", "ops", "?", send_task_success=world.sent)
    world.ledger.set_budget("acme", 3)
    resolution = not_applied_by_two(world, item.item_id, "budget raised")
    assert resolution.resumed is True
    assert [(t, out["outcome"]) for t, out in world.sent.calls] == [("tok-1", "not_applied")]
    assert world.ledger.get(REFUND_KEY) is None
    result = world.run("RefundPayment", step_event("RefundPayment"))
    assert result["action_key"] == REFUND_KEY
    assert world.ledger.budget("acme") == 2
    assert len(world.effects("refund")) == 1


def test_go_again_without_a_top_up_asks_a_person_again(world: World) -> None:
    world.ledger.set_budget("acme", 0)
    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))
    first = world.run("Reconcile", reconcile_event("RefundPayment", BUDGET))
    not_applied_by_two(world, first["item_id"], "retry", send=False)

    with pytest.raises(BudgetExhaustedError):  # still no budget: refused again
        world.run("RefundPayment", step_event("RefundPayment"))
    second = world.run("Reconcile", reconcile_event("RefundPayment", BUDGET))

    assert second["outcome"] == "undecided"  # a new question, never a loop on the old answer
    assert second["item_id"] != first["item_id"]
    assert world.ledger.get_item(second["item_id"]).reason == (
        "tenant budget exhausted (never claimed) (#2)"
    )


def test_a_top_up_before_the_case_waits_resumes_it_at_once(world: World) -> None:
    world.ledger.set_budget("acme", 0)
    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))
    verdict = world.run("Reconcile", reconcile_event("RefundPayment", "BudgetExhaustedError"))
    world.ledger.set_budget("acme", 1)

    world.run("Reconcile", await_event("RefundPayment", verdict["item_id"], "tok-1", error=BUDGET))

    item = world.ledger.get_item(verdict["item_id"])
    assert (item.status, item.outcome, item.resolved_by) == (
        ReconStatus.RESOLVED,
        ReconOutcome.NOT_APPLIED,
        AUTO_RESOLVER,
    )
    assert [(t, out["outcome"]) for t, out in world.sent.calls] == [("tok-1", "not_applied")]


def test_replay_window_refusal_opens_an_item_for_a_person(world: World) -> None:
    world.clock.advance(31 * 24 * 3600)
    with pytest.raises(ReplayWindowExpiredError):
        world.run("ReserveStock", step_event("ReserveStock"))

    verdict = world.run("Reconcile", reconcile_event("ReserveStock", "ReplayWindowExpiredError"))

    assert verdict["outcome"] == "undecided"
    item = world.ledger.get_item(verdict["item_id"])
    assert (item.record_key, item.reason) == (
        RESERVE_KEY,
        "replay window expired (never claimed)",
    )
    assert "new revision" in item.evidence["next"]
    assert world.ledger.get(RESERVE_KEY) is None


def test_tenant_budget_with_a_record_opens_an_item_and_asks_again(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("refund", "throttle", attempt=1)]})
    with pytest.raises(TransientError):
        world.run("RefundPayment", step_event("RefundPayment"))  # RELEASED, refunded
    world.ledger.set_budget("acme", 0)
    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))

    first = world.run("Reconcile", reconcile_event("RefundPayment", "BudgetExhaustedError"))
    assert first["outcome"] == "undecided"
    item = world.ledger.get_item(first["item_id"])
    assert item.reason == "tenant budget exhausted (attempt 1)"

    # "Go again" without a top-up: the same question comes back as a new item, not a loop.
    not_applied_by_two(world, item.item_id, "retry", send=False)
    with pytest.raises(BudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))
    second = world.run("Reconcile", reconcile_event("RefundPayment", "BudgetExhaustedError"))
    assert second["outcome"] == "undecided"
    assert world.ledger.get_item(second["item_id"]).reason.endswith("(#2)")


def test_attempt_budget_exhausted_stays_open(make: WorldFactory) -> None:
    world = make(
        policy=LedgerPolicy(attempt_budget=1), faults={"faults": [fault("refund", "throttle")]}
    )
    with pytest.raises(TransientError):
        world.run("RefundPayment", step_event("RefundPayment"))
    with pytest.raises(AttemptBudgetExhaustedError):
        world.run("RefundPayment", step_event("RefundPayment"))

    verdict = world.run(
        "Reconcile", reconcile_event("RefundPayment", "AttemptBudgetExhaustedError")
    )
    assert verdict["outcome"] == "undecided"
    assert world.ledger.get_item(verdict["item_id"]).reason.startswith("attempt budget")


def test_a_conflict_stays_open(world: World) -> None:
    world.run("RefundPayment", step_event("RefundPayment"))
    with pytest.raises(ActionConflictError):
        world.run("RefundPayment", step_event("RefundPayment", refund_case("25.00")))

    verdict = world.run(
        "Reconcile", reconcile_event("RefundPayment", "ActionConflictError", refund_case("25.00"))
    )
    assert verdict["outcome"] == "undecided"
    item = world.ledger.get_item(verdict["item_id"])
    assert item.reason.startswith("action key conflict")
    assert world.ledger.get(REFUND_KEY).status is Status.COMPLETED  # untouched


# --- escalations and failed compensations -------------------------------------------------


def test_escalation_records_one_item_and_notifies_once(world: World) -> None:
    refund = world.run("RefundPayment", step_event("RefundPayment"))

    first = world.run("Reconcile", escalate_event(refund))
    again = world.run("Reconcile", escalate_event(refund))

    assert first == again
    item = world.ledger.get_item(first["item_id"])
    assert item.reason == "escalated: refund issued, replacement not shipped"
    assert item.status is ReconStatus.OPEN
    assert item.evidence["downstream_reference"] == refund["result"]["refund_id"]
    assert item.evidence["last_error"]["error"] == "BusinessRejectedError"
    assert [n.item_id for n in world.notifier.notices] == [item.item_id]
    assert world.notifier.notices[0].waiting is False
    assert world.metrics.total(metric_names.RECONCILIATION_OPENED) == 1
    assert len(world.effects("refund")) == 1  # a record, never an automatic charge


def test_escalation_of_another_cases_refund_is_refused(world: World) -> None:
    refund = world.run("RefundPayment", step_event("RefundPayment"))
    forged = dict(refund, action_key="acme:CASE-9:r1:refund_payment")
    with pytest.raises(InvalidInputError) as caught:
        world.run("Reconcile", escalate_event(forged))
    assert caught.value.data["field"] == "original.action_key"


# --- failed compensations: reconciled like forward steps -----------------------------------

RELEASE_KEY = f"{RESERVE_KEY}:compensate:release_reservation"
RELEASE_FAILED = "compensation release_reservation failed"


def failed_release(world: World, error: type[Exception] = OutcomeUnknownError) -> dict[str, Any]:
    """Reserve, then run the release until it fails with ``error``; returns the reservation."""
    original = world.run("ReserveStock", step_event("ReserveStock"))
    with pytest.raises(error):
        world.run("ReleaseReservation", compensation_event(original))
    return original


def test_a_release_whose_reply_was_lost_is_found_released(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("release", "lose_response")]})
    original = failed_release(world)
    assert world.ledger.get(RELEASE_KEY).status is Status.UNKNOWN

    verdict = world.run("Reconcile", compensation_failed_event(original))

    assert verdict["outcome"] == "applied"
    record = world.ledger.get(RELEASE_KEY)
    assert record.status is Status.COMPLETED
    assert record.result["status"] == "released"
    assert record.reference == RESERVE_KEY  # the reservation id
    item = world.ledger.get_item(verdict["item_id"])
    assert (item.record_key, item.step) == (RELEASE_KEY, "ReleaseReservation")
    assert item.reason == f"{RELEASE_FAILED}: outcome unknown (attempt 1)"
    assert (item.status, item.outcome, item.resolved_by) == (
        ReconStatus.RESOLVED,
        ReconOutcome.APPLIED,
        AUTO_RESOLVER,
    )
    assert "find_reservation" in item.note
    assert item.evidence["last_error"]["error"] == "OutcomeUnknownError"
    assert item.evidence["failure"]["error"] == "BusinessRejectedError"  # why it unwound
    assert world.metrics.total(metric_names.COMPENSATION_FAILED) == 0
    assert world.metrics.total(metric_names.RECONCILIATION_OPENED) == 0
    assert world.notifier.notices == []
    # Asked again (a retried invocation): the same answer, nothing new.
    assert world.run("Reconcile", compensation_failed_event(original)) == {
        "outcome": "applied",
        "item_id": None,  # the record is COMPLETED now
    }
    replay = world.run("ReleaseReservation", compensation_event(original))
    assert replay["replayed"] is True
    assert len(world.effects("release")) == 1


def test_a_release_proven_not_applied_runs_again_with_the_same_key(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("release", "timeout_before_effect", times=2)]})
    original = failed_release(world)
    assert world.effects("release") == []

    verdict = world.run("Reconcile", compensation_failed_event(original))

    assert verdict["outcome"] == "not_applied"
    assert world.ledger.get(RELEASE_KEY).status is Status.RELEASED
    item = world.ledger.get_item(verdict["item_id"])
    assert (item.outcome, item.resolved_by) == (ReconOutcome.NOT_APPLIED, AUTO_RESOLVER)
    assert "is still reserved" in item.note
    result = world.run("ReleaseReservation", compensation_event(original))
    assert (result["action_key"], result["replayed"]) == (RELEASE_KEY, False)
    assert len(world.effects("release")) == 1
    assert world.ledger.get(RELEASE_KEY).attempts == 2
    assert world.metrics.total(metric_names.COMPENSATION_FAILED) == 0


def test_an_undecidable_release_stays_open_once(make: WorldFactory) -> None:
    world = make(
        faults={
            "faults": [fault("release", "lose_response"), fault("find_reservation", "throttle")]
        }
    )
    original = failed_release(world)

    first = world.run("Reconcile", compensation_failed_event(original))
    again = world.run("Reconcile", compensation_failed_event(original))

    assert first == again
    assert first["outcome"] == "undecided"
    item = world.ledger.get_item(first["item_id"])
    assert (item.record_key, item.status) == (RELEASE_KEY, ReconStatus.OPEN)
    assert item.reason == f"{RELEASE_FAILED}: outcome unknown (attempt 1)"
    assert item.evidence["lookup"].startswith("failed:")
    assert world.metrics.total(metric_names.COMPENSATION_FAILED) == 1
    assert world.metrics.total(metric_names.RECONCILIATION_OPENED) == 1
    assert [(n.item_id, n.waiting) for n in world.notifier.notices] == [(item.item_id, False)]


def test_a_rejected_release_is_left_to_a_person(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("release", "reject")]})
    original = failed_release(world, BusinessRejectedError)

    verdict = world.run(
        "Reconcile", compensation_failed_event(original, error="BusinessRejectedError")
    )

    assert verdict["outcome"] == "undecided"
    item = world.ledger.get_item(verdict["item_id"])
    assert item.reason == f"{RELEASE_FAILED} (attempt 1)"
    assert item.evidence["record_status"] == "FAILED"
    assert world.effects("release") == []


def test_a_release_that_never_claimed_is_asked_about_itself(world: World) -> None:
    original = world.run("ReserveStock", step_event("ReserveStock"))

    verdict = world.run(
        "Reconcile", compensation_failed_event(original, error="Lambda.ServiceException")
    )

    assert verdict["outcome"] == "undecided"
    item = world.ledger.get_item(verdict["item_id"])
    assert (item.record_key, item.reason) == (RELEASE_KEY, f"{RELEASE_FAILED} (never claimed)")
    assert item.evidence["record_status"] is None
    assert world.ledger.get(RELEASE_KEY) is None


def test_a_released_release_runs_again_once_per_attempt(make: WorldFactory) -> None:
    """A compensation catches every error, some raised before its claim (a throttled
    Lambda): ``RELEASED`` says "not applied", but "run it again" is answered once per
    attempt, so a run that never reaches the ledger cannot send the case round forever."""
    world = make(faults={"faults": [fault("release", "throttle", times=2)]})
    original = failed_release(world, TransientError)  # attempt 1, RELEASED
    throttled = compensation_failed_event(original, error="TransientError")

    first = world.run("Reconcile", throttled)
    assert first["outcome"] == "not_applied"
    answered = world.ledger.get_item(first["item_id"])
    assert answered.reason == f"{RELEASE_FAILED} (attempt 1)"
    assert (answered.outcome, answered.resolved_by) == (ReconOutcome.NOT_APPLIED, AUTO_RESOLVER)
    assert world.ledger.get(RELEASE_KEY).status is Status.RELEASED  # unchanged

    # The release failed again before claiming (no attempt): a person decides.
    second = world.run("Reconcile", throttled)
    assert second["outcome"] == "undecided"
    item = world.ledger.get_item(second["item_id"])
    assert (item.reason, item.status) == (f"{RELEASE_FAILED} (attempt 1) (#2)", ReconStatus.OPEN)
    assert world.metrics.total(metric_names.COMPENSATION_FAILED) == 1

    # A new attempt that fails again is a new question.
    with pytest.raises(TransientError):
        world.run("ReleaseReservation", compensation_event(original))  # attempt 2
    assert world.run("Reconcile", throttled)["outcome"] == "not_applied"


def test_the_attempt_budget_bounds_the_rounds(make: WorldFactory) -> None:
    world = make(
        policy=LedgerPolicy(attempt_budget=2),
        faults={"faults": [fault("release", "timeout_before_effect")]},
    )
    original = failed_release(world)  # attempt 1: UNKNOWN
    assert world.run("Reconcile", compensation_failed_event(original))["outcome"] == "not_applied"
    with pytest.raises(OutcomeUnknownError):
        world.run("ReleaseReservation", compensation_event(original))  # attempt 2: UNKNOWN

    verdict = world.run("Reconcile", compensation_failed_event(original))

    # Still held, but every attempt is used: "not applied" would grant one past the
    # budget, and only a person grants that.
    assert verdict["outcome"] == "undecided"
    item = world.ledger.get_item(verdict["item_id"])
    assert item.reason == f"{RELEASE_FAILED}: outcome unknown (attempt 2)"
    assert "every attempt" in item.evidence["lookup"]
    assert world.ledger.get(RELEASE_KEY).status is Status.UNKNOWN
    assert world.effects("release") == []


def test_a_refused_claim_at_the_attempt_budget_is_left_to_a_person(make: WorldFactory) -> None:
    world = make(
        policy=LedgerPolicy(attempt_budget=1),
        faults={"faults": [fault("release", "throttle")]},
    )
    original = failed_release(world, TransientError)  # attempt 1 of 1, RELEASED
    throttled = compensation_failed_event(original, error="TransientError")
    assert world.run("Reconcile", throttled)["outcome"] == "undecided"
    with pytest.raises(AttemptBudgetExhaustedError):
        world.run("ReleaseReservation", compensation_event(original))

    verdict = world.run(
        "Reconcile", compensation_failed_event(original, error="AttemptBudgetExhaustedError")
    )

    assert verdict["outcome"] == "undecided"
    item = world.ledger.get_item(verdict["item_id"])
    assert item.reason == f"{RELEASE_FAILED}: attempt budget exhausted (attempt 1)"


# --- waiting for a person -----------------------------------------------------------------


def open_item(make: WorldFactory, **options: Any) -> tuple[World, str]:
    world = make(
        faults={
            "faults": [
                fault("refund", "lose_response"),
                fault("find_refund_by_key", "throttle", times=1),
            ]
        },
        **options,
    )
    unknown_refund(world)
    verdict = world.run("Reconcile", reconcile_event("RefundPayment"))
    assert verdict["outcome"] == "undecided"
    return world, verdict["item_id"]


def test_await_attaches_the_token_and_notifies_once(make: WorldFactory) -> None:
    world, item_id = open_item(make, callbacks=False)

    world.run("Reconcile", await_event("RefundPayment", item_id, token="tok-1"))
    world.run("Reconcile", await_event("RefundPayment", item_id, token="tok-1"))

    item = world.ledger.get_item(item_id)
    assert item.task_token == "tok-1"
    assert item.status is ReconStatus.OPEN
    assert len(world.notifier.notices) == 1
    notice = world.notifier.notices[0]
    assert (notice.item_id, notice.waiting, notice.action_key) == (item_id, True, REFUND_KEY)


def test_await_second_look_decides_and_resumes(make: WorldFactory) -> None:
    world, item_id = open_item(make)  # the lookup failed once; now it works

    world.run("Reconcile", await_event("RefundPayment", item_id, token="tok-1"))

    item = world.ledger.get_item(item_id)
    assert item.status is ReconStatus.RESOLVED
    assert item.resolved_by == AUTO_RESOLVER
    assert world.sent.calls == [
        (
            "tok-1",
            {
                "outcome": "applied",
                "item_id": item_id,
                "decided_by": AUTO_RESOLVER,
                "note": item.note,
            },
        )
    ]


def test_await_on_an_item_resolved_meanwhile_resumes_at_once(make: WorldFactory) -> None:
    world, item_id = open_item(make)
    resolve(world.ledger, item_id, "applied", "ops@acme", "seen in the PSP", send_task_success=None)

    world.run("Reconcile", await_event("RefundPayment", item_id, token="tok-9"))

    assert [(token, out["outcome"]) for token, out in world.sent.calls] == [("tok-9", "applied")]


def test_await_refuses_an_item_of_another_case(make: WorldFactory) -> None:
    world, item_id = open_item(make)
    other = case_input(case_id="CASE-2002")
    with pytest.raises(InvalidInputError) as caught:
        world.run("Reconcile", await_event("RefundPayment", item_id, case=other))
    assert caught.value.data["field"] == "item_id"
    with pytest.raises(InvalidInputError):
        world.run("Reconcile", await_event("RefundPayment", None))
    with pytest.raises(InvalidInputError):
        world.run("Reconcile", await_event("RefundPayment", "rec-nothing"))
    assert world.ledger.get_item(item_id).task_token is None
