"""What each chaos case suffers, decided by a seed: its case file, its faults, its kills.

A plan is pure data: the same seed gives the same cases, faults and kill points, so a
failing invariant is reproduced with the seed and the case index it prints. Cases come in
pairs that share a case id under two tenants (tenant isolation under fire), and each case
has its own SKU so stock never couples one case's outcome to another's.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

TENANTS = ("acme", "globex")

#: The sagas a plan may run: the seeded plans run the first; hand-written ones may run the
#: multi-warehouse saga (a per-item step and a parallel group).
REPLACEMENT_ORDER = "replacement-order"
MULTI_WAREHOUSE = "multi-warehouse-replacement"
#: The lines of a multi-warehouse case (one reservation each).
LINES = ("L1", "L2", "L3")

#: Forward operations and the compensation, as the ledger's records name them (last part).
LEDGER_OPERATIONS = ("reserve_stock", "refund_payment", "create_shipment", "release_reservation")

#: States of the replacement-order saga a kill may strike on entering.
STATES = (
    "ReserveStock",
    "RefundPayment",
    "CreateShipment",
    "ReconcileReserveStock",
    "ReconcileRefundPayment",
    "ReconcileCreateShipment",
    "AwaitDecisionRefundPayment",
    "AwaitDecisionCreateShipment",
    "EscalateRefundPayment",
    "ReleaseReservation",
    "RecordReleaseReservationFailure",
    "Compensated",
)

#: (service, operation) pairs of the simulated services; the first four apply effects.
WRITES = (
    ("inventory", "reserve"),
    ("inventory", "release"),
    ("payments", "refund"),
    ("shipping", "create_shipment"),
)
READS = (
    ("inventory", "find_reservation"),
    ("payments", "find_refund_by_key"),
    ("shipping", "find_shipment_by_reference"),
)

#: Fault kinds and how often each is drawn (``reject`` is rarer, so most cases complete).
WRITE_FAULTS = {
    "throttle": 3,
    "timeout_before_effect": 3,
    "lose_response": 3,
    "reject": 2,
    "slow": 1,
    "crash_after_effect": 3,
}
READ_FAULTS = {"throttle": 2, "timeout_before_effect": 2, "lose_response": 2, "slow": 1}


class KillSite(StrEnum):
    """Where a kill strikes the process running the saga."""

    AFTER_CLAIM = "after_claim"
    """The ledger committed a claim (``IN_PROGRESS``); nothing was sent downstream yet."""
    AFTER_RECORD = "after_record"
    """The ledger recorded the outcome; the engine has not recorded the task's success.
    On a one-file home this is inside the shared transaction: the outcome is not committed
    yet, and dies with the process."""
    BEFORE_CLAIM = "before_claim"
    """About to claim: the previous step's outcome and the engine's checkpoint are
    committed (on a one-file home, by one shared commit); this step's effect not sent."""
    STATE_ENTERED = "state_entered"
    """The engine entered a state (between states of the execution)."""
    AFTER_RESOLVE = "after_resolve"
    """An operator's decision is committed in the ledger; the waiting case not yet resumed."""
    CRASH_AFTER_EFFECT = "crash_after_effect"
    """A downstream effect is committed; the ledger has not heard of it (a fault rule)."""


@dataclass(frozen=True)
class KillPoint:
    """One kill, fired at its first opportunity and never again (per case)."""

    site: KillSite
    target: str = ""
    """The ledger operation (claim/record), the state (state_entered), or empty."""

    @property
    def id(self) -> str:
        return f"{self.site.value}:{self.target}" if self.target else self.site.value


