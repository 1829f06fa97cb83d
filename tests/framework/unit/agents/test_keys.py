"""Keys bound to what a person approved, and the error results the table advises."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga import EffectClass
from stepsaga.agents import KeyBook, Limits
from stepsaga.agents._results import ADVICE, SAME_KEY, failure
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    BusinessRejectedError,
    InvalidInputError,
    NotFoundError,
    OutcomeUnknownError,
    StepSagaError,
)
from stepsaga.ledger import Action, Ledger, open_ledger

APPROVED = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite3'}")


def action_for(book: KeyBook, key: str, tool: str, **params: object) -> Action:
    intent = book.grant("acme", key).intent
    return Action("acme", intent, tool, EffectClass.KEYED_WRITE, params)


def test_a_key_is_bound_unless_issued_unbound_explicitly(ledger: Ledger) -> None:
    book = KeyBook(ledger)
    with pytest.raises(InvalidInputError, match=r"issue\(tool=\.\.\.\) names the approved tool"):
        book.issue("acme")
    with pytest.raises(InvalidInputError, match="either exact args or limits"):
        book.issue("acme", tool="create_refund")
    with pytest.raises(InvalidInputError, match="either exact args or limits"):
        book.issue("acme", tool="t", args={}, limits=Limits(fixed={"order_id": "O"}))
    with pytest.raises(InvalidInputError, match="pass unbound=True alone"):
        book.issue("acme", unbound=True, tool="create_refund")
    loose = book.issue("acme", unbound=True)
    grant = book.grant("acme", loose)
    assert grant.tool is None
    assert not grant.bound
    with pytest.raises(InvalidInputError, match="16 to 128"):
        book.issue("acme", unbound=True, key="short")
    key = book.issue("acme", unbound=True, key="k" * 128)
    with pytest.raises(InvalidInputError, match="already issued"):
        book.issue("acme", unbound=True, key=key)
    with pytest.raises(NotFoundError):
        book.grant("acme", "n" * 16)


def test_exact_arguments_bind_the_digest_the_ledger_computes(ledger: Ledger) -> None:
    book = KeyBook(ledger)
    key = book.issue(
        "acme",
        tool="create_refund",
        args={"order_id": "ORD-1", "amount": {"amount": "20", "currency": "usd"}},
        approved_at=APPROVED,
        approved_by="ops@acme.example",
    )
    grant = book.grant("acme", key)
    assert grant.approved_by == "ops@acme.example"
    same_money = {"order_id": "ORD-1", "amount": {"amount": "20.00", "currency": "USD"}}
    grant.check("create_refund", action_for(book, key, "create_refund", **same_money), same_money)
    other = {"order_id": "ORD-1", "amount": {"amount": "25.00", "currency": "USD"}}
    with pytest.raises(ActionConflictError, match="approved for create_refund with arguments"):
        grant.check("create_refund", action_for(book, key, "create_refund", **other), other)
    with pytest.raises(ActionConflictError, match="this call is issue_credit; nothing changed"):
        grant.check("issue_credit", action_for(book, key, "issue_credit", **same_money), same_money)


def test_limits_are_validated_when_made() -> None:
    with pytest.raises(InvalidInputError, match="at least one argument"):
        Limits()
    with pytest.raises(InvalidInputError, match=r"limits.at_most.amount_cents must be"):
        Limits(at_most={"amount_cents": 10.5})  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match=r"limits.at_most.amount_cents must be"):
        Limits(at_most={"amount_cents": True})
    assert Limits.from_json(Limits(at_most={"a": Decimal("1.5")}).to_json()).at_most == {
        "a": Decimal("1.5")
    }


@settings(max_examples=60, deadline=None)
@given(
    bound=st.integers(min_value=0, max_value=10**9),
    amount=st.integers(min_value=0, max_value=10**9),
    order=st.sampled_from(["ORD-1", "ORD-2", "ORD-1 "]),
)
def test_a_call_is_within_limits_exactly_when_every_bound_holds(
    bound: int, amount: int, order: str
) -> None:
    limits = Limits(fixed={"order_id": "ORD-1"}, at_most={"amount_cents": bound})
    breach = limits.breach({"order_id": order, "amount_cents": amount})
    assert (breach is None) == (order == "ORD-1" and amount <= bound)
    if order != "ORD-1":
        assert breach == f'order_id is "{order}"'
    elif amount > bound:
        assert breach == f"amount_cents is {amount}"


def test_a_missing_or_non_numeric_bounded_argument_is_a_breach() -> None:
    limits = Limits(at_most={"amount_cents": 10})
    assert limits.breach({}) == "amount_cents is null"
    assert limits.breach({"amount_cents": "5"}) == 'amount_cents is "5"'
    assert limits.breach({"amount_cents": True}) == "amount_cents is true"


class TeamRejectedError(BusinessRejectedError):
    """A team's own refusal: routes as its nearest framework base."""


@pytest.mark.parametrize(
    ("error", "retryable", "reuse"),
    [
        (OutcomeUnknownError("m"), False, True),
        (ActionInProgressError("m", retry_after_seconds=2.5), True, True),
        (ActionConflictError("m"), False, False),
        (TeamRejectedError("m"), False, False),
        (InvalidInputError("m"), False, False),
        (StepSagaError("m"), False, True),
    ],
)
def test_every_failure_carries_the_structured_fields(
    error: StepSagaError, retryable: bool, reuse: bool
) -> None:
    failed = failure(error, item_id="rec-1")
    assert failed.retryable is retryable
    assert failed.reuse_same_key is reuse
    assert failed.item_id == "rec-1"
    assert failed.error == error.error_name()
    assert (SAME_KEY in failed.advice) is reuse
    assert failed.text().startswith(f"{failed.error}: m. ")
    if isinstance(error, ActionInProgressError):
        assert failed.retry_after_s == 2.5


def test_the_advice_table_lists_subclasses_before_their_bases() -> None:
    classes = [cls for cls, _ in ADVICE]
    for index, cls in enumerate(classes):
        assert not any(issubclass(later, cls) for later in classes[index + 1 :]), cls
