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
#: (``stepsaga.backends.aws.pointers``).
CASE_PREFIX: Final = "CASE#"
#: Digits of the revision in a pointer's sort key (``MAX_REVISION`` has 7: sort by the
#: ``revision`` attribute, never by the key).
POINTER_REVISION_DIGITS: Final = 6
