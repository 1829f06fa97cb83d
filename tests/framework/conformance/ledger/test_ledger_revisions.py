"""Revisions supersede (docs/explanation/design.md), on SQLite and DynamoDB: a later revision's step
reads the latest earlier revision's record for the same operation before its first claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepsaga.backends import ReconOutcome
from stepsaga.errors import OutcomeUnknownError, RevisionSupersededError
from stepsaga.ledger import Ledger, Record, Status
from stepsaga.ledger._models import Claim, ReconStatus, Replay
from stepsaga.ledger._store import ForwardingStore
from tests.framework.conformance.ledger.conftest import LedgerFactory
from tests.framework.conformance.ledger.helpers import Counter, make_action

REFUND = {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"}


def _complete(ledger: Ledger, revision: int, params: dict[str, str] | None = None) -> None:
    granted = ledger.claim(make_action(revision=revision, params=params or REFUND))
    assert isinstance(granted, Claim)
    ledger.complete(granted, {"refund_id": f"RF-{revision}"}, reference=f"RF-{revision}")


def test_a_first_revision_claims_as_before(ledger: Ledger) -> None:
    assert isinstance(ledger.claim(make_action(revision=1)), Claim)


def test_the_same_applied_effect_is_adopted_not_repeated(ledger: Ledger) -> None:
    _complete(ledger, 1)
    effect = Counter()
    # "20" and "20.00" USD are one amount: the same terms, whatever the approval time says.
    result = ledger.perform(make_action(revision=2, params={**REFUND, "amount": "20"}), effect)
    assert effect.calls == 0
    assert result == {"refund_id": "RF-1"}
    record = ledger.get(make_action(revision=2).key)
    assert record is not None
    assert record.status is Status.COMPLETED
    assert record.reference == "RF-1"
    assert record.attempts == 0
    assert record.terms is not None
    assert record.terms["adopted_from"].endswith(":r1:refund_payment")


def test_a_changed_applied_effect_goes_to_a_person_naming_the_change(ledger: Ledger) -> None:
    _complete(ledger, 1)
    changed = make_action(revision=2, params={**REFUND, "amount": "25.00"})
    with pytest.raises(OutcomeUnknownError) as raised:
        ledger.claim(changed)
    assert raised.value.message == (
        "revision 2 changes refund_payment already applied under revision 1: "
        "amount 20.00 → 25.00 USD"
    )
    record = ledger.get(changed.key)
    assert record is not None
    assert record.status is Status.UNKNOWN
    assert record.error is not None
    assert record.error["supersedes"].endswith(":r1:refund_payment")
    with pytest.raises(OutcomeUnknownError):  # and it stays so until a person decides
        ledger.claim(changed)


@pytest.mark.parametrize("status", ["FAILED", "RELEASED"])
def test_an_earlier_effect_that_did_not_happen_is_performed(ledger: Ledger, status: str) -> None:
    granted = ledger.claim(make_action(revision=1))
    assert isinstance(granted, Claim)
    if status == "FAILED":
        ledger.fail(granted, {"error": "BusinessRejectedError", "message": "no"})
    else:
        ledger.release(granted, "throttled before sending")
    assert isinstance(ledger.claim(make_action(revision=2)), Claim)


@pytest.mark.parametrize("status", ["IN_PROGRESS", "UNKNOWN"])
def test_an_uncertain_earlier_effect_goes_to_a_person(ledger: Ledger, status: str) -> None:
    granted = ledger.claim(make_action(revision=1))
    assert isinstance(granted, Claim)
    if status == "UNKNOWN":
        ledger.mark_unknown(granted, "reply lost")
    with pytest.raises(OutcomeUnknownError, match=f"under revision 1 is {status}"):
        ledger.claim(make_action(revision=2))


def test_the_latest_earlier_revision_decides(ledger: Ledger) -> None:
    _complete(ledger, 1)
    raised = make_action(revision=3, params={**REFUND, "amount": "25.00"})
    with pytest.raises(OutcomeUnknownError):
        ledger.claim(raised)
    item = ledger.open_item(raised.key, "revision conflict", step="RefundPayment", evidence={})
    ledger.resolve_item(item.item_id, ReconOutcome.NOT_APPLIED, "ops@acme.example", "go")
    _complete(ledger, 3, {**REFUND, "amount": "25.00"})
    granted = ledger.claim(make_action(revision=5, params={**REFUND, "amount": "25.00"}))
    assert isinstance(granted, Replay)
    assert granted.result == {"refund_id": "RF-3"}


def test_an_undone_earlier_effect_is_performed_again(ledger: Ledger) -> None:
    _complete(ledger, 1)
    first = make_action(revision=1)
    undo = ledger.claim(first.compensation("cancel_refund"))
    assert isinstance(undo, Claim)
    ledger.complete(undo, {"cancelled": True})
    assert isinstance(ledger.claim(make_action(revision=2), undo="cancel_refund"), Claim)


def test_an_earlier_effect_whose_undo_is_uncertain_goes_to_a_person(ledger: Ledger) -> None:
    _complete(ledger, 1)
    undo = ledger.claim(make_action(revision=1).compensation("cancel_refund"))
    assert isinstance(undo, Claim)
    ledger.mark_unknown(undo, "reply lost")
    with pytest.raises(OutcomeUnknownError, match="whose undo is UNKNOWN"):
        ledger.claim(make_action(revision=2), undo="cancel_refund")


@pytest.mark.parametrize(
    ("outcome", "claimable"), [(ReconOutcome.APPLIED, False), (ReconOutcome.NOT_APPLIED, True)]
)
def test_a_persons_decision_settles_the_conflict(
    ledger: Ledger, outcome: ReconOutcome, claimable: bool
) -> None:
    _complete(ledger, 1)
    changed = make_action(revision=2, params={**REFUND, "amount": "25.00"})
    with pytest.raises(OutcomeUnknownError):
        ledger.claim(changed)
    item = ledger.open_item(
        changed.key, "revision conflict (attempt 0)", step="RefundPayment", evidence={}
    )
    ledger.resolve_item(item.item_id, outcome, "ops@acme.example", "checked with payments")
    granted = ledger.claim(changed)
    if claimable:  # performed as revision 2 approved it
        assert isinstance(granted, Claim)
        assert granted.attempt == 1
    else:  # revision 1's refund stands for revision 2, with its result
        assert isinstance(granted, Replay)
        assert granted.result == {"refund_id": "RF-1"}


def test_a_ledger_written_before_terms_is_migrated_and_keeps_its_records(tmp_path: Path) -> None:
    import sqlite3

    from stepsaga.ledger import open_ledger

    path = tmp_path / "old.sqlite3"
    with open_ledger(f"sqlite:///{path}") as ledger:
        granted = ledger.claim(make_action(revision=1))
        assert isinstance(granted, Claim)
        ledger.complete(granted, {"refund_id": "RF-1"})
    conn = sqlite3.connect(path)  # back to schema 1: no terms column, no dual control
    conn.execute("ALTER TABLE actions DROP COLUMN terms")
    conn.execute("ALTER TABLE recon_items DROP COLUMN dual_control")
    conn.execute("ALTER TABLE recon_items DROP COLUMN first_approval")
    conn.execute("DROP TABLE audit")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with open_ledger(f"sqlite:///{path}") as ledger:
        record = ledger.get(make_action(revision=1).key)
        assert record is not None
        assert record.status is Status.COMPLETED
        # An old record carries no terms: a later revision cannot compare, so a person does.
        with pytest.raises(OutcomeUnknownError, match="terms were not recorded"):
            ledger.claim(make_action(revision=2))


# --- the ledger's own half: no earlier revision acts once a later one has ----------------


def test_once_a_later_revision_claimed_no_earlier_revision_acts(ledger: Ledger) -> None:
    earlier = ledger.claim(make_action("reserve_stock", revision=1))
    assert isinstance(earlier, Claim)
    ledger.release(earlier, "throttled before sending")
    later = ledger.claim(make_action("create_shipment", revision=2))
    assert isinstance(later, Claim)

    refund = make_action(revision=1)  # never claimed: refused, nothing written
    with pytest.raises(RevisionSupersededError, match="revision 2 of case CASE-1001") as raised:
        ledger.claim(refund)
    assert raised.value.data["latest_revision"] == 2
    assert ledger.get(refund.key) is None
    with pytest.raises(RevisionSupersededError):  # a released claim is not taken again
        ledger.claim(make_action("reserve_stock", revision=1))
    undo = make_action("reserve_stock:compensate:release_stock", revision=1)
    with pytest.raises(RevisionSupersededError):  # nor is revision 1's effect undone
        ledger.claim(undo)
    effect = Counter()
    with pytest.raises(RevisionSupersededError):
        ledger.perform(make_action("notify", revision=1), effect)
    assert effect.calls == 0
    # The same and later revisions act as usual; another case is not concerned.
    assert isinstance(ledger.claim(make_action(revision=2)), Claim)
    assert isinstance(ledger.claim(make_action("notify", revision=3)), Claim)
    assert isinstance(ledger.claim(make_action(case="CASE-2002", revision=1)), Claim)


def test_an_earlier_claim_already_made_still_records_its_outcome(ledger: Ledger) -> None:
    earlier = ledger.claim(make_action(revision=1))
    assert isinstance(earlier, Claim)
    with pytest.raises(OutcomeUnknownError, match="under revision 1 is IN_PROGRESS"):
        ledger.claim(make_action(revision=2))  # acts (questions revision 1's effect)
    done = ledger.complete(earlier, {"refund_id": "RF-1"})  # dispatched: it must be known
    assert done.status is Status.COMPLETED
    with pytest.raises(RevisionSupersededError):
        ledger.claim(make_action("create_shipment", revision=1))


def test_an_earlier_revision_cannot_claim_between_a_later_ones_read_and_claim(
    ledger: Ledger, make_ledger: LedgerFactory
) -> None:
    """Revision 2 reads revision 1's (absent) record, then revision 1 tries to claim it
    before revision 2 does: without the latest-revision item both would perform."""
    other = make_ledger()
    refused: list[BaseException] = []

    class Interleaved(ForwardingStore):
        def get(self, key: str) -> Record | None:
            found = super().get(key)
            if key == make_action(revision=1).key and not refused:
                try:
                    other.claim(make_action(revision=1))
                except RevisionSupersededError as exc:
                    refused.append(exc)
            return found

    racing = Ledger(Interleaved(ledger._store), clock=ledger.clock)
    assert isinstance(racing.claim(make_action(revision=2)), Claim)
    assert len(refused) == 1
    assert ledger.get(make_action(revision=1).key) is None  # one refund, not two


@pytest.mark.parametrize(
    ("outcome", "earlier_status"),
    [(ReconOutcome.APPLIED, Status.COMPLETED), (ReconOutcome.NOT_APPLIED, Status.RELEASED)],
)
def test_settling_the_later_revisions_item_closes_the_earlier_ones_with_a_pointer(
    ledger: Ledger, outcome: ReconOutcome, earlier_status: Status
) -> None:
    first = ledger.claim(make_action(revision=1))
    assert isinstance(first, Claim)
    ledger.mark_unknown(first, "reply lost")
    asked = ledger.open_item(
        first.key,
        "outcome unknown (attempt 1)",
        step="RefundPayment",
        evidence={},
        dual_control=True,
    )
    later = make_action(revision=2)
    with pytest.raises(OutcomeUnknownError):  # the same question, asked again by revision 2
        ledger.claim(later)
    item = ledger.open_item(later.key, "revision conflict", step="RefundPayment", evidence={})
    other = ledger.open_item(  # another case's item is not concerned
        ledger.claim(make_action(case="CASE-2002")).key,  # type: ignore[union-attr]
        "outcome unknown (attempt 1)",
        step="RefundPayment",
        evidence={},
    )

    ledger.resolve_item(item.item_id, outcome, "ops@acme.example", "checked with payments")

    closed = ledger.get_item(asked.item_id)
    assert closed is not None
    assert closed.status is ReconStatus.RESOLVED
    assert closed.outcome is outcome
    assert closed.note is not None
    assert closed.note.startswith(
        f"settled by revision 2 (item {item.item_id}, {outcome.value} by ops@acme.example)"
    )
    record = ledger.get(first.key)
    assert record is not None
    assert record.status is earlier_status
    audit = ledger.get_audit(asked.item_id)
    assert audit is not None
    assert [d.by for d in audit.deciders] == ["ops@acme.example"]
    untouched = ledger.get_item(other.item_id)
    assert untouched is not None
    assert untouched.status is ReconStatus.OPEN
