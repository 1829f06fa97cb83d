"""The revision rule as a pure function (``stepsaga.ledger._revisions``): its table and the
line a person reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from stepsaga.ledger import Record, Status
from stepsaga.ledger._revisions import Verdict, decide
from tests.framework.conformance.ledger.helpers import make_action

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _record(status: Status, params: dict[str, object] | None = None, revision: int = 1) -> Record:
    action = make_action(revision=revision, params=params)
    return Record(
        key=action.key,
        tenant_id="acme",
        case_id="CASE-1001",
        revision=revision,
        operation=action.operation,
        effect=action.effect,
        digest=action.digest,
        status=status,
        owner="o",
        lease_expires_at=None,
        attempts=1,
        result={"refund_id": "RF-1"},
        error=None,
        reference="RF-1",
        cost=None,
        created_at=NOW,
        updated_at=NOW,
        expires_at=NOW,
        terms=action.terms,
    )


def _terms(amount: object, currency: str = "USD") -> dict[str, object]:
    return make_action(
        revision=2, params={"payment_id": "PAY-991", "amount": amount, "currency": currency}
    ).terms


@given(cents=st.integers(min_value=0, max_value=10**9))
def test_the_same_amount_however_written_is_adopted(cents: int) -> None:
    written = [Decimal(cents).scaleb(-2), f"{Decimal(cents).scaleb(-2):.2f}"]
    earlier = _record(
        Status.COMPLETED, {"payment_id": "PAY-991", "amount": written[0], "currency": "usd"}
    )
    assert decide(2, "refund_payment", _terms(written[1]), earlier, None).verdict is (Verdict.ADOPT)


@given(
    before=st.integers(min_value=0, max_value=10**6),
    after=st.integers(min_value=0, max_value=10**6),
)
def test_a_changed_amount_is_named_with_both_values(before: int, after: int) -> None:
    earlier = _record(
        Status.COMPLETED, {"payment_id": "PAY-991", "amount": before, "currency": "JPY"}
    )
    decision = decide(2, "refund_payment", _terms(after, "JPY"), earlier, None)
    if before == after:
        assert decision.verdict is Verdict.ADOPT
    else:
        assert decision.verdict is Verdict.RECONCILE
        assert decision.message.endswith(f"amount {before} → {after} JPY")


def test_the_table() -> None:
    same = _terms("20.00")
    assert decide(2, "refund_payment", same, None, None).verdict is Verdict.PERFORM
    for status, verdict in [
        (Status.FAILED, Verdict.PERFORM),
        (Status.RELEASED, Verdict.PERFORM),
        (Status.UNKNOWN, Verdict.RECONCILE),
        (Status.IN_PROGRESS, Verdict.RECONCILE),
        (Status.COMPLETED, Verdict.ADOPT),
    ]:
        assert decide(2, "refund_payment", same, _record(status), None).verdict is verdict
    done = _record(Status.COMPLETED)
    undo = replace(done, key=done.key + ":compensate:cancel")
    for status, verdict in [
        (Status.COMPLETED, Verdict.PERFORM),
        (Status.UNKNOWN, Verdict.RECONCILE),
        (Status.IN_PROGRESS, Verdict.RECONCILE),
        (Status.FAILED, Verdict.ADOPT),  # the undo did not happen: the effect stands
        (Status.RELEASED, Verdict.ADOPT),
    ]:
        got = decide(2, "refund_payment", same, done, replace(undo, status=status))
        assert got.verdict is verdict


def test_other_fields_are_named_not_shown() -> None:
    earlier = _record(Status.COMPLETED)
    changed = make_action(
        revision=2, params={"payment_id": "PAY-992", "amount": "20.00", "currency": "EUR"}
    ).terms
    message = decide(2, "refund_payment", changed, earlier, None).message
    assert message.endswith("amount 20.00 USD → 20.00 EUR; payment_id changed")
    assert "PAY-99" not in message
