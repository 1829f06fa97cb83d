"""Money canonicalization: equal amounts are equal, inexpressible amounts are refused."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga._model.money import Money, currency_exponent
from stepsaga.errors import InvalidActionError


@pytest.mark.parametrize("amount", [20, 20.0, "20.00", "20", Decimal("20.000"), " 20.0 "])
def test_equal_usd_amounts_have_one_minor_value(amount: object) -> None:
    assert Money.parse(amount, "usd") == Money(2000, "USD")  # type: ignore[arg-type]


def test_currency_exponent_follows_iso_4217() -> None:
    assert (currency_exponent("JPY"), currency_exponent("USD"), currency_exponent("BHD")) == (
        0,
        2,
        3,
    )


@pytest.mark.parametrize(
    ("amount", "currency"), [("20.001", "USD"), ("1.5", "JPY"), ("0.0001", "BHD")]
)
def test_amount_finer_than_minor_unit_is_refused_not_rounded(amount: str, currency: str) -> None:
    with pytest.raises(InvalidActionError, match="finer than"):
        Money.parse(amount, currency)


@pytest.mark.parametrize("currency", ["QQQ", "US", "", "XXX"])
def test_unknown_or_unitless_currency_is_refused(currency: str) -> None:
    with pytest.raises(InvalidActionError) as info:
        Money.parse("1", currency)
    assert info.value.data["field"] == "currency"


@pytest.mark.parametrize("amount", ["abc", "NaN", "Infinity", True, None, [1]])
def test_non_numbers_are_refused(amount: object) -> None:
    with pytest.raises(InvalidActionError):
        Money.parse(amount, "USD")  # type: ignore[arg-type]


@given(
    minor=st.integers(min_value=0, max_value=10**12),
    currency=st.sampled_from(["USD", "EUR", "JPY", "BHD", "KWD", "CLP"]),
)
def test_format_then_parse_round_trips(minor: int, currency: str) -> None:
    money = Money(minor, currency)
    assert Money.parse(money.format(), currency.lower()) == money
    assert Money.parse(money.to_decimal(), currency) == money
