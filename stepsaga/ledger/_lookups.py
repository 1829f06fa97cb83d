"""Which DynamoDB index serves which ledger listing: the one rule table, and the index
attributes each record and recon item carries so the indexes can serve it.

Every listing is a ``Query`` of a fixed number of index partitions, merged by the shared
sort key ``pos`` (``{created_at}#{id}``), so its API calls depend on the page size, never
on the table's size:

============================  ==============================  ============================
filters given                 index (``table.py``)            partitions queried
============================  ==============================  ============================
``case`` (+- tenant, status)   ``by-case``                     1; tenant/status filtered
                                                              (bounded by the case)
tenant + status               ``by-tenant`` (open items:      ``LOOKUP_SHARDS`` (open
                              ``open-items-by-tenant``;       items: 1)
                              in-flight records:
                              ``by-status``, tenant filtered)
tenant                        as tenant + status              one set per status
status                        ``by-status``                   ``LOOKUP_SHARDS``
none                          ``by-status``                   statuses x ``LOOKUP_SHARDS``
sweep (stale leases)          ``by-status`` (in flight,       ``LOOKUP_SHARDS``
                              lease filtered)
============================  ==============================  ============================

What each write costs is what decides which entries exist (#24: a clean case paid 30 of
its 36 write units in index entries). A claim (``IN_PROGRESS``) is written to ``by-status``
and ``by-case`` only: in-flight records are few (bounded by concurrency, not by history),
so a tenant's in-flight records and the sweep's stale claims are read from the in-flight
partitions of ``by-status`` with a filter, and the claim needs neither a ``by-tenant`` entry
(added once, when it settles) nor a ``leases`` entry (added, then removed). Everything
else is indexed as before, so every listing keeps its meaning.

Why shards: a single partition key (``R#IN_PROGRESS``, or one busy tenant's
``R#{tenant}#COMPLETED``) would take every one of those writes and cap them at one GSI
partition's 1,000 writes/s, which throttles the base table too. A fixed shard (CRC-32 of
the id) spreads them; the reader queries each shard and merges (k-way, by sort key), a
constant fan-out.

Items written before an index existed, or under an older layout, lack today's attributes:
``stepsaga ledger reindex`` gives them (``docs/reference/lookups.md``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from stepsaga.ledger._table import (
    BY_CASE_INDEX,
    BY_CASE_PARTITION_KEY,
    BY_STATUS_INDEX,
    BY_STATUS_PARTITION_KEY,
    BY_TENANT_INDEX,
    BY_TENANT_PARTITION_KEY,
    LOOKUP_SHARDS,
    LOOKUP_SORT_KEY,
    OPEN_ITEMS_INDEX,
    OPEN_ITEMS_PARTITION_KEY,
    OPEN_ITEMS_SORT_KEY,
    OPEN_ITEMS_TENANT_PREFIX,
)

__all__ = [
    "IN_FLIGHT",
    "LEASE_ATTRIBUTE",
    "Kind",
    "Partition",
    "index_attributes",
    "lease_partitions",
    "partitions",
    "position",
]

#: The recon status whose tenant partition is the older ``open-items-by-tenant`` index.
_OPEN = "OPEN"
#: The record status read from ``by-status`` alone (with a filter) while it lasts.
IN_FLIGHT = "IN_PROGRESS"
#: The attribute the sweep filters in-flight records on (time text: sorts as it reads).
LEASE_ATTRIBUTE = "lease_expires_at"


class Kind(StrEnum):
    """What an index entry is: the prefix of its partition keys."""

    RECORD = "R"
    ITEM = "I"


@dataclass(frozen=True)
class Partition:
    """One index partition to ``Query``: ``key_attribute = key``, sorted by
    ``sort_attribute``; ``filters`` (attribute, value) narrow it to equal values,
    ``lease_before`` to leases that ended before it (time text)."""

    index: str
    key_attribute: str
    key: str
    sort_attribute: str = LOOKUP_SORT_KEY
    filters: tuple[tuple[str, str], ...] = ()
    lease_before: str | None = None


def position(created_at: str, identity: str) -> str:
    """The sort key of a listing: time text first, so it sorts by time, then the id."""
    return f"{created_at}#{identity}"


def _shard(identity: str) -> int:
    return zlib.crc32(identity.encode()) % LOOKUP_SHARDS


def index_attributes(
    kind: Kind,
    *,
    identity: str,
    tenant: str,
    case: str,
    status: str,
    created_at: str,
) -> dict[str, str]:
    """The index attributes (all strings) of one record or item, as ``partitions`` reads them."""
    pos = position(created_at, identity)
    shard = _shard(identity)
    attributes = {
        LOOKUP_SORT_KEY: pos,
        BY_STATUS_PARTITION_KEY: f"{kind}#{status}#{shard}",
        BY_CASE_PARTITION_KEY: f"{kind}#{case}",
    }
    if kind is Kind.ITEM and status == _OPEN:
        attributes[OPEN_ITEMS_PARTITION_KEY] = f"{OPEN_ITEMS_TENANT_PREFIX}{tenant}"
        attributes[OPEN_ITEMS_SORT_KEY] = pos
    elif not (kind is Kind.RECORD and status == IN_FLIGHT):
        attributes[BY_TENANT_PARTITION_KEY] = f"{kind}#{tenant}#{status}#{shard}"
    return attributes


def _by_status(
    kind: Kind,
    status: str,
    filters: tuple[tuple[str, str], ...] = (),
    lease_before: str | None = None,
) -> list[Partition]:
    return [
        Partition(
            BY_STATUS_INDEX,
            BY_STATUS_PARTITION_KEY,
            f"{kind}#{status}#{shard}",
            filters=filters,
            lease_before=lease_before,
        )
        for shard in range(LOOKUP_SHARDS)
    ]


def _by_tenant(kind: Kind, tenant: str, status: str) -> list[Partition]:
    if kind is Kind.ITEM and status == _OPEN:
        return [
            Partition(
                OPEN_ITEMS_INDEX,
                OPEN_ITEMS_PARTITION_KEY,
                f"{OPEN_ITEMS_TENANT_PREFIX}{tenant}",
                OPEN_ITEMS_SORT_KEY,
            )
        ]
    if kind is Kind.RECORD and status == IN_FLIGHT:
        return _by_status(kind, status, filters=(("tenant_id", tenant),))
    return [
        Partition(BY_TENANT_INDEX, BY_TENANT_PARTITION_KEY, f"{kind}#{tenant}#{status}#{shard}")
        for shard in range(LOOKUP_SHARDS)
    ]


def partitions(
    kind: Kind,
    statuses: Sequence[str],
    *,
    tenant: str | None = None,
    case: str | None = None,
    status: str | None = None,
) -> list[Partition]:
    """The partitions whose merge is exactly the listing (the module's table);
    ``statuses`` are every status ``kind`` can have."""
    if case is not None:
        filters = tuple((a, v) for a, v in (("tenant_id", tenant), ("status", status)) if v)
        return [Partition(BY_CASE_INDEX, BY_CASE_PARTITION_KEY, f"{kind}#{case}", filters=filters)]
    wanted = [status] if status is not None else list(statuses)
    if tenant is not None:
        return [p for s in wanted for p in _by_tenant(kind, tenant, s)]
    return [p for s in wanted for p in _by_status(kind, s)]


def lease_partitions(before: str) -> list[Partition]:
    """The sweep: in-flight records whose lease ended before ``before`` (time text)."""
    return _by_status(Kind.RECORD, IN_FLIGHT, lease_before=before)
