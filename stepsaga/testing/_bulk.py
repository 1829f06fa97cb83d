"""A synthetic ledger history of any size, for tests and benchmarks of the lookups.

``history(n, now=…)`` makes ``n`` records over ``TENANTS`` tenants (three operations per
case, statuses in fixed proportions) and one recon item per five records, half of them
resolved. Exactly ``STALE`` records are ``IN_PROGRESS`` with a lease that ended an hour
before ``now`` (what a sweep finds), and at most ``LIVE`` more, the newest, hold live
leases, whatever ``n`` is: claims in flight are bounded by concurrency, not by history,
so a sweep or a listing of in-flight records does the same work at every size.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from stepsaga._model.keys import action_key
from stepsaga.ledger._models import EffectClass, ReconItem, ReconStatus, Record, Status

__all__ = ["LIVE", "STALE", "TENANTS", "history", "open_backlog"]

TENANTS = 10
STALE = 40
LIVE = 20
_OPERATIONS = ("reserve_stock", "refund_payment", "create_shipment")
#: Status of record ``i`` by ``i % 10``: mostly completed, a few of every other status.
_STATUSES = (
    Status.COMPLETED,
    Status.COMPLETED,
    Status.COMPLETED,
    Status.COMPLETED,
    Status.FAILED,
    Status.UNKNOWN,
    Status.RELEASED,
    Status.COMPLETED,
    Status.IN_PROGRESS,
    Status.COMPLETED,
)


def history(n: int, *, now: datetime) -> tuple[list[Record], list[ReconItem]]:
    """``n`` records (oldest first, one second apart, ending at ``now``) and their items."""
    records: list[Record] = []
    items: list[ReconItem] = []
    stale = 0
    for i in range(n):
        tenant = f"tenant-{i % TENANTS}"
        case = f"CASE-{i // len(_OPERATIONS)}"
        operation = _OPERATIONS[i % len(_OPERATIONS)]
        created = now - timedelta(seconds=n - i)
        status = _STATUSES[i % len(_STATUSES)]
        lease = None
        if status is Status.IN_PROGRESS:
            stale_one = stale < STALE
            stale += stale_one
            lease = now - timedelta(hours=1) if stale_one else now + timedelta(hours=1)
            if not stale_one and i < n - LIVE * len(_STATUSES):
                status, lease = Status.COMPLETED, None  # finished long ago
        key = action_key(tenant, case, 1, operation)
        records.append(
            Record(
                key=key,
                tenant_id=tenant,
                case_id=case,
                revision=1,
                operation=operation,
                effect=EffectClass.KEYED_WRITE,
                digest="0" * 64,
                status=status,
                owner=f"owner-{i}",
                lease_expires_at=lease,
                attempts=1,
                result={"ok": True} if status is Status.COMPLETED else None,
                error=None,
                reference=None,
                cost=None,
                created_at=created,
                updated_at=created,
                expires_at=(now + timedelta(days=14)).replace(microsecond=0),
            )
        )
        if i % 5 == 0:
            resolved = (i // 5) % 2 == 1
            items.append(
                ReconItem(
                    item_id=f"rec-{i:024d}",
                    record_key=key,
                    tenant_id=tenant,
                    case_id=case,
                    reason="outcome unknown",
                    step="CreateShipment",
                    evidence={"i": i},
                    status=ReconStatus.RESOLVED if resolved else ReconStatus.OPEN,
                    created_at=created,
                    updated_at=created,
                    resolved_by="ops@example.com" if resolved else None,
                    resolved_at=created if resolved else None,
                )
            )
    return records, items


def open_backlog(n: int, *, tenant: str, now: datetime) -> list[ReconItem]:
    """``n`` OPEN items of one tenant, one per compensated case (``BACKLOG-{i}``): what a
    home that has lived carries, for tests that lookups by case stay flat."""
    items = []
    for i in range(n):
        created = now - timedelta(seconds=n - i)
        case = f"BACKLOG-{i}"
        items.append(
            ReconItem(
                item_id=f"backlog-{i:024d}",
                record_key=action_key(tenant, case, 1, "create_shipment"),
                tenant_id=tenant,
                case_id=case,
                reason="outcome unknown",
                step="CreateShipment",
                evidence={"i": i},
                status=ReconStatus.OPEN,
                created_at=created,
                updated_at=created,
            )
        )
    return items
