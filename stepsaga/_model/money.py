"""Money as integer minor units, by the currency's ISO 4217 exponent.

``20``, ``20.0`` and ``"20.00"`` USD are the same 2000 cents; ``"20.001"`` USD is refused,
never rounded: an amount the currency cannot express is a bad request, not a rounding choice.
The arithmetic is exact integer arithmetic, never a ``Decimal`` context (which rounds to 28
digits: ``"19.9999999999999999999999999999"`` would become 20.00). Text is a plain decimal
(ASCII digits, one optional point, an optional leading minus); ``"1e2"``, ``"1_000"``,
``"+5"``, Arabic-Indic digits and ``"NaN"`` are refused because ``Decimal()`` would read
them as numbers a person did not write.

In a team's input model, :data:`Amount`, :data:`Currency` and :class:`Money` (a field
``{"amount": "20.00", "currency": "USD"}``) apply these same rules at ``start``, plus one
sign policy (:data:`SIGN_POLICY`): an amount in a case is never negative — which way money
moves is the operation's (a refund, a charge), not the sign's. ``Saga.check_input`` then
runs the digest's own canonicalization over the whole input, so whatever the first step's
digest would refuse (``"412.505"`` USD) is refused at ``start``, naming the field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, Field, GetCoreSchemaHandler, Strict, StrictInt, StrictStr
from pydantic_core import core_schema

from stepsaga.errors import InvalidActionError

AmountInput = int | float | str | Decimal

#: The sign policy of money in a case: never negative (the operation gives the direction).
SIGN_POLICY = "the operation (a refund, a charge) says which way money moves"


def _input_amount(value: str | int | Decimal) -> str | int | Decimal:
    """An :data:`Amount` as a case holds it: a plain decimal (the digest's rule), never
    negative (:data:`SIGN_POLICY`); kept as written."""
    try:
        number = _decimal(value, "amount")
    except InvalidActionError as exc:
        raise ValueError(exc.message.removeprefix("amount ")) from None
    if number < 0:
        raise ValueError(f"must not be negative: {SIGN_POLICY}")
    return value


def _input_currency(value: str) -> str:
    """A :data:`Currency`: an ISO 4217 code with a minor unit, upper-cased."""
    code = value.strip().upper()
    try:
        currency_exponent(code)
    except InvalidActionError as exc:
        raise ValueError(exc.message) from None
    return code


#: An amount field of an input model: the value exactly as written (text stays text, so
#: :meth:`Money.parse` sees it; a ``Decimal`` field would accept ``"1e2"`` or ``"1_000"``),
#: a plain decimal and never negative. Whether it fits its currency's minor unit is checked
#: with the currency (``Saga.check_input`` at start, or a :class:`Money` field).
Amount = Annotated[
    StrictStr | StrictInt | Annotated[Decimal, Strict()],
    Field(union_mode="left_to_right"),
    AfterValidator(_input_amount),
]

#: A currency field of an input model: an ISO 4217 code with a minor unit (``"usd"`` is
#: ``USD``; ``"EURO"`` and ``"XXX"`` are refused).
Currency = Annotated[StrictStr, AfterValidator(_input_currency)]

#: At most this many digits in minor units: what a 28-digit ``Decimal`` context (the
#: default everywhere downstream) holds exactly.
MAX_MINOR_DIGITS = 28
#: Longer text is no amount (and is not echoed back in full).
MAX_AMOUNT_CHARS = 64

_PLAIN_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)


def currency_exponent(code: str, *, field: str = "currency") -> int:
    """ISO 4217 minor-unit exponent; unknown codes or codes without minor units are refused."""
    normalized = code.strip().upper() if isinstance(code, str) else code
    try:
        if not isinstance(normalized, str):
            raise ValueError(normalized)
        exponent = _iso_exponent(normalized)
    except (ValueError, KeyError):
        raise InvalidActionError(f"unknown currency {_shown(code)}", field=field) from None
    if exponent is None:
        raise InvalidActionError(f"currency {normalized} has no minor unit", field=field)
    return int(exponent)


@lru_cache(maxsize=256)
def _iso_exponent(code: str) -> int | None:
    """The ISO 4217 table's exponent of ``code`` (``ValueError`` if unknown). Cached: a
    digest asks it for every amount; imported on first use: the table costs ~20 ms of
    every CLI start-up otherwise."""
    from iso4217 import Currency

    return Currency(code).exponent


@dataclass(frozen=True, order=True)
class Money:
    """An exact amount: ``minor`` units of ``currency`` (upper-case ISO 4217 code)."""

    minor: int
    currency: str

    @classmethod
    def parse(
        cls,
        amount: AmountInput,
        currency: str,
        *,
        field: str = "amount",
        currency_field: str = "currency",
    ) -> Money:
        if not isinstance(currency, str):
            raise InvalidActionError(f"{currency_field} must be a string", field=currency_field)
        code = currency.strip().upper()
        exponent = currency_exponent(code, field=currency_field)
        value = _decimal(amount, field)
        return cls(_minor_units(value, exponent, amount, code, field), code)

    @property
    def exponent(self) -> int:
        return currency_exponent(self.currency)

    def to_decimal(self) -> Decimal:
        return Decimal(self.minor).scaleb(-self.exponent)

    def format(self) -> str:
        """Plain decimal string with exactly the currency's places, e.g. ``20.00``."""
        exponent = self.exponent
        quantum = Decimal(1).scaleb(-exponent)
        return str(self.to_decimal().quantize(quantum))

    def to_json(self) -> dict[str, str]:
        """``{"amount": "20.00", "currency": "USD"}``: how a case writes it."""
        return {"amount": self.format(), "currency": self.currency}

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """A ``Money`` field of an input model takes ``{"amount", "currency"}`` (the rules
        of :meth:`parse` and :data:`SIGN_POLICY`) and dumps as :meth:`to_json`."""
        fields = core_schema.typed_dict_schema(
            {
                "amount": core_schema.typed_dict_field(
                    handler.generate_schema(Amount), required=True
                ),
                "currency": core_schema.typed_dict_field(
                    handler.generate_schema(Currency), required=True
                ),
            },
            extra_behavior="forbid",
        )
        return core_schema.no_info_after_validator_function(
            _money_of,
            fields,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda money: money.to_json() if isinstance(money, Money) else money
            ),
        )