@dataclass(frozen=True)
class CasePlan:
    index: int
    tenant_id: str
    case_id: str
    case: dict[str, Any] = field(compare=False)
    """The case file's JSON."""
    faults: tuple[dict[str, Any], ...] = field(compare=False)
    """The faults file's rules (attached to this case only)."""
    kills: tuple[KillPoint, ...]
    saga: str = REPLACEMENT_ORDER

    @property
    def reservations(self) -> int:
        """How many reservations the case makes when it completes (one per line)."""
        return len(self.case.get("lines", ())) or 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.tenant_id, self.case_id)

    @property
    def label(self) -> str:
        return f"#{self.index} {self.tenant_id}/{self.case_id}"

    def describe(self) -> str:
        """Everything needed to reproduce the case, on one line."""
        return json.dumps(
            {
                "index": self.index,
                "saga": self.saga,
                "tenant_id": self.tenant_id,
                "case_id": self.case_id,
                "faults": list(self.faults),
                "kills": [kill.id for kill in self.kills],
            },
            sort_keys=True,
        )


def make_plans(seed: int, cases: int, approved_at: datetime) -> list[CasePlan]:
    """``cases`` plans from ``seed``; every case approved at ``approved_at``."""
    rng = random.Random(seed)  # noqa: S311 (reproducible chaos, not secrets)
    stamp = approved_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return [_plan(rng, index, stamp) for index in range(cases)]


def scenario(
    index: int,
    approved_at: datetime,
    faults: tuple[dict[str, Any], ...] = (),
    kills: tuple[KillPoint, ...] = (),
    saga: str = REPLACEMENT_ORDER,
) -> CasePlan:
    """A hand-written plan: this case (tenant and id as the seeded ones) of ``saga``, these
    faults, these kills (``crash_after_effect`` kills come from the faults, as in seeded
    plans)."""
    stamp = approved_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    tenant = TENANTS[index % len(TENANTS)]
    case_id = f"CASE-{index // len(TENANTS):05d}"
    crash_ops = [rule["operation"] for rule in faults if rule["fault"] == "crash_after_effect"]
    kills += tuple(KillPoint(KillSite.CRASH_AFTER_EFFECT, op) for op in crash_ops)
    case = _case(random.Random(index), index, tenant, case_id, stamp)  # noqa: S311
    if saga == MULTI_WAREHOUSE:
        case = _multi_warehouse_case(case, index)
    return CasePlan(index, tenant, case_id, case, faults, kills, saga)


def _plan(rng: random.Random, index: int, approved_at: str) -> CasePlan:
    tenant = TENANTS[index % len(TENANTS)]
    case_id = f"CASE-{index // len(TENANTS):05d}"
    faults = _faults(rng)
    compensates = any(
        rule["fault"] == "reject" and rule["operation"] in ("refund", "create_shipment")
        for rule in faults
    )
    kills = _kills(rng, compensates)
    crash_ops = [rule["operation"] for rule in faults if rule["fault"] == "crash_after_effect"]
    kills += tuple(KillPoint(KillSite.CRASH_AFTER_EFFECT, op) for op in crash_ops)
    return CasePlan(
        index, tenant, case_id, _case(rng, index, tenant, case_id, approved_at), faults, kills
    )


def _case(
    rng: random.Random, index: int, tenant: str, case_id: str, approved_at: str
) -> dict[str, Any]:
    currency, amount = rng.choice(
        [("USD", "20.00"), ("USD", 20), ("EUR", "7.5"), ("JPY", 1500), ("USD", "0.01")]
    )
    sku = f"SKU-{index:05d}"
    quantity = rng.randint(1, 3)
    return {
        "tenant_id": tenant,
        "case_id": case_id,
        "approval": {"approved_by": "ops@example.com", "approved_at": approved_at, "revision": 1},
        "order_id": f"ORD-{index:05d}",
        "reserve": {"sku": sku, "quantity": quantity, "warehouse": rng.choice(["eu-west", "us"])},
        "refund": {"payment_id": f"PAY-{index:05d}", "amount": amount, "currency": currency},
        "shipment": {
            "address": {
                "name": "A. Buyer",
                "line1": "1 Main St",
                "city": "Berlin",
                "postal_code": "10115",
                "country": "DE",
            },
            "items": [{"sku": sku, "quantity": quantity}],
        },
    }


