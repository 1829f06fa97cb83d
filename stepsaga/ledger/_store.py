"""What a ledger backend must do: store records and change them only conditionally.

Backends know nothing of the rules (leases, budgets, replay); ``rules.Ledger`` decides
what to write and a store reports whether the precondition held. Every write is
all-or-nothing: the record, the tenant budget change and (for reconciliation) the item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Generic, Protocol, TypeVar

from stepsaga.ledger._models import ReconItem, ReconStatus, Record, ResolutionAudit, Status
from stepsaga.ledger._writes import ExtraWrite, Scalar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing, in its order. ``after`` is the position (``lookups.position``:
    ``{time}#{id}``) of the last item when at least one more follows, else None; pass it
    back as ``after`` for the next page. Both stores use the same positions."""

    items: tuple[T, ...]
    after: str | None = None


class WriteResult(Enum):
    WRITTEN = "written"
    STALE = "stale"
    """The record exists (insert) or no longer has the expected status/owner: nothing written."""
    BUDGET_SHORT = "budget_short"
    """The tenant's budget does not cover the debit: nothing written."""
    NO_BUDGET = "no_budget"
    """A debit was asked for but the tenant has no budget: nothing written."""
    CONDITION_FAILED = "condition_failed"
    """An extra write's condition did not hold: nothing written (``failed_write`` says which)."""


@dataclass(frozen=True)
class WriteOutcome:
    result: WriteResult
    current: Record | None = None
    """The stored record when ``STALE``, if the store learned it without another read."""
    remaining: int | None = None
    """The budget left when ``BUDGET_SHORT``, if known."""
    failed_write: int | None = None
    """The index of the extra write whose condition failed (``CONDITION_FAILED``)."""
    written: Record | None = None
    """The record as stored when ``WRITTEN`` and the store added to it (the budget shard a
    debit came from); None: exactly the record given."""


@dataclass(frozen=True)
class Expect:
    """Precondition of a conditional write: the stored record's status and owner."""

    status: Status
    owner: str


@dataclass(frozen=True)
class ItemWrite:
    written: bool
    current: ReconItem | None = None


class LedgerStore(Protocol):
    def get(self, key: str) -> Record | None:
        """The record, or None; never blocks on writers."""
        ...

    def put(
        self,
        record: Record,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        extra: Sequence[ExtraWrite] = (),
    ) -> WriteOutcome:
        """Write ``record`` whole if absent (``expect`` None) or if the stored one has
        ``expect``'s status and owner. In the same transaction add ``budget_delta`` to the
        tenant's budget: negative is a debit (needs a budget that covers it; the store may
        return ``written`` naming the shard debited), positive a refund (to
        ``record.budget_shard``); and apply the ``extra`` writes
        (``stepsaga.ledger._writes``), each only if its condition holds. The ledger passes
        ``extra`` only when there is some, so a wrapper that predates it keeps working for
        actions without extra writes."""
        ...

    def get_extra(self, pk: str, sk: str) -> dict[str, Scalar] | None:
        """An item that extra writes made, or None."""
        ...

    def put_extra(self, extra: Sequence[ExtraWrite]) -> WriteOutcome:
        """Apply ``extra`` alone, in one transaction: ``WRITTEN`` or ``CONDITION_FAILED``."""
        ...

    def query(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: Status | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[Record]:
        """Records matching every given filter, oldest first (by ``created_at``, then key),
        at most ``limit``, starting after position ``after``; from an index, never a scan."""
        ...

    def stale(
        self, *, lease_expired_before: datetime, limit: int, after: str | None = None
    ) -> Page[Record]:
        """``IN_PROGRESS`` records whose lease ended before the given time, in the store's
        order (SQLite: earliest lease first; DynamoDB: oldest claim first)."""
        ...

    def get_budget(self, tenant_id: str) -> int | None: ...

    def set_budget(self, tenant_id: str, amount: int) -> None: ...

    def get_item(self, item_id: str) -> ReconItem | None: ...

    def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
        """Write ``item`` if absent (``expect`` None) or if its stored status is ``expect``
        and its stored first approval is ``item``'s (one written since the read is never
        replaced)."""
        ...

    def put_first_approval(self, item: ReconItem) -> ItemWrite:
        """Write ``item`` (OPEN, its ``first_approval`` set) only if the stored one is OPEN,
        carries ``item.task_token`` and has no first approval yet: of two first approvals
        racing, exactly one is written."""
        ...

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        """One transaction: the item, the record, the budget change and the ``audit``
        record (written only if none exists for the item); ``STALE`` (nothing written)
        when a precondition fails.

        - item: the stored one must be OPEN *and* carry ``item.task_token`` and
          ``item.first_approval`` (both absent counts as equal). ``item`` is built from
          the item as read, so a task token or first approval written after that read
          fails the write instead of being overwritten;
        - record: with ``record_expect``, the stored status/owner must match it (``record``
          None leaves the record unchanged); with ``record_expect`` None there must be no
          record at all (an item about an action that was never claimed; ``record`` must be
          None too).
        """
        ...

    def get_audit(self, item_id: str) -> ResolutionAudit | None:
        """The audit record of the resolved item, or None."""
        ...

    def query_items(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: ReconStatus | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[ReconItem]:
        """Items matching every given filter, oldest first (``created_at``, then id)."""
        ...

    def close(self) -> None: ...


class ForwardingStore:
    """A ``LedgerStore`` that hands every call to ``inner``: subclass it to watch or
    interfere with a few calls (fault injection, race tests) and inherit the rest."""

    def __init__(self, inner: LedgerStore) -> None:
        self._inner = inner

    def get(self, key: str) -> Record | None:
        return self._inner.get(key)

    def put(
        self,
        record: Record,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        extra: Sequence[ExtraWrite] = (),
    ) -> WriteOutcome:
        if not extra:
            return self._inner.put(record, expect=expect, budget_delta=budget_delta)
        return self._inner.put(record, expect=expect, budget_delta=budget_delta, extra=extra)

    def get_extra(self, pk: str, sk: str) -> dict[str, Scalar] | None:
        return self._inner.get_extra(pk, sk)

    def put_extra(self, extra: Sequence[ExtraWrite]) -> WriteOutcome:
        return self._inner.put_extra(extra)

    def query(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: Status | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[Record]:
        return self._inner.query(tenant=tenant, case=case, status=status, limit=limit, after=after)

    def stale(
        self, *, lease_expired_before: datetime, limit: int, after: str | None = None
    ) -> Page[Record]:
        return self._inner.stale(
            lease_expired_before=lease_expired_before, limit=limit, after=after
        )

    def get_budget(self, tenant_id: str) -> int | None:
        return self._inner.get_budget(tenant_id)

    def set_budget(self, tenant_id: str, amount: int) -> None:
        self._inner.set_budget(tenant_id, amount)

    def get_item(self, item_id: str) -> ReconItem | None:
        return self._inner.get_item(item_id)

    def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
        return self._inner.put_item(item, expect=expect)

    def put_first_approval(self, item: ReconItem) -> ItemWrite:
        return self._inner.put_first_approval(item)

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        return self._inner.resolve(
            item, record, record_expect=record_expect, budget_delta=budget_delta, audit=audit
        )

    def get_audit(self, item_id: str) -> ResolutionAudit | None:
        return self._inner.get_audit(item_id)

    def query_items(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: ReconStatus | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[ReconItem]:
        return self._inner.query_items(
            tenant=tenant, case=case, status=status, limit=limit, after=after
        )

    def close(self) -> None:
        self._inner.close()
