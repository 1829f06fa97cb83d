"""Money as integer minor units, by the currency's ISO 4217 exponent.

``20``, ``20.0`` and ``"20.00"`` USD are the same 2000 cents; ``"20.001"`` USD is refused,
never rounded: an amount the currency cannot express is a bad request, not a rounding choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from iso4217 import Currency

from stepsaga.errors import InvalidActionError

AmountInput = int | float | str | Decimal


def currency_exponent(code: str) -> int:
    """ISO 4217 minor-unit exponent; unknown codes or codes without minor units are refused."""
    normalized = code.strip().upper() if isinstance(code, str) else code
    try:
        currency = Currency(normalized)
    except (ValueError, KeyError):
        raise InvalidActionError(f"unknown currency {code!r}", field="currency") from None
    exponent = currency.exponent
    if exponent is None:
        raise InvalidActionError(f"currency {normalized} has no minor unit", field="currency")
    return int(exponent)


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
        if isinstance(amount, bool) or not isinstance(amount, int | float | str | Decimal):
            raise InvalidActionError(f"{field} must be a number or a decimal string", field=field)
        try:
            value = Decimal(str(amount).strip()) if not isinstance(amount, Decimal) else amount
        except InvalidOperation:
            raise InvalidActionError(f"{field} {amount!r} is not a number", field=field) from None
        if not value.is_finite():
            raise InvalidActionError(f"{field} must be finite", field=field)
        scaled = value.scaleb(exponent)
        if scaled != scaled.to_integral_value():
            raise InvalidActionError(
                f"{field} {amount} is finer than {code} allows ({exponent} decimal places)",
                field=field,
            )
        return cls(int(scaled), code)

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
