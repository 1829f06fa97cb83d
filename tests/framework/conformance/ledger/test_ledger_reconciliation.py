"""Reconciliation items: the only way out of UNKNOWN, resolved together with the record."""

from __future__ import annotations

import pytest

from stepsaga import EffectClass
from stepsaga._util.clock import ManualClock
from stepsaga.backends import ReconOutcome
from stepsaga.errors import (
    AttemptBudgetExhaustedError,
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
)
from stepsaga.ledger import Ledger, LedgerPolicy, ReconItem, Status
from stepsaga.ledger._models import Claim, ReconStatus
from tests.framework.conformance.ledger.conftest import LedgerFactory
from tests.framework.conformance.ledger.helpers import Counter, Recorder, make_action


def unknown_action(ledger: Ledger, cost: int | None = None) -> str:
    action = make_action("create_shipment", effect=EffectClass.PHYSICAL, cost=cost)
    claim = ledger.claim(action)
    assert isinstance(claim, Claim)
    ledger.mark_unknown(claim, "timeout after dispatch")
    return action.key


def open_item(ledger: Ledger, key: str, reason: str = "outcome unknown") -> ReconItem:
    return ledger.open_item(key, reason, step="CreateShipment", evidence={"error": "timeout"})


def test_open_item_is_idempotent_per_key_and_reason(ledger: Ledger) -> None:
    key = unknown_action(ledger)
    first = open_item(ledger, key)
    again = open_item(ledger, key)
    other = open_item(ledger, key, reason="attempt budget exhausted")

    assert first == again
    assert other.item_id != first.item_id
    assert first.status is ReconStatus.OPEN
    assert (first.tenant_id, first.case_id, first.step) == ("acme", "CASE-1001", "CreateShipment")
    assert first.evidence == {"error": "timeout"}
    assert ledger.get_item(first.item_id) == first


def test_open_item_needs_a_record(ledger: Ledger) -> None:
    with pytest.raises(NotFoundError):
        open_item(ledger, "acme:CASE-9:r1:nothing")


def test_list_items_by_tenant_and_status(ledger: Ledger, clock: ManualClock) -> None:
    key = unknown_action(ledger)
    first = open_item(ledger, key)
    clock.advance(1)
    second = open_item(ledger, key, reason="second look")
    ledger.resolve_item(second.item_id, ReconOutcome.APPLIED, by="ops@acme", note="carrier ok")

    assert [i.item_id for i in ledger.list_items(tenant="acme", status="open")] == [first.item_id]
    assert [i.item_id for i in ledger.list_items(status=ReconStatus.RESOLVED)] == [second.item_id]
    assert [i.item_id for i in ledger.list_items()] == [first.item_id, second.item_id]
    assert ledger.list_items(tenant="globex", status=ReconStatus.OPEN) == []
    with pytest.raises(InvalidInputError):
        ledger.list_items(status="CLOSED")


def test_applied_completes_the_record_and_replays_the_result(ledger: Ledger) -> None:
    key = unknown_action(ledger)
    item = open_item(ledger, key)

    resolved = ledger.resolve_item(
        item.item_id,
        ReconOutcome.APPLIED,
        by="ops@acme",
        note="carrier shows label",
        result={"shipment_id": "SHP-1"},
    )

    assert resolved.status is ReconStatus.RESOLVED
    assert resolved.outcome is ReconOutcome.APPLIED
    assert (resolved.resolved_by, resolved.note) == ("ops@acme", "carrier shows label")
    record = ledger.get(key)
    assert record is not None
    assert record.status is Status.COMPLETED
    fn = Counter()
    action = make_action("create_shipment", effect=EffectClass.PHYSICAL)
    assert ledger.perform(action, fn) == {"shipment_id": "SHP-1"}
    assert fn.calls == 0


def test_not_applied_releases_refunds_and_allows_another_attempt(ledger: Ledger) -> None:
    ledger.set_budget("acme", 10)
    key = unknown_action(ledger, cost=4)
    assert ledger.budget("acme") == 6
    item = open_item(ledger, key)

    ledger.resolve_item(item.item_id, "not_applied", by="ops@acme", note="no label exists")

    record = ledger.get(key)
    assert record is not None
    assert record.status is Status.RELEASED
    assert ledger.budget("acme") == 10
    fn = Recorder({"shipment_id": "S-2"})
    ledger.perform(make_action("create_shipment", effect=EffectClass.PHYSICAL, cost=4), fn)
    assert fn.attempts == [2]
    assert ledger.budget("acme") == 6


def test_resolving_twice(ledger: Ledger) -> None:
    item = open_item(ledger, unknown_action(ledger))
    first = ledger.resolve_item(item.item_id, ReconOutcome.APPLIED, by="a", note="seen")
    assert ledger.resolve_item(item.item_id, ReconOutcome.APPLIED, by="a", note="seen") == first
    with pytest.raises(IllegalTransitionError):
        ledger.resolve_item(item.item_id, ReconOutcome.NOT_APPLIED, by="b", note="not seen")