def _multi_warehouse_case(case: dict[str, Any], index: int) -> dict[str, Any]:
    """The same case as several lines, each reserved in its own warehouse."""
    lines = [
        {"line_id": line, "sku": f"SKU-{index:05d}-{line}", "quantity": 1, "warehouse": house}
        for line, house in zip(LINES, ("eu-west", "eu-central", "us"), strict=True)
    ]
    multi = {k: v for k, v in case.items() if k != "reserve"}
    multi["lines"] = lines
    return multi


def _faults(rng: random.Random) -> tuple[dict[str, Any], ...]:
    rules: dict[str, dict[str, Any]] = {}
    for _ in range(rng.choices([0, 1, 2, 3], weights=[2, 4, 3, 2])[0]):
        write = rng.random() < 0.75
        service, operation = rng.choice(WRITES if write else READS)
        kinds = WRITE_FAULTS if write else READ_FAULTS
        kind = rng.choices(list(kinds), weights=list(kinds.values()))[0]
        rule: dict[str, Any] = {"service": service, "operation": operation, "fault": kind}
        if kind == "slow":
            rule["seconds"] = rng.choice([0.5, 5.0, 30.0])
        if kind == "reject" and rng.random() < 0.5:
            pass  # permanent: every call is refused
        elif rng.random() < 0.2:
            rule["attempt"] = rng.randint(1, 2)
        else:
            rule["times"] = rng.choice([1, 1, 2, 3])
        rules.setdefault(json.dumps(rule, sort_keys=True), rule)
    return tuple(rules.values())


#: Where a kill strikes inside a compensation (drawn more often for cases that compensate).
COMPENSATION_KILLS = (
    KillPoint(KillSite.AFTER_CLAIM, "release_reservation"),
    KillPoint(KillSite.AFTER_RECORD, "release_reservation"),
    KillPoint(KillSite.STATE_ENTERED, "ReleaseReservation"),
    KillPoint(KillSite.STATE_ENTERED, "EscalateRefundPayment"),
)


#: The sites the seeded plan draws its other kills from. ``before_claim`` is not drawn (the
#: seeded figures stay comparable across versions); its own tests strike it
#: (tests/framework/chaos/test_shared_commit_kills.py).
DRAWN_SITES = (
    KillSite.AFTER_CLAIM,
    KillSite.AFTER_RECORD,
    KillSite.STATE_ENTERED,
    KillSite.AFTER_RESOLVE,
)


def _kills(rng: random.Random, compensates: bool) -> tuple[KillPoint, ...]:
    kills: dict[str, KillPoint] = {}
    if compensates and rng.random() < 0.6:
        kill = rng.choice(COMPENSATION_KILLS)
        kills[kill.id] = kill
    for _ in range(rng.choices([0, 1, 2], weights=[4, 4, 2])[0]):
        site = rng.choice(DRAWN_SITES)
        if site is KillSite.STATE_ENTERED:
            kill = KillPoint(site, rng.choice(STATES))
        elif site is KillSite.AFTER_RESOLVE:
            kill = KillPoint(site)
        else:
            kill = KillPoint(site, rng.choice(LEDGER_OPERATIONS))
        kills.setdefault(kill.id, kill)
    return tuple(kills.values())


def revised(plan: CasePlan, approved_at: datetime, *, change_refund: bool) -> dict[str, Any]:
    """The plan's case re-approved as revision 2 (the "new revision after completion or
    compensation" plan): the same terms, or the refund's amount changed."""
    case: dict[str, Any] = json.loads(json.dumps(plan.case))
    case["approval"] = {
        **case["approval"],
        "revision": 2,
        "approved_at": approved_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if change_refund:
        case["refund"]["amount"] = 99  # whole units: valid in every currency drawn
    return case
