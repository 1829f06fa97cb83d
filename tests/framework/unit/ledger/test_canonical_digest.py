"""Canonical parameters and digests: equal intents digest equally, anything else does not."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga._model.money import Money
from stepsaga.errors import InvalidActionError
from stepsaga.ledger import Action, Intent
from tests.framework.conformance.ledger.helpers import APPROVED_AT

INTENT = Intent("CASE-1", 1, APPROVED_AT)

json_leaves = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
params_strategy = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k not in ("amount", "currency")),
    json_values,
    max_size=5,
)


def digest(params: Any, intent: Intent = INTENT) -> str:
    return Action("acme", intent, "op", params=params).digest


@settings(max_examples=150)
@given(params=params_strategy, seed=st.randoms(use_true_random=False))
def test_key_order_never_changes_the_digest(params: dict[str, Any], seed: Any) -> None:
    items = list(params.items())
    seed.shuffle(items)
    assert digest(dict(items)) == digest(params)


@settings(max_examples=150)
@given(minor=st.integers(0, 10**12), currency=st.sampled_from(["USD", "EUR", "GBP"]))
def test_money_spellings_share_one_digest(minor: int, currency: str) -> None:
    as_decimal = Decimal(minor).scaleb(-2)
    spellings: list[Any] = [
        as_decimal,
        str(as_decimal),
        f"{as_decimal:.2f}",
        Money(minor, currency),
    ]
    if minor % 100 == 0:
        spellings += [minor // 100, float(minor // 100)]
    expected = digest({"refund": {"amount": str(as_decimal), "currency": currency}})
    for amount in spellings:
        value = amount if isinstance(amount, Money) else {"amount": amount, "currency": currency}
        assert digest({"refund": value}) == expected
        if not isinstance(amount, Money):
            lowered = {"amount": amount, "currency": currency.lower()}
            assert digest({"refund": lowered}) == expected


@settings(max_examples=100)
@given(minor=st.integers(1, 10**9), extra=st.integers(1, 9))
def test_amounts_finer_than_the_currency_are_refused(minor: int, extra: int) -> None:
    too_fine = f"{Decimal(minor).scaleb(-2)}{extra}"
    with pytest.raises(InvalidActionError):
        digest({"amount": too_fine, "currency": "USD"})
    with pytest.raises(InvalidActionError):
        digest({"amount": "1.5", "currency": "JPY"})


@settings(max_examples=100)
@given(text=st.text(max_size=12))
def test_strings_are_compared_in_nfc(text: str) -> None:
    nfd = unicodedata.normalize("NFD", text)
    nfc = unicodedata.normalize("NFC", text)
    assert digest({nfd: nfd}) == digest({nfc: nfc})


@settings(max_examples=150)
@given(a=params_strategy, b=params_strategy)
def test_different_parameters_digest_differently(a: dict[str, Any], b: dict[str, Any]) -> None:
    def normal(value: Any) -> str:
        text = json.dumps(value, sort_keys=True)
        return unicodedata.normalize("NFC", text)

    if normal(a) != normal(b):
        assert digest(a) != digest(b)


@settings(max_examples=50)
@given(params=params_strategy, minutes=st.integers(1, 10**5))
def test_the_approval_time_is_part_of_the_digest(params: dict[str, Any], minutes: int) -> None:
    later = Intent("CASE-1", 1, APPROVED_AT + timedelta(minutes=minutes))
    assert digest(params, later) != digest(params)


def test_the_digest_format_is_stable() -> None:
    # Stored digests must keep matching after upgrades: pin one.
    action = Action(
        "acme",
        Intent("CASE-1001", 1, datetime(2026, 11, 29, 9, 30, tzinfo=UTC)),
        "refund_payment",
        params={"payment_id": "PAY-991", "amount": "20.00", "currency": "usd"},
    )
    document = (
        b'{"approved_at":"2026-11-29T09:30:00Z",'
        b'"params":{"amount":2000,"currency":"USD","payment_id":"PAY-991"}}'
    )
    assert action.digest == hashlib.sha256(document).hexdigest()
    assert action.digest == "c39a174a3c06f6cbb0a6bbecf9a8455b7af50bbfd9d0a67ca2cedb22ffeae696"


def test_equal_numbers_are_equal_and_time_zones_do_not_matter() -> None:
    assert digest({"n": 20}) == digest({"n": 20.0}) == digest({"n": Decimal("20.00")})
    utc = datetime(2026, 1, 1, 12, tzinfo=UTC)
    berlin = utc.astimezone(timezone(timedelta(hours=1)))
    assert digest({"at": utc}) == digest({"at": berlin})
    assert digest({"xs": (1, 2)}) == digest({"xs": [1, 2]})


@pytest.mark.parametrize(
    "params",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": {1, 2}},
        {"x": b"bytes"},
        {"x": object()},
        {"x": datetime(2026, 1, 1)},  # no timezone
        {1: "non-string key"},
        {"x": 2**60},  # beyond JSON's exact integers
        {"x": Decimal("0.1000000000000000000001")},
        {"amount": "12", "currency": "XYZ"},
        {"amount": True, "currency": "USD"},
    ],
)
def test_what_cannot_be_canonicalized_is_refused(params: Any) -> None:
    with pytest.raises(InvalidActionError):
        digest(params)


def test_too_deep_or_too_large_parameters_are_refused() -> None:
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    with pytest.raises(InvalidActionError):
        digest({"deep": deep})
    with pytest.raises(InvalidActionError):
        digest({"big": "x" * 70_000})