def test_a_resolution_must_not_contradict_a_final_record(ledger: Ledger) -> None:
    action = make_action()
    ledger.perform(action, Counter())
    item = open_item(ledger, action.key, reason="customer complaint")
    with pytest.raises(IllegalTransitionError):
        ledger.resolve_item(item.item_id, ReconOutcome.NOT_APPLIED, by="ops", note="?")
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.COMPLETED
    resolved = ledger.resolve_item(item.item_id, ReconOutcome.APPLIED, by="ops", note="ok")
    assert resolved.status is ReconStatus.RESOLVED


def test_a_live_claim_cannot_be_resolved(ledger: Ledger) -> None:
    action = make_action()
    assert isinstance(ledger.claim(action), Claim)
    item = open_item(ledger, action.key, reason="slow")
    with pytest.raises(IllegalTransitionError):
        ledger.resolve_item(item.item_id, ReconOutcome.APPLIED, by="ops", note="?")


def test_stale_in_progress_can_be_resolved_before_the_sweeper(
    ledger: Ledger, clock: ManualClock
) -> None:
    action = make_action("create_shipment", effect=EffectClass.PHYSICAL)
    assert isinstance(ledger.claim(action), Claim)
    clock.advance(120)
    item = open_item(ledger, action.key, reason="worker vanished")
    ledger.resolve_item(item.item_id, ReconOutcome.NOT_APPLIED, by="ops", note="nothing sent")
    record = ledger.get(action.key)
    assert record is not None
    assert record.status is Status.RELEASED


def test_task_tokens_attach_to_open_items(ledger: Ledger) -> None:
    item = open_item(ledger, unknown_action(ledger))
    attached = ledger.attach_task_token(item.item_id, "token-1")
    assert attached.task_token == "token-1"
    assert ledger.attach_task_token(item.item_id, "token-1") == attached
    got = ledger.get_item(item.item_id)
    assert got is not None
    assert got.task_token == "token-1"

    resolved = ledger.resolve_item(item.item_id, ReconOutcome.APPLIED, by="ops", note="ok")
    # Too late to wait: the resolved item comes back as it is, so the caller resumes at once.
    assert ledger.attach_task_token(item.item_id, "token-2") == resolved
    assert resolved.task_token == "token-1"


def test_unknown_items_and_bad_input(ledger: Ledger) -> None:
    with pytest.raises(NotFoundError):
        ledger.resolve_item("rec-missing", ReconOutcome.APPLIED, by="ops", note="?")
    with pytest.raises(NotFoundError):
        ledger.attach_task_token("rec-missing", "t")
    item = open_item(ledger, unknown_action(ledger))
    with pytest.raises(InvalidInputError):
        ledger.resolve_item(item.item_id, "maybe", by="ops", note="?")
    with pytest.raises(InvalidInputError):
        ledger.resolve_item(item.item_id, ReconOutcome.APPLIED, by="", note="?")


def test_not_applied_grants_an_exhausted_action_one_more_attempt(
    make_ledger: LedgerFactory,
) -> None:
    """A person who finds the effect absent means "run it again": with the lifetime attempt
    budget spent, that decision must grant an attempt, or the case loops forever between
    the refused claim and a new item (found by the chaos harness)."""
    ledger = make_ledger(LedgerPolicy(attempt_budget=2))
    action = make_action()
    for _ in range(2):
        claim = ledger.claim(action)
        assert isinstance(claim, Claim)
        ledger.release(claim, "throttled before dispatch")
    with pytest.raises(AttemptBudgetExhaustedError):
        ledger.claim(action)
    item = open_item(ledger, action.key, reason="attempt budget exhausted")

    ledger.resolve_item(item.item_id, ReconOutcome.NOT_APPLIED, by="ops", note="not there")

    claim = ledger.claim(action)
    assert isinstance(claim, Claim)
    ledger.release(claim, "throttled again")
    with pytest.raises(AttemptBudgetExhaustedError):  # one attempt per decision
        ledger.claim(action)


def test_not_applied_on_an_exhausted_unknown_action_grants_an_attempt(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger(LedgerPolicy(attempt_budget=1))
    action = make_action("create_shipment", effect=EffectClass.PHYSICAL)
    claim = ledger.claim(action)
    assert isinstance(claim, Claim)
    ledger.mark_unknown(claim, "timeout after dispatch")
    item = open_item(ledger, action.key)

    ledger.resolve_item(item.item_id, ReconOutcome.NOT_APPLIED, by="ops", note="not there")

    fn = Recorder({"shipment_id": "S-2"})
    assert ledger.perform(action, fn) == {"shipment_id": "S-2"}
    assert len(fn.attempts) == 1
