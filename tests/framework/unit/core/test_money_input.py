"""Money in a team's input model (``Amount``, ``Currency``, ``Money``) is held at ``start``
to the digest's own rules: whatever the first step's request digest would refuse is refused
when the case is read, naming the field; whatever it takes is taken, as written."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from stepsaga import Amount, ApprovedCase, Currency, Money, parse_case
from stepsaga._model.case import StrictModel
from stepsaga._model.money import MAX_MINOR_DIGITS
from stepsaga.errors import InvalidActionError, InvalidInputError
from stepsaga.ledger._canonical import canonical_params

CURRENCIES = ["USD", "usd", "JPY", "BHD", "EUR", "EURO", "XXX", "XAU", "US", ""]


class Charge(StrictModel):
    card_id: str
    amount: Amount
    currency: Currency


class Priced(StrictModel):
    price: Money


class LooseCharge(BaseModel):
    """A team's plain model: no Amount, no Currency, nothing said about unknown fields."""

    amount: str
    currency: str


class Order(ApprovedCase):
    charge: Charge
    priced: Priced
    loose: LooseCharge


amounts = st.one_of(
    st.integers(0, 4)
    .flatmap(lambda places: st.decimals(allow_nan=False, allow_infinity=False, places=places))
    .map(str),
    st.integers(-(10**30), 10**30),
    st.text(alphabet="0123456789.-+e_ ", max_size=12),
    st.sampled_from(["1e2", "412.505", "-5.00", "20", "20.0", "0", "1_000", "NaN", "٣"]),
)


def _digest_verdict(amount: object, currency: str) -> str | None:
    """What the digest says of this money (``None``: accepted), plus the sign policy."""
    try:
        money = Money.parse(amount, currency)  # type: ignore[arg-type]
        canonical_params({"amount": amount, "currency": currency})
    except InvalidActionError as exc:
        return exc.message
    return "negative" if money.minor < 0 else None


def _case(charge: dict[str, Any], price: dict[str, Any], loose: dict[str, Any]) -> dict[str, Any]:
    return {
        "tenant_id": "acme",
        "case_id": "CASE-1",
        "approval": {
            "approved_by": "ops@acme.example",
            "approved_at": "2026-12-01T09:30:00Z",
            "revision": 1,
        },
        "charge": {"card_id": "CARD-1", **charge},
        "priced": {"price": price},
        "loose": loose,
    }


def _start(data: dict[str, Any]) -> None:
    """What ``start`` checks: ``parse_case``, then ``Saga.check_input``'s digest run."""
    case = parse_case(data, Order)
    canonical_params(case.execution_input(), path="")


def _accepted_at_start(data: dict[str, Any]) -> bool:
    try:
        _start(data)
    except InvalidInputError:
        return False
    return True


@settings(max_examples=150, deadline=None)
@given(amount=amounts, currency=st.sampled_from(CURRENCIES))
def test_amount_and_currency_fields_accept_exactly_what_the_digest_accepts(
    amount: object, currency: str
) -> None:
    fine = _case({"amount": "1.00", "currency": "USD"}, {"amount": "1", "currency": "EUR"}, {})
    fine["loose"] = {"amount": "1.00", "currency": "USD"}
    for field in ("charge", "priced", "loose"):
        data = dict(fine)
        if field == "priced":
            data["priced"] = {"price": {"amount": amount, "currency": currency}}
        elif field == "loose" and not isinstance(amount, str):
            continue  # a plain ``str`` field refuses a number as pydantic does
        else:
            data[field] = {**fine[field], "amount": amount, "currency": currency}
        verdict = _digest_verdict(amount, currency)
        if field == "loose" and verdict == "negative":
            continue  # a plain str field has no sign policy; the digest takes negatives
        assert _accepted_at_start(data) is (verdict is None), (field, amount, currency, verdict)


@settings(max_examples=100, deadline=None)
@given(
    minor=st.integers(0, 10**MAX_MINOR_DIGITS - 1),
    currency=st.sampled_from(["USD", "JPY", "BHD"]),
)
def test_a_money_field_keeps_the_value_and_the_digest_sees_the_same_minor_units(
    minor: int, currency: str
) -> None:
    exponent = {"USD": 2, "JPY": 0, "BHD": 3}[currency]
    text = str(Decimal(minor).scaleb(-exponent))
    priced = Priced.model_validate({"price": {"amount": text, "currency": currency.lower()}})
    assert priced.price == Money(minor, currency)
    dumped = priced.model_dump(mode="json")["price"]
    assert Money.parse(dumped["amount"], dumped["currency"]) == Money(minor, currency)


@pytest.mark.parametrize(
    ("charge", "says"),
    [
        ({"amount": "1e2", "currency": "USD"}, "charge.amount: '1e2' is not a plain decimal"),
        ({"amount": "-5.00", "currency": "USD"}, "charge.amount: must not be negative"),
        ({"amount": "20.00", "currency": "EURO"}, "charge.currency: unknown currency 'EURO'"),
        ({"amount": "412.505", "currency": "USD"}, "charge.amount '412.505' is finer than USD"),
    ],
)
def test_each_refusal_is_one_line_naming_the_field(charge: dict[str, Any], says: str) -> None:
    data = _case(charge, {"amount": "1", "currency": "EUR"}, {"amount": "1", "currency": "USD"})
    with pytest.raises(InvalidInputError) as refused:
        _start(data)
    assert says in refused.value.message
    assert "\n" not in refused.value.message


def test_a_plain_nested_model_refuses_unknown_fields_too() -> None:
    data = _case(
        {"amount": "1.00", "currency": "USD"},
        {"amount": "1", "currency": "EUR"},
        {"amount": "1", "currency": "USD", "colour": "red"},
    )
    with pytest.raises(InvalidInputError, match=r"^loose\.colour: Extra inputs are not permitted"):
        parse_case(data, Order)


def test_a_model_that_allows_extra_fields_is_taken_at_its_word() -> None:
    class Open(BaseModel, extra="allow"):
        name: str

    class WithOpen(ApprovedCase):
        tag: Open

    data = _case({}, {}, {})
    data = {k: v for k, v in data.items() if k in ("tenant_id", "case_id", "approval")}
    data["tag"] = {"name": "x", "colour": "red"}
    assert parse_case(data, WithOpen).tag.name == "x"
