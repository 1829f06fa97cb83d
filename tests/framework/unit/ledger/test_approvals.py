"""The dual-control rule (``stepsaga.ledger._approvals``): who may decide what, when."""

from __future__ import annotations

import sqlite3
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends import ReconOutcome
from stepsaga.ledger import ReconItem, open_ledger
from stepsaga.ledger._approvals import APPROVAL_RULES, ApprovalStep, Earlier, next_step, same_person
from stepsaga.ledger._models import ReconStatus, Signoff
from stepsaga.ledger._sqlite import SCHEMA_VERSION
from tests.framework.conformance.ledger.helpers import make_action

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
people = st.sampled_from(["ann@acme", "Ann@Acme", "bob@acme", "carol@acme"])
outcomes = st.sampled_from(list(ReconOutcome))


def item(*, dual: bool, first: str | None) -> ReconItem:
    return ReconItem(
        item_id="rec-1",
        record_key="acme:CASE-1:r1:refund_payment",
        tenant_id="acme",
        case_id="CASE-1",
        reason="outcome unknown",
        step="RefundPayment",
        evidence={},
        status=ReconStatus.OPEN,
        created_at=AT,
        updated_at=AT,
        dual_control=dual,
        first_approval=Signoff(first, AT, "first note") if first else None,
    )


def test_the_table_covers_every_case_once() -> None:
    assert set(APPROVAL_RULES) == {(o, e) for o in ReconOutcome for e in Earlier}


@given(outcome=outcomes, by=people, first=st.none() | people)
def test_without_dual_control_or_for_automatic_decisions_one_call_resolves(
    outcome: ReconOutcome, by: str, first: str | None
) -> None:
    assert (
        next_step(item(dual=False, first=None), outcome, by, automatic=False)
        is ApprovalStep.RESOLVE
    )
    dual = item(dual=True, first=first)
    assert next_step(dual, outcome, by, automatic=True) is ApprovalStep.RESOLVE


@given(outcome=outcomes, by=people, first=st.none() | people)
def test_not_applied_resolves_only_with_two_different_people(
    outcome: ReconOutcome, by: str, first: str | None
) -> None:
    step = next_step(item(dual=True, first=first), outcome, by, automatic=False)
    if outcome is ReconOutcome.NOT_APPLIED and step is ApprovalStep.RESOLVE:
        assert first is not None
        assert not same_person(first, by)
    if outcome is ReconOutcome.NOT_APPLIED and first is None:
        assert step is ApprovalStep.FIRST_APPROVAL


@given(by=people, first=st.none() | people)
def test_applied_needs_one_person_unless_another_said_not_applied(
    by: str, first: str | None
) -> None:
    step = next_step(item(dual=True, first=first), ReconOutcome.APPLIED, by, automatic=False)
    disagrees = first is not None and not same_person(first, by)
    assert step is (ApprovalStep.REFUSE_DISAGREEMENT if disagrees else ApprovalStep.RESOLVE)


def test_identities_compare_without_case_or_surrounding_space() -> None:
    assert same_person(" Ann@Acme ", "ann@acme")
    assert not same_person("ann@acme", "anne@acme")


@pytest.mark.parametrize(
    "look_alike",
    [
        "\uff4bim@acme.example",  # full-width k
        "\u043aim@acme.example",  # Cyrillic k
        "kim@acme.example.",  # the DNS root dot
        "KIM@ACME.EXAMPLE",
        "k\u0456m@acme.example",  # Cyrillic i
        "kim@\u0430cme.example",  # Cyrillic a in the domain
        "\U0001d424im@acme.example",  # mathematical bold k (NFKC)
    ],
)
def test_look_alike_identities_are_the_same_person(look_alike: str) -> None:
    assert same_person("kim@acme.example", look_alike)
    assert same_person(look_alike, "kim@acme.example")


@pytest.mark.parametrize("other", ["kim2@acme.example", "tim@acme.example", "kim@acme.exampl"])
def test_different_identities_stay_different(other: str) -> None:
    assert not same_person("kim@acme.example", other)


@given(st.text(min_size=1, max_size=30))
def test_an_identity_is_always_the_same_person_as_itself_and_its_nfkc_form(text: str) -> None:
    assert same_person(text, text)
    assert same_person(text, unicodedata.normalize("NFKC", text))


def test_a_schema_3_ledger_is_migrated_and_keeps_its_items(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with open_ledger(f"sqlite:///{path}") as ledger:
        opened = ledger.open_item_for(
            make_action(), "budget (never claimed)", step="R", evidence={}
        )
    conn = sqlite3.connect(path)  # back to schema 3: no dual control, no audit table
    conn.execute("ALTER TABLE recon_items DROP COLUMN dual_control")
    conn.execute("ALTER TABLE recon_items DROP COLUMN first_approval")
    conn.execute("DROP TABLE audit")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()

    with open_ledger(f"sqlite:///{path}") as ledger:
        kept = ledger.get_item(opened.item_id)
        assert kept is not None
        assert (kept.dual_control, kept.first_approval) == (False, None)
        resolved = ledger.resolve_item(opened.item_id, "not_applied", "ops@acme", "topped up")
        assert resolved.status is ReconStatus.RESOLVED
        assert ledger.get_audit(opened.item_id) is not None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
    conn.close()
