"""Money as integer minor units, by the currency's ISO 4217 exponent.

``20``, ``20.0`` and ``"20.00"`` USD are the same 2000 cents; ``"20.001"`` USD is refused,
never rounded: an amount the currency cannot express is a bad request, not a rounding choice.
The arithmetic is exact integer arithmetic, never a ``Decimal`` context (which rounds to 28
digits: ``"19.9999999999999999999999999999"`` would become 20.00). Text is a plain decimal
(ASCII digits, one optional point, an optional leading minus); ``"1e2"``, ``"1_000"``,
``"+5"``, Arabic-Indic digits and ``"NaN"`` are refused because ``Decimal()`` would read
them as numbers a person did not write.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Annotated

from pydantic import Field, Strict, StrictInt, StrictStr

from stepsaga.errors import InvalidActionError

AmountInput = int | float | str | Decimal

#: An amount field of an input model: the value exactly as written (text stays text, so
#: :meth:`Money.parse` sees it; a ``Decimal`` field would accept ``"1e2"`` or ``"1_000"``).
Amount = Annotated[
    StrictStr | StrictInt | Annotated[Decimal, Strict()], Field(union_mode="left_to_right")
]

#: At most this many digits in minor units: what a 28-digit ``Decimal`` context (the
#: default everywhere downstream) holds exactly.
MAX_MINOR_DIGITS = 28
#: Longer text is no amount (and is not echoed back in full).
MAX_AMOUNT_CHARS = 64

_PLAIN_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)


def currency_exponent(code: str) -> int:
    """ISO 4217 minor-unit exponent; unknown codes or codes without minor units are refused."""
    normalized = code.strip().upper() if isinstance(code, str) else code
    try:
        if not isinstance(normalized, str):
            raise ValueError(normalized)
        exponent = _iso_exponent(normalized)
    except (ValueError, KeyError):
        raise InvalidActionError(f"unknown currency {code!r}", field="currency") from None
    if exponent is None:
        raise InvalidActionError(f"currency {normalized} has no minor unit", field="currency")
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
    def parse(cls, amount: AmountInput, currency: str, *, field: str = "amount") -> Money:
        if not isinstance(currency, str):
            raise InvalidActionError("currency must be a string", field="currency")
        code = currency.strip().upper()
        exponent = currency_exponent(code)
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
