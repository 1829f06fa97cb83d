"""Dual control and audit records, on both stores: a person's ``not_applied`` on a
dual-control item needs two different people; every resolution writes its audit record in
its own transaction; two first approvals racing never both count as first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga._reconciliation import resolve
from stepsaga._util.clock import ManualClock
from stepsaga.backends import ReconOutcome
from stepsaga.errors import IllegalTransitionError, InvalidInputError
from stepsaga.ledger import Ledger, ReconItem, Status
from stepsaga.ledger._models import Claim, ReconStatus
from stepsaga.ledger._store import ForwardingStore, ItemWrite, LedgerStore
from tests.framework.conformance.ledger.conftest import StoreFactory
from tests.framework.conformance.ledger.helpers import make_action

Hook = Callable[[], Any]


class BeforeFirstApproval(ForwardingStore):
    """Runs ``hook`` once, just before the wrapped first-approval write: another person
    approving between this ledger's read and its conditional write."""

    def __init__(self, inner: LedgerStore, hook: Hook) -> None:
        super().__init__(inner)
        self._hook: Hook | None = hook

    def put_first_approval(self, item: ReconItem) -> ItemWrite:
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        return super().put_first_approval(item)


def refund_item(ledger: Ledger, *, dual_control: bool = True, cost: int = 4) -> ReconItem:
    """A refund whose outcome is unknown (debit held), and its open item."""
    ledger.set_budget("acme", 10)
    action = make_action(effect=EffectClass.KEYED_WRITE, cost=cost)
    claim = ledger.claim(action)
    assert isinstance(claim, Claim)
    ledger.mark_unknown(claim, "reply lost")
    return ledger.open_item(
        action.key,
        "outcome unknown",
        step="RefundPayment",
        evidence={"error": "timeout"},
        dual_control=dual_control,
    )


def _unchanged(ledger: Ledger, item: ReconItem) -> None:
    stored = ledger.get_item(item.item_id)
    assert stored is not None
    assert stored.status is ReconStatus.OPEN
    record = ledger.get(item.record_key)
    assert record is not None
    assert record.status is Status.UNKNOWN
    assert ledger.budget("acme") == 6  # the debit is still held
    assert ledger.get_audit(item.item_id) is None


def test_the_first_not_applied_is_recorded_and_leaves_the_item_open(
    ledger: Ledger, clock: ManualClock
) -> None:
    item = refund_item(ledger)
    assert item.dual_control is True

    first, written = ledger.decide_item(item.item_id, "not_applied", "ann@acme", "no refund")

    assert written is True
    assert first.awaiting_second_approver is True
    assert first.first_approval is not None
    assert (first.first_approval.by, first.first_approval.note) == ("ann@acme", "no refund")
    assert first.first_approval.at == clock.now()
    assert ledger.get_item(item.item_id) == first
    _unchanged(ledger, item)


def test_a_second_person_resolves_it_with_both_in_the_audit_record(
    ledger: Ledger, clock: ManualClock
) -> None:
    item = refund_item(ledger)
    ledger.decide_item(item.item_id, "not_applied", "ann@acme", "no refund")
    clock.advance(60)

    resolved, written = ledger.decide_item(
        item.item_id,
        "not_applied",
        "bob@acme",
        "PSP confirms",
        identity={"caller_arn": "arn:aws:sts::1:assumed-role/Ops/bob"},
    )

    assert written is True
    assert (resolved.status, resolved.outcome, resolved.resolved_by) == (
        ReconStatus.RESOLVED,
        ReconOutcome.NOT_APPLIED,
        "bob@acme",
    )
    record = ledger.get(item.record_key)
    assert record is not None
    assert record.status is Status.RELEASED
    assert ledger.budget("acme") == 10  # refunded once
    audit = ledger.get_audit(item.item_id)
    assert audit is not None
    assert [(d.by, d.note) for d in audit.deciders] == [
        ("ann@acme", "no refund"),
        ("bob@acme", "PSP confirms"),
    ]
    assert (audit.outcome, audit.resolved_by, audit.at) == (
        ReconOutcome.NOT_APPLIED,
        "bob@acme",
        clock.now(),
    )
    assert dict(audit.identity) == {"caller_arn": "arn:aws:sts::1:assumed-role/Ops/bob"}
    assert (audit.action_key, audit.step, audit.case_id) == (
        item.record_key,
        "RefundPayment",
        "CASE-1001",
    )


