"""The DynamoDB store: one table (``table.py``) holding records, budgets and recon items.

Claims are conditional ``PutItem`` calls with ``ReturnValuesOnConditionCheckFailure=ALL_OLD``
(a lost race returns the winner's record without another read); anything touching a budget
or two items is one ``TransactWriteItems`` whose ``CancellationReasons`` say which condition
failed. Reads by key are strongly consistent (listings read GSIs, which are not). Client
errors are wrapped with ``raise … from``.

Item layout (``pk`` / ``sk``):
- action record ``ACTION#{key}`` / ``ACTION``; TTL ``expires_at`` in epoch seconds;
- tenant budget: shards ``BUDGET#{tenant}`` / ``SHARD#{i:03d}``, each with a numeric
  ``remaining`` (the budget is their sum; an item ``BUDGET#{tenant}`` / ``BUDGET`` from before
  shards counts as one more). A debit reads them (one strongly consistent ``Query``: a
  tenant without a budget learns it there and pays no transaction), then updates one shard
  in the claim's transaction; the record's ``budget_shard`` names it for the refund;
- recon item ``RECON#{item_id}`` / ``RECON``; ``gsi1pk`` = ``TENANT#{tenant}`` and
  ``gsi1sk`` = ``{created_at}#{item_id}`` only while OPEN (the sparse index);
  ``dual_control`` (BOOL) and ``first_approval`` (JSON) under dual control;
- audit record ``AUDIT#{item_id}`` / ``RESOLUTION``: one more ``Put`` (condition
  ``attribute_not_exists``) in the resolution's own ``TransactWriteItems``;
- on records and items, the index attributes of ``lookups.py``: every listing is a
  ``Query`` of a fixed set of index partitions (eventually consistent, as GSIs are);
- extra items (``stepsaga.ledger._writes``: session cursors and the like) under the caller's
  own ``pk`` / ``sk``, scalar attributes as ``S`` / ``N`` / ``BOOL``;
- a case's latest acting revision ``ACTION#{tenant}:{case}`` / ``LATEST_REVISION``
  (``stepsaga.ledger._latest``), an extra write of the ledger's own in every claim.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

from stepsaga.errors import InvalidInputError, StepSagaError, StoreUnavailableError
from stepsaga.ledger._codec import (
    json_text,
    opt_parse_time,
    opt_time_text,
    parse_json,
    parse_time,
    time_text,
)
from stepsaga.ledger._contention import CONFLICT_RETRY, ConflictRetry
from stepsaga.ledger._lookups import (
    LEASE_ATTRIBUTE,
    Kind,
    Partition,
    index_attributes,
    lease_partitions,
    partitions,
)
from stepsaga.ledger._models import (
    EffectClass,
    ReconItem,
    ReconOutcome,
    ReconStatus,
    Record,
    ResolutionAudit,
    Signoff,
    Status,
)
from stepsaga.ledger._shards import candidates, gathering, split
from stepsaga.ledger._store import Expect, ItemWrite, Page, WriteOutcome, WriteResult
from stepsaga.ledger._table import (
    ACTION_PREFIX,
    ACTION_SORT,
    AUDIT_PREFIX,
    AUDIT_SORT,
    BUDGET_PREFIX,
    BUDGET_SHARD_PREFIX,
    BUDGET_SHARDS,
    BUDGET_SORT,
    GSIS,
    LOOKUP_ATTRIBUTES,
    PARTITION_KEY,
    RECON_PREFIX,
    RECON_SORT,
    SORT_KEY,
    TTL_ATTRIBUTE,
)
from stepsaga.ledger._writes import ConditionKind, ExtraWrite, Scalar

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
T = TypeVar("T")


_UNAVAILABLE = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TransactionConflictException",
    "TransactionInProgressException",
    "InternalServerError",
    "ServiceUnavailable",
    "LimitExceededException",
}
_PASS_THROUGH = {"ConditionalCheckFailedException", "TransactionCanceledException"}
_CONFLICT = "TransactionConflict"
#: Shards one ``set_budget`` may write (its transaction also deletes the old ones: ≤ 100).
MAX_BUDGET_SHARDS = 32


class _ConflictError(Exception):
    """A concurrent transaction touched one of our items: nothing was written."""


@dataclass(frozen=True)
class Reindexed:
    """What ``DynamoDBStore.reindex`` did: items read, items whose index attributes it fixed."""

    scanned: int
    updated: int


class DynamoDBStore:
    """``LedgerStore`` over one DynamoDB table, through a boto3 client."""

    def __init__(
        self,
        table: str,
        client: DynamoDBClient,
        *,
        budget_shards: int = BUDGET_SHARDS,
        conflict_retry: ConflictRetry = CONFLICT_RETRY,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``budget_shards``: how many items ``set_budget`` splits a budget over (1 is the
        single hot item of before); ``rng`` chooses shards and jitter; ``sleep`` waits."""
        if isinstance(budget_shards, bool) or not isinstance(budget_shards, int):
            raise InvalidInputError("budget_shards must be an integer", field="budget_shards")
        if not 1 <= budget_shards <= MAX_BUDGET_SHARDS:
            raise InvalidInputError(
                f"budget_shards must be between 1 and {MAX_BUDGET_SHARDS}", field="budget_shards"
            )
        self.table = table
        self.client = client
        self.budget_shards = budget_shards
        self._retry = conflict_retry
        self._rng = rng or random.Random()  # noqa: S311 (shard choice and jitter, not secrets)
        self._sleep = sleep

    def close(self) -> None:
        self.client.close()

    def replica_regions(self) -> list[str]:
        """The regions the table is replicated to (``DescribeTable``); empty for a table
        that is not a global table."""
        with self._aws():
            table = self.client.describe_table(TableName=self.table)["Table"]
        return [str(r["RegionName"]) for r in table.get("Replicas", []) if "RegionName" in r]

    # --- records ---------------------------------------------------------------------

    def get(self, key: str) -> Record | None:
        with self._aws():
            response = self.client.get_item(
                TableName=self.table,
                Key=_key(ACTION_PREFIX + key, ACTION_SORT),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return _record(item) if item else None

    def put(
        self,
        record: Record,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        extra: Sequence[ExtraWrite] = (),
    ) -> WriteOutcome:
        put = {"TableName": self.table, "Item": _record_item(record), **_record_condition(expect)}
        if budget_delta < 0:
            return self._put_debiting(record, put, -budget_delta, extra)
        if not budget_delta and not extra:
            try:
                with self._aws():
                    self.client.put_item(**put, ReturnValuesOnConditionCheckFailure="ALL_OLD")
            except ClientError as exc:  # only the conditional failure passes through
                old: Item | None = exc.response.get("Item")  # type: ignore[assignment]
                return WriteOutcome(WriteResult.STALE, current=_record(old) if old else None)
            return WriteOutcome(WriteResult.WRITTEN)
        transaction: list[Item] = [
            {"Put": {**put, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}
        ]
        if budget_delta:  # a refund, to the shard debited
            transaction.append({"Update": self._refund(record.tenant_id, budget_delta, record)})
        first_extra = len(transaction)
        transaction += [self._extra_operation(write) for write in extra]
        reasons = self._transact(transaction)
        if reasons is None:
            return WriteOutcome(WriteResult.WRITTEN)
        if _failed(reasons, 0):
            return _stale(reasons)
        return self._extra_failed(reasons, first_extra)

    def _put_debiting(
        self, record: Record, put: Item, cost: int, extra: Sequence[ExtraWrite]
    ) -> WriteOutcome:
        """Read the shards; none: ``NO_BUDGET`` with nothing written (no transaction).
        Else debit one that covered ``cost`` (random, then the others), gathering the
        budget into one shard first when none does alone; re-read after a round in which
        every candidate conflicted or was drained, up to the conflict policy's attempts."""
        tenant = record.tenant_id
        delays = self._retry.delays(self._rng.random)
        conflicted = False
        for round_ in range(self._retry.attempts):
            if round_:
                self._sleep(next(delays))
            shards = self._shards(tenant)
            if not shards:
                return WriteOutcome(WriteResult.NO_BUDGET)
            total = sum(shards.values())
            if total < cost:
                return WriteOutcome(WriteResult.BUDGET_SHORT, remaining=total)
            order = candidates(shards, cost, self._rng)
            if not order:
                conflicted = self._gather(tenant, shards, cost) or conflicted
                continue
            for shard in order:
                debited = replace(record, budget_shard=shard)
                transaction: list[Item] = [
                    {
                        "Put": {
                            **put,
                            "Item": _record_item(debited),
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {"Update": self._debit(tenant, shard, cost)},
                    *(self._extra_operation(write) for write in extra),
                ]
                try:
                    reasons = self._transact_once(transaction)
                except _ConflictError:
                    conflicted = True
                    continue  # another claim is on this shard: try the next one
                if reasons is None:
                    return WriteOutcome(WriteResult.WRITTEN, written=debited)
                if _failed(reasons, 0):
                    return _stale(reasons)
                if _failed(reasons, 1):
                    continue  # drained since the read
                return self._extra_failed(reasons, 2)
        raise StoreUnavailableError(
            f"tenant {tenant}'s budget: concurrent transactions kept taking its shards; retry",
            table=self.table,
            code=_CONFLICT if conflicted else "BudgetContended",
        )

    # --- extra items -----------------------------------------------------------------

    def get_extra(self, pk: str, sk: str) -> dict[str, Scalar] | None:
        with self._aws():
            response = self.client.get_item(
                TableName=self.table, Key=_key(pk, sk), ConsistentRead=True
            )
        item = response.get("Item")
        return None if item is None else _scalars(item)

    def put_extra(self, extra: Sequence[ExtraWrite]) -> WriteOutcome:
        reasons = self._transact([self._extra_operation(write) for write in extra])
        if reasons is None:
            return WriteOutcome(WriteResult.WRITTEN)
        return self._extra_failed(reasons, 0)

    def _extra_operation(self, write: ExtraWrite) -> Item:
        """An ``Update`` setting the attributes (or a ``ConditionCheck`` setting none)."""
        operation: Item = {"TableName": self.table, "Key": _key(write.pk, write.sk)}
        names: dict[str, str] = {}
        values: Item = {}
        condition = write.condition
        if condition is not None:
            if condition.kind is ConditionKind.ABSENT:
                operation["ConditionExpression"] = f"attribute_not_exists({PARTITION_KEY})"
            elif condition.kind is ConditionKind.PRESENT:
                operation["ConditionExpression"] = f"attribute_exists({PARTITION_KEY})"
            else:
                names["#c"] = str(condition.attribute)
                values[":c"] = _scalar_value(condition.value)
                operation["ConditionExpression"] = (
                    "attribute_not_exists(#c) OR #c <= :c"
                    if condition.kind is ConditionKind.AT_MOST
                    else "#c = :c"
                )
        if not write.attributes:
            kind = "ConditionCheck"
        else:
            kind = "Update"
            sets, removes = [], []
            for i, (name, value) in enumerate(write.attributes.items()):
                names[f"#a{i}"] = name
                if value is None:
                    removes.append(f"#a{i}")
                else:
                    values[f":a{i}"] = _scalar_value(value)
                    sets.append(f"#a{i} = :a{i}")
            expression = ("SET " + ", ".join(sets)) if sets else ""
            if removes:
                expression += (" " if expression else "") + "REMOVE " + ", ".join(removes)
            operation["UpdateExpression"] = expression
        if names:
            operation["ExpressionAttributeNames"] = names
        if values:
            operation["ExpressionAttributeValues"] = values
        return {kind: operation}

    def _extra_failed(self, reasons: list[Item], first_extra: int) -> WriteOutcome:
        for index in range(first_extra, len(reasons)):
            if _failed(reasons, index):
                return WriteOutcome(WriteResult.CONDITION_FAILED, failed_write=index - first_extra)
        raise _cancelled(reasons)

    def query(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: Status | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[Record]:
        where = partitions(
            Kind.RECORD,
            [s.value for s in Status],
            tenant=tenant,
            case=case,
            status=status.value if status else None,
        )
        return self._page(where, limit=limit, after=after, read=_record)

    def stale(
        self, *, lease_expired_before: datetime, limit: int, after: str | None = None
    ) -> Page[Record]:
        where = lease_partitions(time_text(lease_expired_before))
        return self._page(where, limit=limit, after=after, read=_record)

    def bulk_insert(self, records: Iterable[Record], items: Iterable[ReconItem] = ()) -> int:
        """Put many records and items unconditionally, 25 per ``BatchWriteItem`` (imports,
        benchmarks; never the claim path), with their index attributes. Returns how many."""
        puts = [_record_item(r) for r in records] + [_recon_item(i) for i in items]
        for start in range(0, len(puts), 25):
            pending: Any = {
                self.table: [{"PutRequest": {"Item": item}} for item in puts[start : start + 25]]
            }
            while pending:
                with self._aws():
                    response = self.client.batch_write_item(RequestItems=pending)
                pending = response.get("UnprocessedItems") or None
                if pending:
                    self._sleep(0.05)
        return len(puts)

    def reindex(self, *, page_size: int = 100) -> Reindexed:
        """Give every record and item the index attributes today's layout gives it
        (``stepsaga ledger reindex``): items written before an index existed, or under an
        older layout, are otherwise missing from the listings and case lookups that read
        that index. One ``Scan`` of the table, run once by an operator after an upgrade;
        each fix is an ``UpdateItem`` conditional on the item's ``updated_at``, so a write
        made meanwhile (which carries the attributes already) is never overwritten.
        Repeatable: a second run changes nothing."""
        scanned = fixed = 0
        request: Item = {"TableName": self.table, "Limit": page_size}
        while True:
            with self._aws():
                response = self.client.scan(**request)
            for raw in response.get("Items", []):
                scanned += 1
                fixed += self._reindex_one(raw)
            start = response.get("LastEvaluatedKey")
            if not start:
                return Reindexed(scanned=scanned, updated=fixed)
            request["ExclusiveStartKey"] = start

    def _reindex_one(self, raw: Item) -> bool:
        pk = str(raw[PARTITION_KEY]["S"])
        if pk.startswith(ACTION_PREFIX):
            wanted = _record_lookups(_record(raw))
        elif pk.startswith(RECON_PREFIX):
            wanted = _recon_lookups(_recon(raw))
        else:
            return False  # budgets, pointers, audit records: in no listing index
        stale = [a for a in LOOKUP_ATTRIBUTES if a in raw and a not in wanted]
        changed = {a: v for a, v in wanted.items() if raw.get(a) != {"S": v}}
        if not stale and not changed:
            return False
        names = {f"#a{i}": a for i, a in enumerate([*changed, *stale])}
        alias = {a: n for n, a in names.items()}
        values: Item = {f":v{i}": {"S": v} for i, v in enumerate(changed.values())}
        values[":u"] = raw["updated_at"]
        expression = ""
        if changed:
            expression += "SET " + ", ".join(f"{alias[a]} = :v{i}" for i, a in enumerate(changed))
        if stale:
            expression += " REMOVE " + ", ".join(alias[a] for a in stale)
        names["#u"] = "updated_at"
        try:
            with self._aws():
                self.client.update_item(
                    TableName=self.table,
                    Key=_key(pk, str(raw[SORT_KEY]["S"])),
                    UpdateExpression=expression.strip(),
                    ConditionExpression="#u = :u",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise _wrap(exc, self.table) from exc
            return False  # written meanwhile: that write carries today's attributes
        return True

    # --- budgets ---------------------------------------------------------------------

    def get_budget(self, tenant_id: str) -> int | None:
        shards = self._shards(tenant_id)
        return sum(shards.values()) if shards else None

    def set_budget(self, tenant_id: str, amount: int) -> None:
        """One transaction: ``amount`` split over ``budget_shards`` items, older ones deleted."""
        pk = BUDGET_PREFIX + tenant_id
        parts = {
            f"{BUDGET_SHARD_PREFIX}{i:03d}": part
            for i, part in enumerate(split(amount, self.budget_shards))
        }
        transaction: list[Item] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {
                        **_key(pk, sk),
                        "tenant_id": {"S": tenant_id},
                        "remaining": {"N": str(part)},
                    },
                }
            }
            for sk, part in parts.items()
        ]
        transaction += [
            {"Delete": {"TableName": self.table, "Key": _key(pk, sk)}}
            for sk in self._shards(tenant_id)
            if sk not in parts
        ]
        reasons = self._transact(transaction)
        if reasons is not None:
            raise _cancelled(reasons)

    def _shards(self, tenant_id: str) -> dict[str, int]:
        """The tenant's budget shards (sort key → remaining), strongly consistent."""
        shards: dict[str, int] = {}
        paginator = self.client.get_paginator("query")
        with self._aws():
            for page in paginator.paginate(
                TableName=self.table,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": PARTITION_KEY},
                ExpressionAttributeValues={":pk": {"S": BUDGET_PREFIX + tenant_id}},
                ConsistentRead=True,
            ):
                for item in page.get("Items", []):
                    if "remaining" in item:
                        shards[str(item[SORT_KEY]["S"])] = int(item["remaining"]["N"])
        return shards

    def _debit(self, tenant_id: str, shard: str, amount: int) -> Item:
        return {
            "TableName": self.table,
            "Key": _key(BUDGET_PREFIX + tenant_id, shard),
            "UpdateExpression": "SET remaining = remaining - :amount",
            "ConditionExpression": "attribute_exists(remaining) AND remaining >= :amount",
            "ExpressionAttributeValues": {":amount": {"N": str(amount)}},
        }

    def _refund(self, tenant_id: str, amount: int, record: Record | None) -> Item:
        """Back to the shard debited (a record from before shards: the single item)."""
        shard = record.budget_shard if record and record.budget_shard else BUDGET_SORT
        return self._add(tenant_id, shard, amount)

    def _add(self, tenant_id: str, shard: str, amount: int) -> Item:
        return {
            "TableName": self.table,
            "Key": _key(BUDGET_PREFIX + tenant_id, shard),
            "UpdateExpression": "ADD remaining :amount",
            "ExpressionAttributeValues": {":amount": {"N": str(amount)}},
        }

    def _gather(self, tenant_id: str, shards: Mapping[str, int], cost: int) -> bool:
        """Move the fewest shards' remaining (as read, largest first) into the largest, in
        one transaction that keeps the total, so a cost no single shard covers can be
        debited. Whether it conflicted; a failed condition (a shard changed since the read)
        is left to the next read."""
        target, *others = gathering(shards, cost)
        transaction: list[Item] = [
            {"Update": self._debit(tenant_id, sk, shards[sk])} for sk in others
        ]
        moved = sum(shards[sk] for sk in others)
        transaction.append({"Update": self._add(tenant_id, target, moved)})
        try:
            self._transact_once(transaction)
        except _ConflictError:
            return True
        return False

    # --- reconciliation items --------------------------------------------------------

    def get_item(self, item_id: str) -> ReconItem | None:
        with self._aws():
            response = self.client.get_item(
                TableName=self.table,
                Key=_key(RECON_PREFIX + item_id, RECON_SORT),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return _recon(item) if item else None

    def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
        try:
            with self._aws():
                self.client.put_item(
                    TableName=self.table,
                    Item=_recon_item(item),
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **_item_condition(expect, approval_of=item if expect else None),
                )
        except ClientError as exc:
            old: Item | None = exc.response.get("Item")  # type: ignore[assignment]
            return ItemWrite(False, _recon(old) if old else None)
        return ItemWrite(True)

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        if record_expect is None and record is not None:
            raise ValueError("a record is written only under record_expect")
        transaction: list[Item] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": _recon_item(item),
                    **_item_condition(ReconStatus.OPEN, token_of=item, approval_of=item),
                }
            }
        ]
        # No expectation: the record must not exist (an item about an unclaimed action).
        condition = _record_condition(record_expect)
        if record is None:
            transaction.append(
                {
                    "ConditionCheck": {
                        "TableName": self.table,
                        "Key": _key(ACTION_PREFIX + item.record_key, ACTION_SORT),
                        **condition,
                    }
                }
            )
        else:
            transaction.append(
                {"Put": {"TableName": self.table, "Item": _record_item(record), **condition}}
            )
        if audit is not None:
            transaction.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": _audit_item(audit),
                        "ConditionExpression": f"attribute_not_exists({PARTITION_KEY})",
                    }
                }
            )
        if budget_delta > 0:
            transaction.append({"Update": self._refund(item.tenant_id, budget_delta, record)})
        elif budget_delta:
            raise ValueError("a resolution only refunds")
        reasons = self._transact(transaction)
        if reasons is None:
            return WriteResult.WRITTEN
        if _failed(reasons, 0) or _failed(reasons, 1) or (audit and _failed(reasons, 2)):
            return WriteResult.STALE
        raise _cancelled(reasons)

    def put_first_approval(self, item: ReconItem) -> ItemWrite:
        condition = _item_condition(ReconStatus.OPEN, token_of=item)
        condition["ExpressionAttributeNames"]["#first"] = "first_approval"
        condition["ConditionExpression"] += " AND attribute_not_exists(#first)"
        try:
            with self._aws():
                self.client.put_item(TableName=self.table, Item=_recon_item(item), **condition)
        except ClientError:  # the condition failed (``_aws`` passes only that through)
            return ItemWrite(False)
        return ItemWrite(True)

    def get_audit(self, item_id: str) -> ResolutionAudit | None:
        with self._aws():
            response = self.client.get_item(
                TableName=self.table,
                Key=_key(AUDIT_PREFIX + item_id, AUDIT_SORT),
                ConsistentRead=True,
            )
        raw = response.get("Item")
        if raw is None:
            return None
        if "record" not in raw:
            return _legacy_audit(raw)
        return ResolutionAudit.from_dict(parse_json(_s(raw, "record")) or {})

    def query_items(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: ReconStatus | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[ReconItem]:
        where = partitions(
            Kind.ITEM,
            [s.value for s in ReconStatus],
            tenant=tenant,
            case=case,
            status=status.value if status else None,
        )
        return self._page(where, limit=limit, after=after, read=_recon)

    # --- plumbing --------------------------------------------------------------------

    def _page(
        self,
        where: Sequence[Partition],
        *,
        limit: int,
        after: str | None,
        read: Callable[[Item], T],
    ) -> Page[T]:
        """Merge the partitions (k-way, by sort key): the first ``limit + 1`` entries of
        each after ``after`` hold the first ``limit + 1`` of their union, so ``limit``
        bounds the calls, whatever the table holds."""
        found: list[tuple[str, Item]] = []
        for partition in where:
            found += self._range(partition, after, limit + 1)
        found.sort(key=lambda entry: entry[0])
        chosen = found[:limit]
        more = len(found) > limit
        return Page(tuple(read(raw) for _, raw in chosen), chosen[-1][0] if more else None)

    def _range(self, partition: Partition, after: str | None, want: int) -> list[tuple[str, Item]]:
        """Up to ``want`` entries of one partition after ``after``, with their sort keys;
        filtered partitions read on until ``want`` match."""
        names = {"#pk": partition.key_attribute}
        values: Item = {":pk": {"S": partition.key}}
        condition = "#pk = :pk"
        if after is not None:
            condition += " AND #sk > :after"
            names["#sk"] = partition.sort_attribute
            values[":after"] = {"S": after}
        request: Item = {
            "TableName": self.table,
            "IndexName": partition.index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "Limit": want,
        }
        clauses = []
        for i, (attribute, value) in enumerate(partition.filters):
            names[f"#f{i}"] = attribute
            values[f":f{i}"] = {"S": value}
            clauses.append(f"#f{i} = :f{i}")
        if partition.lease_before is not None:
            names["#lease"] = LEASE_ATTRIBUTE
            values[":lease"] = {"S": partition.lease_before}
            clauses.append("#lease < :lease")
        if clauses:
            request["FilterExpression"] = " AND ".join(clauses)
        entries: list[tuple[str, Item]] = []
        while len(entries) < want:
            with self._aws():
                response = self.client.query(**request)
            for raw in response.get("Items", []):
                entries.append((str(raw[partition.sort_attribute]["S"]), raw))
            start = response.get("LastEvaluatedKey")
            if not start:
                break
            request["ExclusiveStartKey"] = start
        return entries[:want]

    def _transact(self, transaction: list[Item]) -> list[Item] | None:
        """Run the transaction, again after a conflict as ``contention`` says; None when it
        committed, else its cancellation reasons."""
        delays = self._retry.delays(self._rng.random)
        while True:
            try:
                return self._transact_once(transaction)
            except _ConflictError as exc:
                delay = next(delays, None)
                if delay is None:
                    raise StoreUnavailableError(
                        "a concurrent transaction touched the same items; retry",
                        table=self.table,
                        code=_CONFLICT,
                    ) from exc
                self._sleep(delay)

    def _transact_once(self, transaction: list[Item]) -> list[Item] | None:
        """One try: None when it committed, else its cancellation reasons; ``_ConflictError``
        when a concurrent transaction cancelled it."""
        try:
            with self._aws():
                self.client.transact_write_items(TransactItems=transaction)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise _wrap(exc, self.table) from exc
            reasons: list[Item] = list(exc.response.get("CancellationReasons", []))  # type: ignore[arg-type]
            if any(r.get("Code") == _CONFLICT for r in reasons):
                raise _ConflictError from exc
            return reasons
        return None

    @contextmanager
    def _aws(self) -> Iterator[None]:
        """botocore failures as our error family; conditional failures pass through."""
        try:
            yield
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _PASS_THROUGH:
                raise
            raise _wrap(exc, self.table) from exc
        except (NoCredentialsError, NoRegionError) as exc:
            raise InvalidInputError(f"DynamoDB client not configured: {exc}", field="url") from exc
        except BotoCoreError as exc:
            raise StoreUnavailableError(f"DynamoDB unreachable: {exc}", table=self.table) from exc


def _wrap(exc: ClientError, table: str) -> StepSagaError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = str(error.get("Message", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    if code in _UNAVAILABLE or status >= 500:
        return StoreUnavailableError(
            f"DynamoDB is busy or failing ({code}); retry", table=table, code=code
        )
    if code == "ResourceNotFoundException":
        return InvalidInputError(f"DynamoDB table {table!r} does not exist", field="url")
    return InvalidInputError(f"DynamoDB refused the request ({code}: {message})", field="url")


def _cancelled(reasons: list[Item]) -> StepSagaError:
    codes = ", ".join(str(r.get("Code")) for r in reasons)
    return StoreUnavailableError(f"DynamoDB cancelled the transaction ({codes}); retry")


def _stale(reasons: list[Item]) -> WriteOutcome:
    old = reasons[0].get("Item")
    return WriteOutcome(WriteResult.STALE, current=_record(old) if old else None)


def _failed(reasons: list[Item], index: int) -> bool:
    return len(reasons) > index and reasons[index].get("Code") == "ConditionalCheckFailed"


def _scalar_value(value: Scalar) -> Item:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    return {"S": str(value)}


def _scalars(item: Item) -> dict[str, Scalar]:
    """An extra item's attributes without its keys."""
    decoded: dict[str, Scalar] = {}
    for name, value in item.items():
        if name in (PARTITION_KEY, SORT_KEY):
            continue
        if "BOOL" in value:
            decoded[name] = bool(value["BOOL"])
        elif "N" in value:
            decoded[name] = int(value["N"])
        elif "S" in value:
            decoded[name] = str(value["S"])
    return decoded


def _key(pk: str, sk: str) -> Item:
    return {PARTITION_KEY: {"S": pk}, SORT_KEY: {"S": sk}}


def _record_condition(expect: Expect | None) -> Item:
    if expect is None:
        return {"ConditionExpression": f"attribute_not_exists({PARTITION_KEY})"}
    return {
        "ConditionExpression": "#status = :expect_status AND #owner = :expect_owner",
        "ExpressionAttributeNames": {"#status": "status", "#owner": "owner"},
        "ExpressionAttributeValues": {
            ":expect_status": {"S": expect.status.value},
            ":expect_owner": {"S": expect.owner},
        },
    }


def _item_condition(
    expect: ReconStatus | None,
    *,
    token_of: ReconItem | None = None,
    approval_of: ReconItem | None = None,
) -> Item:
    """Absent (``expect`` None), or the stored status; with ``token_of`` also that item's
    task token (absent when it has none), so a token attached after the read is never
    overwritten; with ``approval_of`` likewise its first approval."""
    if expect is None:
        return {"ConditionExpression": f"attribute_not_exists({PARTITION_KEY})"}
    condition: Item = {
        "ConditionExpression": "#status = :expect_status",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {":expect_status": {"S": expect.value}},
    }
    if token_of is not None:
        _same(condition, "token", "task_token", token_of.task_token)
    if approval_of is not None:
        _same(condition, "first", "first_approval", _approval_text(approval_of.first_approval))
    return condition


def _same(condition: Item, alias: str, name: str, value: str | None) -> None:
    """Add "the stored ``name`` is ``value``" (absent when None) to ``condition``."""
    condition["ExpressionAttributeNames"][f"#{alias}"] = name
    if value is None:
        condition["ConditionExpression"] += f" AND attribute_not_exists(#{alias})"
    else:
        condition["ConditionExpression"] += f" AND #{alias} = :expect_{alias}"
        condition["ExpressionAttributeValues"][f":expect_{alias}"] = {"S": value}


def _legacy_audit(raw: Item) -> ResolutionAudit:
    """An audit record written apart from its resolution (before audit records joined the
    resolution's transaction): flat strings, one decider."""
    text = {name: str(value.get("S", "")) for name, value in raw.items()}
    at = parse_time(text["recorded_at"])
    return ResolutionAudit(
        item_id=text["item_id"],
        tenant_id=text["tenant_id"],
        case_id=text["case_id"],
        step=text["step"],
        action_key=text["action_key"],
        outcome=ReconOutcome(text["outcome"]),
        deciders=(Signoff(by=text["resolved_by"], at=at, note=text.get("note", "")),),
        at=at,
        identity={k: v for k, v in text.items() if k.startswith("caller_")},
    )


def _approval_text(approval: Signoff | None) -> str | None:
    return None if approval is None else json_text(approval.to_dict())


def _audit_item(audit: ResolutionAudit) -> Item:
    """``AUDIT#{item_id}`` / ``RESOLUTION``: flat strings a person can read in the console
    (the identity's details included), and ``record``, the whole audit as JSON."""
    first = audit.deciders[0] if len(audit.deciders) > 1 else None
    raw: Item = {
        **_key(AUDIT_PREFIX + audit.item_id, AUDIT_SORT),
        "item_id": {"S": audit.item_id},
        "tenant_id": {"S": audit.tenant_id},
        "case_id": {"S": audit.case_id},
        "step": {"S": audit.step},
        "action_key": {"S": audit.action_key},
        "outcome": {"S": audit.outcome.value},
        "resolved_by": {"S": audit.resolved_by},
        "note": {"S": audit.deciders[-1].note},
        "recorded_at": {"S": time_text(audit.at)},
        "record": {"S": json_text(audit.to_dict()) or "{}"},
    }
    if first is not None:
        raw["first_approver"] = {"S": first.by}
        raw["first_note"] = {"S": first.note}
    for name, value in audit.identity.items():
        raw[name] = {"S": value}
    return raw


def _put_optional(item: Item, name: str, value: str | int | None) -> None:
    if value is None:
        return
    item[name] = {"N": str(value)} if isinstance(value, int) else {"S": value}


def _record_item(record: Record) -> Item:
    item: Item = {
        **_key(ACTION_PREFIX + record.key, ACTION_SORT),
        "key": {"S": record.key},
        "tenant_id": {"S": record.tenant_id},
        "case_id": {"S": record.case_id},
        "revision": {"N": str(record.revision)},
        "operation": {"S": record.operation},
        "effect": {"S": record.effect.value},
        "digest": {"S": record.digest},
        "status": {"S": record.status.value},
        "owner": {"S": record.owner},
        "attempts": {"N": str(record.attempts)},
        "debited": {"N": str(record.debited)},
        "created_at": {"S": time_text(record.created_at)},
        "updated_at": {"S": time_text(record.updated_at)},
        TTL_ATTRIBUTE: {"N": str(int(record.expires_at.timestamp()))},
    }
    _put_optional(item, "lease_expires_at", opt_time_text(record.lease_expires_at))
    _put_optional(item, "result", json_text(record.result))
    _put_optional(item, "error", json_text(record.error))
    _put_optional(item, "reference", record.reference)
    _put_optional(item, "cost", record.cost)
    _put_optional(item, "budget_shard", record.budget_shard)
    _put_optional(item, "terms", json_text(record.terms))
    item.update({name: {"S": value} for name, value in _record_lookups(record).items()})
    return item


def _record_lookups(record: Record) -> dict[str, str]:
    return index_attributes(
        Kind.RECORD,
        identity=record.key,
        tenant=record.tenant_id,
        case=record.case_id,
        status=record.status.value,
        created_at=time_text(record.created_at),
    )


def _recon_lookups(item: ReconItem) -> dict[str, str]:
    """Open items only in the sparse open-items index (``lookups.index_attributes``)."""
    return index_attributes(
        Kind.ITEM,
        identity=item.item_id,
        tenant=item.tenant_id,
        case=item.case_id,
        status=item.status.value,
        created_at=time_text(item.created_at),
    )


def _s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def _n(item: Item, name: str) -> int | None:
    value = item.get(name)
    return None if value is None else int(value["N"])


def _record(item: Item) -> Record:
    return Record(
        key=str(item["key"]["S"]),
        tenant_id=str(item["tenant_id"]["S"]),
        case_id=str(item["case_id"]["S"]),
        revision=int(item["revision"]["N"]),
        operation=str(item["operation"]["S"]),
        effect=EffectClass.parse(_s(item, "effect")),
        digest=str(item["digest"]["S"]),
        status=Status(item["status"]["S"]),
        owner=str(item["owner"]["S"]),
        lease_expires_at=opt_parse_time(_s(item, "lease_expires_at")),
        attempts=int(item["attempts"]["N"]),
        result=parse_json(_s(item, "result")),
        error=parse_json(_s(item, "error")),
        reference=_s(item, "reference"),
        cost=_n(item, "cost"),
        debited=_n(item, "debited") or 0,
        budget_shard=_s(item, "budget_shard"),
        created_at=parse_time(str(item["created_at"]["S"])),
        updated_at=parse_time(str(item["updated_at"]["S"])),
        expires_at=datetime.fromtimestamp(int(item[TTL_ATTRIBUTE]["N"]), UTC),
        terms=parse_json(_s(item, "terms")),
    )


def _recon_item(item: ReconItem) -> Item:
    raw: Item = {
        **_key(RECON_PREFIX + item.item_id, RECON_SORT),
        "item_id": {"S": item.item_id},
        "record_key": {"S": item.record_key},
        "tenant_id": {"S": item.tenant_id},
        "case_id": {"S": item.case_id},
        "reason": {"S": item.reason},
        "step": {"S": item.step},
        "evidence": {"S": json_text(item.evidence) or "{}"},
        "status": {"S": item.status.value},
        "created_at": {"S": time_text(item.created_at)},
        "updated_at": {"S": time_text(item.updated_at)},
    }
    raw.update({name: {"S": value} for name, value in _recon_lookups(item).items()})
    _put_optional(raw, "outcome", item.outcome.value if item.outcome else None)
    _put_optional(raw, "resolved_by", item.resolved_by)
    _put_optional(raw, "note", item.note)
    _put_optional(raw, "task_token", item.task_token)
    _put_optional(raw, "resolved_at", opt_time_text(item.resolved_at))
    if item.dual_control:
        raw["dual_control"] = {"BOOL": True}
    _put_optional(raw, "first_approval", _approval_text(item.first_approval))
    return raw


def _recon(raw: Item) -> ReconItem:
    outcome = _s(raw, "outcome")
    return ReconItem(
        item_id=str(raw["item_id"]["S"]),
        record_key=str(raw["record_key"]["S"]),
        tenant_id=str(raw["tenant_id"]["S"]),
        case_id=str(raw["case_id"]["S"]),
        reason=str(raw["reason"]["S"]),
        step=str(raw["step"]["S"]),
        evidence=parse_json(_s(raw, "evidence")) or {},
        status=ReconStatus(raw["status"]["S"]),
        outcome=ReconOutcome(outcome) if outcome else None,
        resolved_by=_s(raw, "resolved_by"),
        note=_s(raw, "note"),
        task_token=_s(raw, "task_token"),
        created_at=parse_time(str(raw["created_at"]["S"])),
        updated_at=parse_time(str(raw["updated_at"]["S"])),
        resolved_at=opt_parse_time(_s(raw, "resolved_at")),
        dual_control=bool(raw.get("dual_control", {}).get("BOOL", False)),
        first_approval=_approval(_s(raw, "first_approval")),
    )


def _approval(text: str | None) -> Signoff | None:
    data = parse_json(text)
    return None if data is None else Signoff.from_dict(data)


def create_table(client: DynamoDBClient, table: str) -> None:
    """Create the ledger table as the CDK stack does (for tests, moto and local trials)."""
    client.create_table(
        TableName=table,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"}
            for name in (
                PARTITION_KEY,
                SORT_KEY,
                *sorted({a for keys in GSIS.values() for a in keys}),
            )
        ],
        KeySchema=[
            {"AttributeName": PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": name,
                "KeySchema": [
                    {"AttributeName": hash_key, "KeyType": "HASH"},
                    {"AttributeName": range_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for name, (hash_key, range_key) in GSIS.items()
        ],
    )
    client.get_waiter("table_exists").wait(TableName=table)
    client.update_time_to_live(
        TableName=table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
    )
