"""The audit chain's rules (``stepsaga.ledger._audit``): each break named, and only breaks."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends import ReconOutcome
from stepsaga.ledger._audit import BreakKind, genesis, seal, verify
from stepsaga.ledger._models import ReconStatus, ResolutionAudit, Signoff
from tests.framework.unit.ledger.test_approvals import AT, item

RESOLVED = replace(
    item(dual=False, first=None),
    status=ReconStatus.RESOLVED,
    outcome=ReconOutcome.APPLIED,
    resolved_by="ann@acme",
    resolved_at=AT,
)


def _audit(note: str = "label seen", by: str = "ann@acme") -> ResolutionAudit:
    return ResolutionAudit(
        item_id=RESOLVED.item_id,
        tenant_id="acme",
        case_id="CASE-1",
        step="RefundPayment",
        action_key=RESOLVED.record_key,
        outcome=ReconOutcome.APPLIED,
        deciders=(Signoff(by, AT, note),),
        at=AT,
    )


def _kinds(audit: ResolutionAudit | None, copy: ResolutionAudit | None = None) -> list[BreakKind]:
    copies = None if copy is None else (lambda _item_id: copy)
    return [b.kind for b in verify([(RESOLVED, audit)], copies)]


@given(st.text(min_size=1, max_size=40))
def test_a_sealed_record_verifies_and_any_other_note_breaks_it(note: str) -> None:
    sealed = seal(_audit())
    assert sealed.previous == genesis(RESOLVED.item_id)
    assert _kinds(sealed) == []
    changed = replace(sealed, deciders=(replace(sealed.deciders[0], note=note),))
    assert _kinds(changed) == ([] if note == "label seen" else [BreakKind.REWRITTEN])


def test_each_break_is_named() -> None:
    sealed = seal(_audit())
    assert _kinds(None) == [BreakKind.MISSING]
    assert _kinds(_audit()) == [BreakKind.UNSEALED]
    moved = seal(replace(_audit(), item_id="rec-2"))
    assert _kinds(replace(moved, item_id=RESOLVED.item_id)) == [BreakKind.UNCHAINED]
    assert _kinds(seal(_audit(by="mallory"))) == [BreakKind.CONTRADICTED]
    assert _kinds(seal(_audit(note="forged")), copy=sealed) == [BreakKind.DIFFERS]
    assert _kinds(sealed, copy=sealed) == []
    assert [b.kind for b in verify([(RESOLVED, sealed)], lambda _: None)] == [BreakKind.UNCOPIED]
    assert not next(iter(verify([(RESOLVED, _audit())]))).is_break  # unsealed: listed only