@pytest.mark.parametrize(
    "again",
    [
        "ann@acme",
        " ANN@acme ",
        "\uff41nn@acme",  # full-width a
        "\u0430nn@acme",  # Cyrillic a
        "ann@acme.",  # the DNS root dot
        "an\u200bn@acme",  # a zero-width space inside
    ],
)
def test_the_same_person_twice_is_refused_and_changes_nothing(ledger: Ledger, again: str) -> None:
    item = refund_item(ledger)
    first, _ = ledger.decide_item(item.item_id, "not_applied", "ann@acme", "no refund")

    with pytest.raises(IllegalTransitionError, match="needs a second approver: ann@acme"):
        ledger.decide_item(item.item_id, "not_applied", again, "still none")

    assert ledger.get_item(item.item_id) == first
    _unchanged(ledger, item)


def test_another_person_answering_applied_is_a_disagreement(ledger: Ledger) -> None:
    item = refund_item(ledger)
    first, _ = ledger.decide_item(item.item_id, "not_applied", "ann@acme", "no refund")

    with pytest.raises(IllegalTransitionError) as refused:
        ledger.decide_item(item.item_id, "applied", "bob@acme", "PSP shows RF-9")

    message = refused.value.message
    assert "ann@acme said not_applied ('no refund')" in message
    assert "bob@acme says applied ('PSP shows RF-9')" in message
    assert "\n" not in message
    assert ledger.get_item(item.item_id) == first
    _unchanged(ledger, item)


def test_applied_needs_one_person_also_the_first_approver_changing_their_mind(
    ledger: Ledger,
) -> None:
    item = refund_item(ledger)
    resolved, _ = ledger.decide_item(item.item_id, "applied", "bob@acme", "PSP shows it")
    assert resolved.status is ReconStatus.RESOLVED
    audit = ledger.get_audit(item.item_id)
    assert audit is not None
    assert [d.by for d in audit.deciders] == ["bob@acme"]

    other = refund_item_for(ledger, "CASE-1002")
    ledger.decide_item(other.item_id, "not_applied", "ann@acme", "no refund")
    changed, _ = ledger.decide_item(other.item_id, "applied", "ann@acme", "found it after all")
    assert (changed.status, changed.outcome) == (ReconStatus.RESOLVED, ReconOutcome.APPLIED)
    later = ledger.get_audit(other.item_id)
    assert later is not None
    assert [d.note for d in later.deciders] == ["found it after all"]


def refund_item_for(ledger: Ledger, case: str) -> ReconItem:
    action = make_action(case=case)
    claim = ledger.claim(action)
    assert isinstance(claim, Claim)
    ledger.mark_unknown(claim, "reply lost")
    return ledger.open_item(
        action.key, "outcome unknown", step="RefundPayment", evidence={}, dual_control=True
    )


def test_without_dual_control_one_call_resolves_and_writes_the_audit(ledger: Ledger) -> None:
    item = refund_item(ledger, dual_control=False)
    resolved, _ = ledger.decide_item(item.item_id, "not_applied", "ann@acme", "no refund")
    assert resolved.status is ReconStatus.RESOLVED
    audit = ledger.get_audit(item.item_id)
    assert audit is not None
    assert [d.by for d in audit.deciders] == ["ann@acme"]
    # Resolving again the same way writes nothing more.
    assert ledger.decide_item(item.item_id, "not_applied", "bob@acme", "again")[1] is False
    assert ledger.get_audit(item.item_id) == audit


def test_automatic_reconciliation_is_not_held_to_dual_control(ledger: Ledger) -> None:
    item = refund_item(ledger)
    resolution = resolve(
        ledger,
        item.item_id,
        "not_applied",
        "stepsaga:auto",
        "absent downstream",
        send_task_success=None,
        automatic=True,
    )
    assert resolution.item.status is ReconStatus.RESOLVED
    assert resolution.awaiting_second_approver is False


def test_a_first_approval_resumes_no_waiting_case(ledger: Ledger) -> None:
    item = refund_item(ledger)
    ledger.attach_task_token(item.item_id, "tok-1")
    sent: list[str] = []

    def send(token: str, output: dict[str, Any]) -> None:
        sent.append(token)

    first = resolve(ledger, item.item_id, "not-applied", "ann@acme", "none", send_task_success=send)
    assert (first.awaiting_second_approver, first.resumed, sent) == (True, False, [])
    second = resolve(ledger, item.item_id, "not-applied", "bob@acme", "ok", send_task_success=send)
    assert (second.awaiting_second_approver, second.resumed, sent) == (False, True, ["tok-1"])


