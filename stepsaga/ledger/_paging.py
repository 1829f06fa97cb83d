"""The ledger's page tokens: a store's position (``Page.after``) made opaque and bound to
the listing and its filters, with the codec ``stepsaga list`` uses (``stepsaga._util.paging``).

Both stores give the same positions (``{time}#{id}``), so a token names no backend: a
SQLite ledger copied to DynamoDB pages on where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from stepsaga._util import paging

__all__ = ["LedgerPage", "Listing", "decode_token", "encode_token"]

T = TypeVar("T")

Listing = Literal["records", "items", "sweep"]
#: ``{fixed-width UTC time}#{id}``: what both stores' positions look like.
_POSITION = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z#[^#\s][^\s]{0,400}$"


class _Token(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    v: Literal[1] = 1
    listing: Listing
    filters: str
    after: str = Field(pattern=_POSITION)


@dataclass(frozen=True)
class LedgerPage(Generic[T]):
    """One page of a ledger listing; ``next_token`` (opaque) fetches the next with the same
    filters, ``None`` when there is none."""

    items: tuple[T, ...]
    next_token: str | None = None


def encode_token(listing: Listing, filters: tuple[object, ...], after: str | None) -> str | None:
    if after is None:
        return None
    return paging.encode(_Token(listing=listing, filters=paging.digest(*filters), after=after))


def decode_token(listing: Listing, filters: tuple[object, ...], token: str | None) -> str | None:
    """The position ``token`` holds, if it was made for this listing with these filters;
    else ``InvalidInputError`` naming ``--next-token``."""
    if token is None:
        return None
    wanted = paging.digest(*filters)
    decoded = paging.decode(
        _Token, token, accept=lambda t: t.listing == listing and t.filters == wanted
    )
    return decoded.after
