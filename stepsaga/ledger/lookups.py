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
tenant + status               ``by-tenant`` (open items:      1
                              ``open-items-by-tenant``)
tenant                        ``by-tenant`` (+ open items)    one per status
status                        ``by-status``                   ``LOOKUP_SHARDS``
none                          ``by-status``                   statuses x ``LOOKUP_SHARDS``
sweep (stale leases)          ``leases``                      ``LOOKUP_SHARDS``
============================  ==============================  ============================

Why shards: without ``--tenant`` a single partition key (``R#IN_PROGRESS``) would take
every claim's write and cap the whole ledger at one GSI partition's 1,000 writes/s, which
throttles the base table too. A fixed shard (CRC-32 of the id) spreads those writes; the
reader queries each shard and merges (k-way, by sort key), a constant fan-out. A tenant's
own partitions carry only that tenant's writes and are not sharded.

Items written before these indexes existed lack the attributes: they are not listed until
their next write (a claim, an outcome, a resolution) adds them (``docs/lookups.md``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from stepsaga.ledger.table import (
    BY_CASE_INDEX,
    BY_CASE_PARTITION_KEY,
    BY_STATUS_INDEX,
    BY_STATUS_PARTITION_KEY,
    BY_TENANT_INDEX,
    BY_TENANT_PARTITION_KEY,
    LEASES_INDEX,
    LEASES_PARTITION_KEY,
    LEASES_SORT_KEY,
    LOOKUP_SHARDS,
    LOOKUP_SORT_KEY,
    OPEN_ITEMS_INDEX,
    OPEN_ITEMS_PARTITION_KEY,
    OPEN_ITEMS_SORT_KEY,
    OPEN_ITEMS_TENANT_PREFIX,
)

__all__ = ["Kind", "Partition", "index_attributes", "lease_partitions", "partitions", "position"]

#: The recon status whose tenant partition is the older ``open-items-by-tenant`` index.
_OPEN = "OPEN"


class Kind(StrEnum):
    """What an index entry is: the prefix of its partition keys."""

    RECORD = "R"
    ITEM = "I"


@dataclass(frozen=True)
class Partition:
    """One index partition to ``Query``: ``key_attribute = key``, sorted by
    ``sort_attribute``; ``filters`` (attribute, value) narrow it; ``before`` bounds the
    sort key from above (exclusive)."""

    index: str
    key_attribute: str
    key: str
    sort_attribute: str = LOOKUP_SORT_KEY
    filters: tuple[tuple[str, str], ...] = ()
    before: str | None = None


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
    lease_expires_at: str | None = None,
) -> dict[str, str]:
    """The index attributes (all strings) of one record or item, as ``partitions`` reads them."""
    pos = position(created_at, identity)
    attributes = {
        LOOKUP_SORT_KEY: pos,
        BY_STATUS_PARTITION_KEY: f"{kind}#{status}#{_shard(identity)}",
        BY_CASE_PARTITION_KEY: f"{kind}#{case}",
    }
    if kind is Kind.ITEM and status == _OPEN:
        attributes[OPEN_ITEMS_PARTITION_KEY] = f"{OPEN_ITEMS_TENANT_PREFIX}{tenant}"
        attributes[OPEN_ITEMS_SORT_KEY] = pos
    else:
        attributes[BY_TENANT_PARTITION_KEY] = f"{kind}#{tenant}#{status}"
    if kind is Kind.RECORD and status == "IN_PROGRESS" and lease_expires_at is not None:
        attributes[LEASES_PARTITION_KEY] = f"L#{_shard(identity)}"
        attributes[LEASES_SORT_KEY] = position(lease_expires_at, identity)
    return attributes


def _by_tenant(kind: Kind, tenant: str, status: str) -> Partition:
    if kind is Kind.ITEM and status == _OPEN:
        return Partition(
            OPEN_ITEMS_INDEX,
            OPEN_ITEMS_PARTITION_KEY,
            f"{OPEN_ITEMS_TENANT_PREFIX}{tenant}",
            OPEN_ITEMS_SORT_KEY,
        )
    return Partition(BY_TENANT_INDEX, BY_TENANT_PARTITION_KEY, f"{kind}#{tenant}#{status}")


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
        return [_by_tenant(kind, tenant, s) for s in wanted]
    return [
        Partition(BY_STATUS_INDEX, BY_STATUS_PARTITION_KEY, f"{kind}#{s}#{shard}")
        for s in wanted
        for shard in range(LOOKUP_SHARDS)
    ]


def lease_partitions(before: str) -> list[Partition]:
    """The sweep: leases that ended before ``before`` (time text), in every shard."""
    return [
        Partition(LEASES_INDEX, LEASES_PARTITION_KEY, f"L#{shard}", LEASES_SORT_KEY, before=before)
        for shard in range(LOOKUP_SHARDS)
    ]