def _money_of(value: dict[str, Any]) -> Money:
    try:
        return Money.parse(value["amount"], value["currency"])
    except InvalidActionError as exc:
        raise ValueError(exc.message) from None


def _shown(amount: object) -> str:
    """An amount as an error line echoes it: at most 40 characters."""
    if isinstance(amount, int) and abs(amount) >= 10**40:
        return "(more than 40 digits)"  # str() of a huge int is slow, then refused
    text = repr(amount) if isinstance(amount, str) else str(amount)
    return text if len(text) <= 40 else f"{text[:40]}…"


def _decimal(amount: object, field: str) -> Decimal:
    """The exact value ``amount`` denotes; text must be a plain decimal."""
    if isinstance(amount, bool) or not isinstance(amount, int | float | str | Decimal):
        raise InvalidActionError(f"{field} must be a number or a decimal string", field=field)
    if isinstance(amount, str):
        text = amount.strip(" \t\r\n")
        if len(text) > MAX_AMOUNT_CHARS:
            raise InvalidActionError(
                f"{field} is longer than {MAX_AMOUNT_CHARS} characters", field=field
            )
        if not _PLAIN_DECIMAL.fullmatch(text):
            raise InvalidActionError(
                f"{field} {_shown(amount)} is not a plain decimal number such as 20.00",
                field=field,
            )
        return Decimal(text)
    if isinstance(amount, float):
        if not math.isfinite(amount):
            raise InvalidActionError(f"{field} must be finite", field=field)
        return Decimal(repr(amount))  # the shortest text that reads back as this float
    value = Decimal(amount)
    if not value.is_finite():
        raise InvalidActionError(f"{field} must be finite", field=field)
    return value


def _minor_units(value: Decimal, exponent: int, amount: object, code: str, field: str) -> int:
    """``value`` times 10^``exponent`` as an exact integer: refused when it has a fraction
    (finer than the currency) or more than ``MAX_MINOR_DIGITS`` digits."""
    sign, digits, power = value.as_tuple()
    assert isinstance(power, int)  # finite, checked by _decimal
    if not any(digits):
        return 0
    shift = power + exponent  # digits has no leading zeros: len(digits) + shift is the size
    if len(digits) + shift > MAX_MINOR_DIGITS:
        raise InvalidActionError(
            f"{field} {_shown(amount)} is too large (at most {MAX_MINOR_DIGITS} digits in "
            f"{code} minor units)",
            field=field,
        )
    if shift >= 0:
        minor = int("".join(map(str, digits)) + "0" * shift)
    else:
        kept, dropped = digits[:shift], digits[shift:]
        if -shift > len(digits) or any(dropped):
            raise InvalidActionError(
                f"{field} {_shown(amount)} is finer than {code} allows ({exponent} decimal places)",
                field=field,
            )
        minor = int("".join(map(str, kept))) if kept else 0
    return -minor if sign else minor
