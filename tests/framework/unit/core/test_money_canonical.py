"""Money canonicalization as properties: the same amount written any allowed way is the
same minor units; anything else — other spellings, more precision than the currency has,
more than 28 digits — is refused, never rounded."""

from __future__ import annotations

import copy
import re
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga._model.money import MAX_MINOR_DIGITS, Money, currency_exponent
from stepsaga.errors import InvalidActionError, InvalidInputError
from tests.framework.functional.cli_support import case_data
from workflows.case import parse_case

CURRENCIES = ["USD", "EUR", "JPY", "BHD", "KWD", "CLP", "CHF"]
LIMIT = 10**MAX_MINOR_DIGITS
PLAIN = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)

minors = st.integers(min_value=-(LIMIT - 1), max_value=LIMIT - 1)


@st.composite
def spellings(draw: st.DrawFn, minor: int, exponent: int) -> object:
    """One way of writing ``minor`` units of a currency with this exponent."""
    sign = "-" if minor < 0 else ""
    whole, fraction = divmod(abs(minor), 10**exponent)
    digits = str(fraction).rjust(exponent, "0") if exponent else ""
    digits += "0" * draw(st.integers(0, 6))  # trailing zeros change nothing
    lead = "0" * draw(st.integers(0, 3))  # nor do leading ones
    text = f"{sign}{lead}{whole}" + (f".{digits}" if digits else "")
    pad = draw(st.sampled_from(["", " ", "\t", "\n "]))
    kind = draw(st.sampled_from(["text", "decimal", "scaled decimal", "int"]))
    if kind == "text":
        return f"{pad}{text}{pad[::-1]}"
    if kind == "decimal":
        return Decimal(text)
    if kind == "scaled decimal":  # the same value with another exponent (e.g. 2E+3)
        return Decimal(minor).scaleb(-exponent) if minor else Decimal("0E-7")
    if fraction == 0:
        return int(f"{sign}{whole}")
    return Decimal(text)


@given(data=st.data(), minor=minors, currency=st.sampled_from(CURRENCIES))
def test_every_spelling_of_an_amount_is_the_same_minor_units(
    data: st.DataObject, minor: int, currency: str
) -> None:
    spelled = data.draw(spellings(minor, currency_exponent(currency)))
    assert Money.parse(spelled, currency.lower()) == Money(minor, currency)  # type: ignore[arg-type]


@given(text=st.text(max_size=40), currency=st.sampled_from(CURRENCIES))
def test_any_text_is_either_an_exact_plain_decimal_or_refused(text: str, currency: str) -> None:
    """No text is read more loosely than the grammar, and no value is rounded."""
    try:
        money = Money.parse(text, currency)
    except InvalidActionError as exc:
        refusal = exc.message
    else:
        stripped = text.strip(" \t\r\n")
        assert PLAIN.fullmatch(stripped), text
        exact = Fraction(stripped) * 10 ** currency_exponent(currency)
        assert exact.denominator == 1
        assert money.minor == exact.numerator
        return
    assert "\n" not in refusal


@given(
    minor=minors,
    extra=st.integers(1, 20),
    currency=st.sampled_from(CURRENCIES),
    tail=st.integers(1, 9),
)
def test_one_digit_finer_than_the_currency_is_refused_however_long(
    minor: int, extra: int, currency: str, tail: int
) -> None:
    exponent = currency_exponent(currency)
    text = Money(minor, currency).format() if exponent else str(minor)
    text += ("" if exponent else ".") + "0" * (extra - 1) + str(tail)
    with pytest.raises(InvalidActionError, match="finer than"):
        Money.parse(text, currency)


@given(
    minor=st.integers(min_value=LIMIT, max_value=LIMIT * 10**6),
    currency=st.sampled_from(CURRENCIES),
)
def test_more_than_28_digits_of_minor_units_are_refused(minor: int, currency: str) -> None:
    spelled = Money(minor, currency).to_decimal()
    for amount in (spelled, format(spelled, "f"), -spelled):
        with pytest.raises(InvalidActionError, match="too large"):
            Money.parse(amount, currency)


@pytest.mark.parametrize(
    "amount",
    [
        "19.9999999999999999999999999999",  # 30 digits: a 28-digit context rounds it to 20
        "19.99999999999999999999999999",
        "0.0000000000000000000000000000001",
        Decimal("19.9999999999999999999999999999"),
        Decimal("1E-99999999"),
    ],
)
def test_precision_beyond_the_currency_is_refused_not_rounded(amount: object) -> None:
    with pytest.raises(InvalidActionError, match="finer than USD"):
        Money.parse(amount, "USD")  # type: ignore[arg-type]


def test_no_decimal_context_changes_the_answer() -> None:
    with localcontext() as context:
        context.prec = 3
        assert Money.parse("123456.78", "USD") == Money(12345678, "USD")
        with pytest.raises(InvalidActionError):
            Money.parse("1234.567", "USD")


@pytest.mark.parametrize(
    "amount",
    [
        "1e2",
        "1E2",
        "1_000",
        "1_000.00",
        "\u0661\u0660",  # Arabic-Indic digits
        "\uff12\uff10",  # full-width digits
        "NaN",
        "nan",
        "sNaN",
        "Infinity",
        "-Infinity",
        "inf",
        "+5",
        "+5.00",
        "2 0",
        "20 .00",
        "20.\u00a000",
        "\u00a020.00",
        "20.",
        ".50",
        "--1",
        "0x10",
        "",
        " ",
        "20,00",
        "1" * 65,
        Decimal("NaN"),
        Decimal("Infinity"),
        float("inf"),
        float("nan"),
        True,
        None,
        [20],
    ],
)
def test_other_spellings_are_refused(amount: object) -> None:
    with pytest.raises(InvalidActionError) as caught:
        Money.parse(amount, "USD")  # type: ignore[arg-type]
    assert "\n" not in caught.value.message
    assert len(caught.value.message) < 200


def test_a_huge_integer_is_refused_without_echoing_it() -> None:
    with pytest.raises(InvalidActionError) as caught:
        Money.parse(10**5000, "USD")
    assert len(caught.value.message) < 200


@pytest.mark.parametrize(
    ("amount", "says"),
    [
        ("19.9999999999999999999999999999", "finer than USD"),
        ("1e2", "not a plain decimal"),
        ("1_000", "not a plain decimal"),
        ("\u0662\u0660", "not a plain decimal"),
        ("+20.00", "not a plain decimal"),
        ("NaN", "not a plain decimal"),
    ],
)
def test_a_case_keeps_the_amount_as_written_so_the_rules_see_it(amount: str, says: str) -> None:
    data = copy.deepcopy(case_data())
    data["refund"]["amount"] = amount
    with pytest.raises(InvalidInputError) as caught:
        parse_case(data)
    # The amount alone is refused as the field's own (a plain decimal); what needs the
    # currency too (its places) is refused as the refund's.
    assert caught.value.message.startswith(("refund.amount: ", "refund: "))
    assert says in caught.value.message


@pytest.mark.parametrize(
    ("amount", "canonical"), [("20.00", "20.00"), (20, "20.00"), (20.5, "20.50")]
)
def test_a_case_still_canonicalizes_plain_amounts(amount: object, canonical: str) -> None:
    data = copy.deepcopy(case_data())
    data["refund"]["amount"] = amount
    assert parse_case(data).execution_input()["refund"]["amount"] == canonical
