"""Canonical parameters and the request digest.

Two requests mean the same action exactly when their canonical forms are equal. The form is
RFC 8785 (JSON Canonicalization Scheme: sorted keys, no whitespace, ECMAScript numbers, so
``20`` and ``20.0`` are one number) applied after normalizing what JSON cannot say:

- money — any mapping with ``amount`` and ``currency`` keys, or a ``Money`` — becomes integer
  minor units by the currency's exponent and an upper-case code (``20``, ``20.0`` and
  ``"20.00"`` USD are all ``2000``); amounts finer than the currency allows are refused;
- strings and keys are NFC-normalized; datetimes become ISO-8601 UTC; tuples become lists;
- anything else (sets, bytes, NaN, objects) is refused rather than guessed at.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

import rfc8785

from stepsaga._model.money import Money
from stepsaga._util.timestamps import iso_z
from stepsaga.errors import InvalidActionError

MAX_DEPTH = 32
MAX_CANONICAL_BYTES = 64 * 1024

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def canonical_params(params: Mapping[str, Any], *, path: str = "params") -> bytes:
    """The RFC 8785 bytes of the normalized parameters. ``path`` prefixes the fields an
    error names (``""``: from the top, as ``Saga.check_input`` names a case's fields)."""
    value = _normalize(params, path, 0)
    try:
        encoded = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise InvalidActionError(
            f"{path or 'input'} cannot be canonicalized: {exc}", field=path or "input"
        ) from None
    if len(encoded) > MAX_CANONICAL_BYTES:
        raise InvalidActionError(
            f"{path or 'input'} is larger than {MAX_CANONICAL_BYTES} bytes once canonical",
            field=path or "input",
        )
    return encoded


def digest_of(canonical: bytes, approved_at: datetime) -> str:
    """SHA-256 hex over ``{"approved_at": …, "params": …}`` in canonical form."""
    stamp = rfc8785.dumps(iso_z(approved_at))
    document = b'{"approved_at":' + stamp + b',"params":' + canonical + b"}"
    return hashlib.sha256(document).hexdigest()


def _normalize(value: Any, path: str, depth: int) -> Json:
    if depth > MAX_DEPTH:
        raise InvalidActionError(f"{path}: nested deeper than {MAX_DEPTH} levels", field=path)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidActionError(f"{path}: numbers must be finite", field=path)
        return value
    if isinstance(value, Decimal):
        return _decimal(value, path)
    if isinstance(value, Money):
        return {"amount": value.minor, "currency": value.currency}
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidActionError(f"{path}: datetimes must carry a timezone", field=path)
        return iso_z(value)
    if isinstance(value, Mapping):
        return _mapping(value, path, depth)
    if isinstance(value, list | tuple):
        return [_normalize(item, _join(path, str(i)), depth + 1) for i, item in enumerate(value)]
    raise InvalidActionError(
        f"{path}: {type(value).__name__} is not a JSON value the digest can cover", field=path
    )


def _mapping(value: Mapping[Any, Any], path: str, depth: int) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for raw_key, item in value.items():
        if not isinstance(raw_key, str):
            raise InvalidActionError(f"{path}: keys must be strings", field=path)
        key = unicodedata.normalize("NFC", raw_key)
        if key in out:
            raise InvalidActionError(f"{path}: key {key!r} appears twice after NFC", field=path)
        out[key] = _normalize(item, _join(path, key), depth + 1)
    if "amount" in out and "currency" in out:
        money = Money.parse(
            value["amount"],
            value["currency"],
            field=_join(path, "amount"),
            currency_field=_join(path, "currency"),
        )
        out["amount"] = money.minor
        out["currency"] = money.currency
    return out


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def _decimal(value: Decimal, path: str) -> Json:
    if not value.is_finite():
        raise InvalidActionError(f"{path}: numbers must be finite", field=path)
    if value == value.to_integral_value():
        return int(value)
    as_float = float(value)
    if Decimal(repr(as_float)) != value.normalize():
        raise InvalidActionError(
            f"{path}: {value} is not exactly representable as a JSON number; pass a string",
            field=path,
        )
    return as_float