# --- races --------------------------------------------------------------------------------


def test_two_first_approvals_racing_count_once_as_first(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    """Bob approves between Ann's read and her write: Ann's write must not overwrite Bob's
    first approval; read again, hers is the second approval of another person."""
    bob = Ledger(make_store(), clock=clock)
    item = refund_item(bob)
    ann = Ledger(
        BeforeFirstApproval(
            make_store(),
            lambda: bob.decide_item(item.item_id, "not_applied", "bob@acme", "bob first"),
        ),
        clock=clock,
    )

    resolved, written = ann.decide_item(item.item_id, "not_applied", "ann@acme", "ann too")

    assert written is True
    assert resolved.status is ReconStatus.RESOLVED
    audit = bob.get_audit(item.item_id)
    assert audit is not None
    assert [d.by for d in audit.deciders] == ["bob@acme", "ann@acme"]
    assert bob.budget("acme") == 10  # refunded once


def test_the_same_person_racing_themselves_counts_once(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    """A double click: the second request finds the first's approval and is refused."""
    first = Ledger(make_store(), clock=clock)
    item = refund_item(first)
    again = Ledger(
        BeforeFirstApproval(
            make_store(),
            lambda: first.decide_item(item.item_id, "not_applied", "ann@acme", "one"),
        ),
        clock=clock,
    )

    with pytest.raises(IllegalTransitionError, match="needs a second approver"):
        again.decide_item(item.item_id, "not_applied", "ann@acme", "two")

    stored = first.get_item(item.item_id)
    assert stored is not None
    assert stored.first_approval is not None
    assert (stored.status, stored.first_approval.note) == (ReconStatus.OPEN, "one")
    assert first.get_audit(item.item_id) is None


def test_first_approvals_from_threads_never_both_count_as_first(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    setup = Ledger(make_store(), clock=clock)
    item = refund_item(setup)
    people = ["ann@acme", "bob@acme"]
    ledgers = [Ledger(make_store(), clock=clock) for _ in people]
    barrier = threading.Barrier(len(people))
    results: dict[str, ReconItem] = {}

    def approve(ledger: Ledger, person: str) -> None:
        barrier.wait()
        results[person] = ledger.decide_item(item.item_id, "not_applied", person, "none")[0]

    threads = [
        threading.Thread(target=approve, args=pair) for pair in zip(ledgers, people, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    statuses = sorted(r.status.value for r in results.values())
    assert statuses == ["OPEN", "RESOLVED"]  # one first, one second: never two firsts
    audit = setup.get_audit(item.item_id)
    assert audit is not None
    assert sorted(d.by for d in audit.deciders) == people
    assert audit.deciders[0].by != audit.deciders[1].by
    assert setup.budget("acme") == 10


def test_a_token_attached_while_a_first_approval_lands_keeps_the_approval(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    """The case starts waiting (attach) while Ann approves: attach reads again instead of
    writing the item it read, without her approval, over it."""
    ann = Ledger(make_store(), clock=clock)
    item = refund_item(ann)

    class ApproveBeforeAttach(ForwardingStore):
        hook: Hook | None = None

        def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
            hook, self.hook = self.hook, None
            if hook is not None:
                hook()
            return super().put_item(item, expect=expect)

    store = ApproveBeforeAttach(make_store())
    store.hook = lambda: ann.decide_item(item.item_id, "not_applied", "ann@acme", "none")
    waiting = Ledger(store, clock=clock)

    attached = waiting.attach_task_token(item.item_id, "tok-1")

    assert attached.task_token == "tok-1"
    assert attached.first_approval is not None
    assert attached.first_approval.by == "ann@acme"
    stored = ann.get_item(item.item_id)
    assert stored == attached


@pytest.mark.parametrize("note", ["ok\nforged audit line", "x" * 1001, "\u202eevil", ""])
def test_a_persons_note_is_held_to_the_stop_note_rule_by_the_ledger(
    ledger: Ledger, note: str
) -> None:
    """Every door (CLI, console, server-side resolver) reaches ``decide_item``: it refuses a
    note ``stop --note`` would refuse, and writes nothing."""
    item = refund_item(ledger)
    with pytest.raises(InvalidInputError, match=r"^note: "):
        ledger.decide_item(item.item_id, "applied", "ann@acme", note)
    assert ledger.get_item(item.item_id) == item
    _unchanged(ledger, item)
