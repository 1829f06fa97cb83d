"""Regions: every tenant's ledger writes happen in its home region (docs/reference/multi-region.md).

The ledger's guarantees rest on conditional writes. A DynamoDB global table checks a
condition against the replica it is written to and replicates last-writer-wins: two
regions can both see "no record" and both claim the same action, and one claim silently
overwrites the other. So the supported shape is one writer region per tenant: the
tenant's *home* region owns its claims, outcomes, budget and reconciliation items; other
regions may read replicas (stale by the replication lag) and must route writes home.

``HomeRegions`` says where each tenant lives; ``HomeRegionGuard`` wraps a store and
refuses (``NotHomeRegionError``, nothing written) every write for a tenant whose home is
another region; ``RegionalLedgers`` routes: it opens each tenant's ledger in its home
region. ``open_ledger(url, homes=…)`` puts the guard in place and checks the table's
replicas agree with the map.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from stepsaga.errors import InvalidInputError, NotHomeRegionError
from stepsaga.ledger._models import ReconItem, ReconStatus, Record, ResolutionAudit, check_tenant
from stepsaga.ledger._store import (
    Expect,
    ForwardingStore,
    ItemWrite,
    LedgerStore,
    WriteOutcome,
    WriteResult,
)
from stepsaga.ledger._writes import ExtraWrite

if TYPE_CHECKING:
    from stepsaga.ledger._rules import Ledger

_REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+-[0-9]+$|^local$")


def check_region(region: object, name: str = "region") -> str:
    if not isinstance(region, str) or not _REGION.match(region):
        raise InvalidInputError(
            f"{name} {region!r} is not a region name such as eu-west-1", field=name
        )
    return region


@dataclass(frozen=True)
class HomeRegions:
    """Each tenant's home region; ``default`` for tenants not listed (None: refused)."""

    homes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    default: str | None = None

    def __post_init__(self) -> None:
        for tenant, region in self.homes.items():
            check_tenant(tenant)
            check_region(region, f"home region of {tenant}")
        if self.default is not None:
            check_region(self.default, "default home region")
        object.__setattr__(self, "homes", MappingProxyType(dict(self.homes)))

    def home_of(self, tenant_id: str) -> str:
        home = self.homes.get(tenant_id, self.default)
        if home is None:
            raise InvalidInputError(
                f"tenant {tenant_id} has no home region; its claims cannot be placed",
                field="tenant_id",
            )
        return home

    @property
    def regions(self) -> frozenset[str]:
        every = set(self.homes.values())
        if self.default is not None:
            every.add(self.default)
        return frozenset(every)


class HomeRegionGuard(ForwardingStore):
    """A store that writes only for tenants homed in ``region``; reads pass through."""

    def __init__(self, inner: LedgerStore, *, region: str, homes: HomeRegions) -> None:
        super().__init__(inner)
        self.region = check_region(region)
        self.homes = homes

    def _check(self, tenant_id: str) -> None:
        home = self.homes.home_of(tenant_id)
        if home != self.region:
            raise NotHomeRegionError(
                f"tenant {tenant_id}'s ledger writes belong to its home region {home}, not "
                f"{self.region}; route the call there (nothing written)",
                tenant_id=tenant_id,
                home_region=home,
                region=self.region,
            )

    def put(
        self,
        record: Record,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        extra: Sequence[ExtraWrite] = (),
    ) -> WriteOutcome:
        self._check(record.tenant_id)
        return super().put(record, expect=expect, budget_delta=budget_delta, extra=extra)

    def set_budget(self, tenant_id: str, amount: int) -> None:
        self._check(tenant_id)
        super().set_budget(tenant_id, amount)

    def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
        self._check(item.tenant_id)
        return super().put_item(item, expect=expect)

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        self._check(item.tenant_id)
        return super().resolve(
            item, record, record_expect=record_expect, budget_delta=budget_delta, audit=audit
        )

    def put_first_approval(self, item: ReconItem) -> ItemWrite:
        self._check(item.tenant_id)
        return super().put_first_approval(item)


def check_replicas(replicas: Sequence[str], *, region: str, homes: HomeRegions | None) -> None:
    """Refuse a table layout the guarantees do not survive: a global table (more than one
    replica) without home regions, or a home region the table has no replica in."""
    if homes is None:
        if len(replicas) > 1:
            raise InvalidInputError(
                f"the ledger table is replicated to {', '.join(sorted(replicas))}: conditional "
                "writes are not serialized across replicas, so give every tenant a home "
                "region (open_ledger(url, homes=HomeRegions(...)); docs/reference/multi-region.md)",
                field="homes",
            )
        return
    present = set(replicas) or {region}
    missing = sorted((homes.regions | {region}) - present)
    if missing:
        raise InvalidInputError(
            f"home region(s) {', '.join(missing)} hold no replica of the ledger table "
            f"(replicas: {', '.join(sorted(present))})",
            field="homes",
        )


class RegionalLedgers:
    """Routes each tenant to a ledger opened in its home region (``open_home(region)``),
    each guarded, so a caller in any region writes where the tenant's claims live."""

    def __init__(self, homes: HomeRegions, open_home: Callable[[str], Ledger]) -> None:
        self.homes = homes
        self._open_home = open_home
        self._open: dict[str, Ledger] = {}

    def for_tenant(self, tenant_id: str) -> Ledger:
        region = self.homes.home_of(check_tenant(tenant_id))
        if region not in self._open:
            self._open[region] = self._open_home(region)
        return self._open[region]

    def close(self) -> None:
        for ledger in self._open.values():
            ledger.close()
        self._open.clear()


__all__ = [
    "HomeRegionGuard",
    "HomeRegions",
    "RegionalLedgers",
    "check_region",
    "check_replicas",
]
