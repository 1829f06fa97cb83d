"""The DynamoDB table layout, shared by the ledger adapter and the CDK stack.

One table holds action records, reconciliation items and tenant budgets (single-table
design); the CDK stack creates exactly this shape, so both read these names from here.
"""

from typing import Final

PARTITION_KEY: Final = "pk"
SORT_KEY: Final = "sk"
#: Epoch seconds; DynamoDB TTL deletes the item some time (up to days) after this.
TTL_ATTRIBUTE: Final = "expires_at"

#: Sparse GSI: only OPEN reconciliation items carry these attributes.
OPEN_ITEMS_INDEX: Final = "open-items-by-tenant"
OPEN_ITEMS_PARTITION_KEY: Final = "gsi1pk"
OPEN_ITEMS_SORT_KEY: Final = "gsi1sk"

#: Item keys (``pk`` prefix + fixed ``sk``): action records, tenant budgets, recon items.
ACTION_PREFIX: Final = "ACTION#"
ACTION_SORT: Final = "ACTION"
BUDGET_PREFIX: Final = "BUDGET#"
BUDGET_SORT: Final = "BUDGET"
#: A tenant's budget is split over shard items ``BUDGET#{tenant}`` / ``SHARD#{i:03d}`` (one
#: partition key, so one strongly consistent ``Query`` of 1 RRU reads the whole budget);
#: a debit updates one shard, so concurrent claims of one tenant rarely touch the same item.
#: An item with ``sk`` ``BUDGET`` (the layout before shards) counts as one more shard.
BUDGET_SHARD_PREFIX: Final = "SHARD#"
#: Shards ``set_budget`` writes; more shards, fewer conflicts, more fragmentation.
BUDGET_SHARDS: Final = 8
RECON_PREFIX: Final = "RECON#"
RECON_SORT: Final = "RECON"
#: One audit record per resolved item (``AUDIT#{item_id}`` / ``RESOLUTION``), written once,
#: never updated, no ``expires_at``: who decided outlives the records it decided.
AUDIT_PREFIX: Final = "AUDIT#"
AUDIT_SORT: Final = "RESOLUTION"
#: Open recon items: ``gsi1pk`` = this prefix + tenant, ``gsi1sk`` = ``{created_at}#{item_id}``.
OPEN_ITEMS_TENANT_PREFIX: Final = "TENANT#"
#: Case → execution pointers (``CASE#{case_id}`` / ``{tenant}#{revision:06d}``), one per
#: started revision, written before ``StartExecution`` and never updated, with no
#: ``expires_at``: a case id finds its executions with one ``Query`` on its partition, even
#: after AWS forgets executions closed more than 90 days ago
#: (``stepsaga.backends._aws.pointers``).
CASE_PREFIX: Final = "CASE#"
#: Digits of the revision in a pointer's sort key (``MAX_REVISION`` has 7: sort by the
#: ``revision`` attribute, never by the key).
POINTER_REVISION_DIGITS: Final = 6

# --- lookups (``stepsaga.ledger._lookups`` decides which index serves which listing) ---------
#: Records (``R#``) and recon items (``I#``) share these GSIs: an item carries each index's
#: partition attribute, and all three share the sort attribute ``pos`` =
#: ``{created_at}#{key or item_id}`` (fixed-width UTC time: sorts as it reads).
LOOKUP_SORT_KEY: Final = "pos"
#: ``tpk`` = ``{R|I}#{tenant}#{status}#{shard}``: a tenant's settled records and resolved
#: items in one status, by time (OPEN items use ``OPEN_ITEMS_INDEX``, which holds them since
#: before this index; in-flight records are read from ``by-status``, tenant filtered).
BY_TENANT_INDEX: Final = "by-tenant"
BY_TENANT_PARTITION_KEY: Final = "tpk"
#: ``spk`` = ``{R|I}#{status}#{shard}``: every tenant's records/items in one status, spread
#: over ``LOOKUP_SHARDS`` partitions so no single key takes every claim's write.
BY_STATUS_INDEX: Final = "by-status"
BY_STATUS_PARTITION_KEY: Final = "spk"
#: ``cpk`` = ``{R|I}#{case_id}``: one case's records/items (any tenant sharing the case id).
BY_CASE_INDEX: Final = "by-case"
BY_CASE_PARTITION_KEY: Final = "cpk"
#: Retired: the ``leases`` index (``lpk`` = ``L#{shard}``, ``lsk`` = ``{lease}#{key}``) cost
#: every claim an entry added and removed; the sweep now filters the in-flight partitions
#: of ``by-status``. A stack that has it drops it on its next deploy (one GSI deletion);
#: ``stepsaga ledger reindex`` removes the attributes from items.
RETIRED_ATTRIBUTES: Final = ("lpk", "lsk")
#: Partitions per key that many writes share (a status; a tenant's status): 4 times
#: DynamoDB's 1,000 writes/s per partition key, and 4 Queries per key a listing reads.
LOOKUP_SHARDS: Final = 4
#: Every GSI: name → (partition key, sort key) attribute, all strings, projecting ALL; the
#: CDK construct, ``create_table`` and the grants (``dynamodb:Query`` on exactly these) read it.
GSIS: Final[dict[str, tuple[str, str]]] = {
    OPEN_ITEMS_INDEX: (OPEN_ITEMS_PARTITION_KEY, OPEN_ITEMS_SORT_KEY),
    BY_TENANT_INDEX: (BY_TENANT_PARTITION_KEY, LOOKUP_SORT_KEY),
    BY_STATUS_INDEX: (BY_STATUS_PARTITION_KEY, LOOKUP_SORT_KEY),
    BY_CASE_INDEX: (BY_CASE_PARTITION_KEY, LOOKUP_SORT_KEY),
}
#: Every attribute an index reads or read (``lookups.index_attributes`` sets a subset of
#: them per item): what ``DynamoDBStore.reindex`` compares, and removes where unused.
LOOKUP_ATTRIBUTES: Final = tuple(
    dict.fromkeys([*(a for keys in GSIS.values() for a in keys), *RETIRED_ATTRIBUTES])
)
