"""The one opaque page-token codec, shared by ``stepsaga list`` (``backends/_listing.py``)
and the ledger's listings (``ledger/_paging.py``).

A token is URL-safe base64 of compact JSON of a frozen pydantic model that says where the
next page starts and carries a digest of the filters it was made for. Decoding refuses,
with one line naming ``--next-token``, anything that is not such a model, that is longer
than ``MAX_TOKEN_CHARS``, or whose ``filters`` differ from the caller's: a token replayed
with other filters would silently skip or repeat rows.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from stepsaga.errors import InvalidInputError

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_TOKEN_CHARS",
    "check_limit",
    "decode",
    "digest",
    "encode",
]

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
#: A token longer than this is not one we made (ours are well under 1 KiB).
MAX_TOKEN_CHARS = 4096

M = TypeVar("M", bound=BaseModel)


def digest(*filters: object) -> str:
    """What a token is bound to: a short SHA-256 of the filters as given."""
    return hashlib.sha256(json.dumps(list(filters), default=str).encode()).hexdigest()[:16]


def check_limit(limit: int | None) -> int:
    """``--limit``: a whole number from 1 to ``MAX_LIMIT``; ``None`` is ``DEFAULT_LIMIT``."""
    size = DEFAULT_LIMIT if limit is None else limit
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_LIMIT:
        raise InvalidInputError(
            f"--limit must be a whole number from 1 to {MAX_LIMIT}", field="limit"
        )
    return size


def encode(token: BaseModel) -> str:
    text = json.dumps(token.model_dump(mode="json", exclude_defaults=True), separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def refused() -> InvalidInputError:
    return InvalidInputError(
        "--next-token: not a token of this listing (made for other filters or another "
        "backend, or damaged); list again without it",
        field="next_token",
    )


def decode(
    kind: type[M],
    token: str,
    *,
    accept: Callable[[M], bool],
    prepare: Callable[[dict[str, Any]], None] | None = None,
) -> M:
    """The ``kind`` that ``token`` encodes if ``accept`` takes it (same filters, same
    backend); else ``InvalidInputError`` naming ``--next-token``. ``prepare`` adjusts the
    decoded JSON first (tuples arrive as lists)."""
    text = token.strip()
    if not text or len(text) > MAX_TOKEN_CHARS:
        raise refused()
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        data = json.loads(raw.decode())
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if prepare is not None:
            prepare(data)
        decoded = kind.model_validate(data)
    except (binascii.Error, ValueError, UnicodeDecodeError, ValidationError):
        raise refused() from None
    if not accept(decoded):
        raise refused()
    return decoded
