"""The audit chain: each audit record is sealed with a hash linking it to the previous
audit record of its item, and ``verify`` recomputes the chain and names any break.

A record's ``hash`` is SHA-256 over ``previous`` and the record's canonical JSON (RFC 8785,
every field but ``hash``); ``previous`` is the hash of the item's previous audit record, or
for its first the item's genesis (a hash of its id, so a record moved to another item breaks
too). ``Ledger.resolve`` seals the record before the resolution's one transaction writes it
(SQLite and DynamoDB alike): there is no moment with an unsealed record. Today an item has
one audit record (its resolution, both deciders in it under dual control), so its chain is
one link from its genesis; the hash then proves the record is whole and its item's. A writer
who rewrites a record *and* recomputes its hash is caught by the write-once copy in S3
(Object Lock, ``stepsaga._aws.audit_copy``), which no one can change within its retention.

``verify`` also holds each resolved item to its audit record: the item's outcome and its
decider must be the record's (an item rewritten to say something else breaks), and a
resolved item without a record is a break (``MISSING``) unless it was resolved before
records were sealed (``UNSEALED``: listed, not a break).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import rfc8785

from stepsaga.ledger._models import ReconItem, ReconStatus, ResolutionAudit

__all__ = ["AuditBreak", "BreakKind", "Copies", "genesis", "seal", "sealed_hash", "verify"]

_GENESIS_TAG = b"stepsaga-audit-genesis\x00"


def genesis(item_id: str) -> str:
    """Where an item's chain starts: a hash of its id."""
    return hashlib.sha256(_GENESIS_TAG + item_id.encode()).hexdigest()


def sealed_hash(audit: ResolutionAudit, previous: str) -> str:
    """The hash ``audit`` carries when it follows ``previous``."""
    body: dict[str, Any] = {**audit.to_dict(), "previous": previous}
    body.pop("hash", None)
    return hashlib.sha256(previous.encode() + rfc8785.dumps(body)).hexdigest()


def seal(audit: ResolutionAudit, previous: ResolutionAudit | None = None) -> ResolutionAudit:
    """``audit`` linked to ``previous`` (the item's previous record; None: its genesis)."""
    link = previous.digest if previous is not None and previous.digest else None
    before = link or genesis(audit.item_id)
    return replace(audit, previous=before, digest=sealed_hash(audit, before))


class BreakKind(StrEnum):
    MISSING = "missing"
    """A resolved item has no audit record."""
    REWRITTEN = "rewritten"
    """The record's content does not hash to its ``hash``."""
    UNCHAINED = "unchained"
    """The record's ``previous`` is not its item's previous record (or genesis)."""
    CONTRADICTED = "contradicted"
    """The item says another outcome or decider than its audit record."""
    UNCOPIED = "uncopied"
    """No write-once copy of the record (``--against-copies``)."""
    DIFFERS = "differs"
    """The record is not its first write-once copy: rewritten and resealed."""
    UNSEALED = "unsealed"
    """Written before records were sealed: nothing to check (not a break)."""


@dataclass(frozen=True)
class AuditBreak:
    item_id: str
    kind: BreakKind
    detail: str

    @property
    def is_break(self) -> bool:
        return self.kind is not BreakKind.UNSEALED

    def to_dict(self) -> dict[str, str]:
        return {"item_id": self.item_id, "kind": self.kind.value, "detail": self.detail}


#: The first write-once copy of an item's audit record (None: there is none).
Copies = Callable[[str], ResolutionAudit | None]


def verify(
    items: Iterable[tuple[ReconItem, ResolutionAudit | None]],
    copies: Copies | None = None,
) -> Iterator[AuditBreak]:
    """Every break (and unsealed record) of the resolved ``items``, each with its record;
    with ``copies``, each sealed record is also held to its first write-once copy."""
    for item, audit in items:
        if item.status is not ReconStatus.RESOLVED:
            continue
        found = _check(item, audit)
        if found is None and copies is not None and audit is not None:
            found = _against(item.item_id, audit, copies(item.item_id))
        if found is not None:
            yield found


def _against(
    item_id: str, audit: ResolutionAudit, copy: ResolutionAudit | None
) -> AuditBreak | None:
    if copy is None:
        return AuditBreak(item_id, BreakKind.UNCOPIED, "no write-once copy of its audit record")
    if copy.digest != audit.digest:
        return AuditBreak(
            item_id, BreakKind.DIFFERS, "differs from its first write-once copy (rewritten)"
        )
    return None


def _check(item: ReconItem, audit: ResolutionAudit | None) -> AuditBreak | None:
    item_id = item.item_id
    if audit is None:
        return AuditBreak(item_id, BreakKind.MISSING, "resolved, but no audit record")
    if audit.digest is None or audit.previous is None:
        return AuditBreak(item_id, BreakKind.UNSEALED, "recorded before audit records were sealed")
    if audit.item_id != item_id or audit.previous != genesis(item_id):
        return AuditBreak(item_id, BreakKind.UNCHAINED, "its previous hash is not its item's chain")
    if sealed_hash(audit, audit.previous) != audit.digest:
        return AuditBreak(
            item_id, BreakKind.REWRITTEN, "its content does not match its hash (changed after)"
        )
    if (item.outcome, item.resolved_by) != (audit.outcome, audit.resolved_by):
        return AuditBreak(
            item_id,
            BreakKind.CONTRADICTED,
            f"the item says {item.outcome} by {item.resolved_by}, its audit record "
            f"{audit.outcome} by {audit.resolved_by}",
        )
    return None
