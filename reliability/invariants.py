"""The invariants, checked from the outside truth: the services' effects table and the ledger.

Nothing here asks the code under test whether it did the right thing. Effects are counted
in ``services.sqlite3``'s ``effects`` table (written in the same transaction as each effect,
so a row exists iff the effect does); the ledger is read record by record; the outcome is
the execution's as ``status`` derives it.

Per case (tenant + case id):

* **no duplicates** — at most one effect per action key (one reservation per line of a
  multi-warehouse case, one release per reservation, one refund, one shipment), and across
  a case's revisions one refund and one shipment, and no more live reservations (reserved,
  not released) than one revision makes;
* **completed** ⇒ exactly one live reservation (per line), one refund and one shipment;
* **compensated** ⇒ no shipment (replacement order: shipping comes last), every
  reservation released exactly once, and no
  item about the release left open (a release reconciled automatically was decided);
  no other case releases anything, except one whose compensation failed;
* **settled** — every case ends ``completed``, ``compensated``, or ``compensation_failed``
  with an open reconciliation item about that very release (on the release's own action
  key); none running, failed or waiting;
* **ledger agrees with the world** — no record left ``IN_PROGRESS``; an ``UNKNOWN`` record
  has an open item; a ``COMPLETED`` record's effect exists; an effect's record is not
  ``RELEASED``/``FAILED`` (the ledger would let it happen again);
* **isolation** — every record, item and effect of the case carries its tenant and case.

Per tenant: **budget** — what was debited equals what the records hold (nothing debited
twice, nothing lost), each record holding its cost exactly while its effect stands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from reliability.plan import REPLACEMENT_ORDER, CasePlan
from services.simulated import Effect
from stepsaga.backends import CaseOutcome
from stepsaga.ledger import ReconItem, Record, Status
from stepsaga.ledger._models import ReconStatus
from stepsaga.ledger._revisions import ADOPTED_FROM, SUPERSEDES

#: The ledger operation (last part of the record's operation) → the effect it applies.
EFFECT_OF = {
    "reserve_stock": "reserve",
    "refund_payment": "refund",
    "create_shipment": "create_shipment",
    "release_reservation": "release",
}


#: How the release's action key ends (it derives from the reservation's).
RELEASE_KEY = ":reserve_stock:compensate:release_reservation"
#: What every release's key holds, whichever saga (``…#L1:compensate:release_line`` too).
RELEASES = ":compensate:release_"


@dataclass(frozen=True)
class Violation:
    invariant: str
    case: str
    detail: str
    plan: str = ""

    def __str__(self) -> str:
        text = f"{self.invariant}: {self.case}: {self.detail}"
        return f"{text}\n  reproduce: {self.plan}" if self.plan else text


@dataclass(frozen=True)
class CaseTruth:
    """What the world and the ledger show for one case at the end."""

    plan: CasePlan
    outcome: CaseOutcome | None
    """``None``: the case has no execution at all."""
    effects: tuple[Effect, ...]
    records: tuple[Record, ...]
    items: tuple[ReconItem, ...]

    @property
    def counts(self) -> Counter[str]:
        return Counter(str(effect.operation) for effect in self.effects)

    @property
    def open_items(self) -> tuple[ReconItem, ...]:
        return tuple(item for item in self.items if item.status is ReconStatus.OPEN)

    @property
    def per_key(self) -> Counter[tuple[str, str]]:
        """Effects per (operation, action key): a duplicate is a second effect under one
        key."""
        return Counter((str(effect.operation), effect.action_key) for effect in self.effects)

    @property
    def open_release_items(self) -> tuple[ReconItem, ...]:
        """Open items on a release's own action (``…:compensate:release_reservation``)."""
        return tuple(item for item in self.open_items if RELEASES in item.record_key)


def check_case(truth: CaseTruth) -> list[Violation]:
    found: list[str] = []
    counts = truth.counts
    outcome = truth.outcome
    for (operation, key), number in sorted(truth.per_key.items()):
        if number > 1:
            item = key.partition("#")[2].split(":", 1)[0]  # one line of a per-item step
            found.append(f"duplicate: {number} x {operation}" + (f" of {item}" if item else ""))
    found += [f"duplicate: {text}" for text in _across_revisions(truth)]
    live = counts["reserve"] - counts["release"]
    if outcome is CaseOutcome.COMPLETED:
        if live != truth.plan.reservations:
            found.append(f"completed with {live} live reservation(s)")
        for operation in ("refund", "create_shipment"):
            if counts[operation] != 1:
                found.append(f"completed with {counts[operation]} x {operation}")
    elif outcome is CaseOutcome.COMPENSATED:
        # Shipping is the last step of the replacement order; the multi-warehouse saga
        # ships beside the refund, so a rejected refund leaves a shipment (escalated).
        if counts["create_shipment"] and truth.plan.saga == REPLACEMENT_ORDER:
            found.append("compensated, yet shipped")
        if counts["release"] != counts["reserve"]:
            found.append(
                f"compensated with {counts['reserve']} reservation(s) and "
                f"{counts['release']} release(s)"
            )
        if truth.open_release_items:
            found.append("compensated, yet an item about the release is open")
    elif outcome is CaseOutcome.COMPENSATION_FAILED:
        if not truth.open_release_items:
            found.append("compensation failed, and no item about the release is open")
    else:
        found.append(f"not settled: outcome {outcome.value if outcome else 'no execution'}")
    undone = (CaseOutcome.COMPENSATED, CaseOutcome.COMPENSATION_FAILED)
    if counts["release"] and outcome not in undone and not _revised(truth):
        found.append(f"released although {outcome.value if outcome else 'never run'}")
    found += _ledger_vs_world(truth)
    found += _isolation(truth)
    return [Violation(_name(text), truth.plan.label, text, truth.plan.describe()) for text in found]


def _ledger_vs_world(truth: CaseTruth) -> list[str]:
    found: list[str] = []
    effect_keys = {effect.action_key for effect in truth.effects}
    open_keys = {item.record_key for item in truth.open_items}
    for record in truth.records:
        if record.status is Status.IN_PROGRESS:
            found.append(f"ledger: {record.key} left IN_PROGRESS")
        if record.status is Status.UNKNOWN and record.key not in open_keys:
            found.append(f"ledger: {record.key} UNKNOWN with no open item")
        applied_under = {record.key, *_earlier_keys(record)}  # adopted: the earlier key
        if record.status is Status.COMPLETED and not applied_under & effect_keys:
            found.append(f"ledger: {record.key} COMPLETED but its effect never happened")
        if record.status in (Status.RELEASED, Status.FAILED) and record.key in effect_keys:
            found.append(f"ledger: {record.key} {record.status.value} but its effect happened")
    recorded = {record.key for record in truth.records}
    for key in sorted(effect_keys - recorded):
        found.append(f"ledger: an effect under {key} has no record")
    return found


def _across_revisions(truth: CaseTruth) -> list[str]:
    """What a later revision must never add: a second refund or shipment (under its own
    key), or reservations beyond one revision's while the earlier ones stand."""
    found = []
    for operation in ("refund", "create_shipment"):
        keys = {e.action_key for e in truth.effects if str(e.operation) == operation}
        if len(keys) > 1:
            found.append(f"{len(keys)} x {operation} under {len(keys)} revisions' keys")
    live = truth.counts["reserve"] - truth.counts["release"]
    if live > truth.plan.reservations or live < 0:
        found.append(
            f"{truth.counts['reserve']} reservations and {truth.counts['release']} releases"
        )
    return found


def _earlier_keys(record: Record) -> tuple[str, ...]:
    """The earlier revision's key a record adopted or was decided against (revisions.py)."""
    terms = record.terms or {}
    return tuple(str(terms[name]) for name in (ADOPTED_FROM, SUPERSEDES) if name in terms)


def _revised(truth: CaseTruth) -> bool:
    return any(record.revision > 1 for record in truth.records)


def _isolation(truth: CaseTruth) -> list[str]:
    plan = truth.plan
    prefix = f"{plan.tenant_id}:{plan.case_id}:"
    found: list[str] = []
    for record in truth.records:
        if (record.tenant_id, record.case_id) != plan.key or not record.key.startswith(prefix):
            found.append(f"isolation: record {record.key} in the wrong case")
    for item in truth.items:
        if (item.tenant_id, item.case_id) != plan.key or not item.record_key.startswith(prefix):
            found.append(f"isolation: item {item.item_id} ({item.record_key}) in the wrong case")
    for effect in truth.effects:
        if (effect.tenant_id, effect.case_id) != plan.key or not effect.action_key.startswith(
            prefix
        ):
            found.append(f"isolation: effect {effect.id} ({effect.action_key}) in the wrong case")
    return found


def check_budget(
    tenant_id: str, initial: int, remaining: int | None, records: Iterable[Record]
) -> list[Violation]:
    """Debits vs records: ``initial - remaining`` is exactly what the records hold, and each
    record holds its cost while its effect stands (claimed, completed or unknown) and
    nothing once it is known not to have happened (released, failed)."""
    found: list[str] = []
    held = 0
    for record in records:
        held += record.debited
        cost = record.cost or 0
        if record.status in (Status.RELEASED, Status.FAILED):
            if record.debited:
                found.append(f"{record.key} {record.status.value} still holds {record.debited}")
        elif record.debited != cost:
            found.append(f"{record.key} {record.status.value} holds {record.debited}, cost {cost}")
    if remaining is None:
        found.append("the budget row is gone")
    elif initial - remaining != held:
        found.append(
            f"debited {initial - remaining} in total, but the records hold {held} "
            f"({'lost' if initial - remaining > held else 'debited twice'})"
        )
    return [Violation("budget", f"tenant {tenant_id}", text) for text in found]


def check_all(
    truths: Sequence[CaseTruth],
    budgets: Mapping[str, tuple[int, int | None]],
    records_by_tenant: Mapping[str, Sequence[Record]],
) -> list[Violation]:
    violations: list[Violation] = []
    for truth in truths:
        violations += check_case(truth)
    for tenant, (initial, remaining) in sorted(budgets.items()):
        violations += check_budget(tenant, initial, remaining, records_by_tenant.get(tenant, ()))
    return violations


def duplicates(truths: Iterable[CaseTruth]) -> int:
    """Effects one too many, the number that must be 0: beyond the first per action key,
    plus a later revision's second refund or shipment and its extra live reservations."""
    total = 0
    for truth in truths:
        total += sum(max(0, n - 1) for n in truth.per_key.values())
        for operation in ("refund", "create_shipment"):
            keys = {e.action_key for e in truth.effects if str(e.operation) == operation}
            total += max(0, len(keys) - 1)
        live = truth.counts["reserve"] - truth.counts["release"]
        total += max(0, live - truth.plan.reservations)
    return total


def _name(text: str) -> str:
    head = text.split(":", 1)[0]
    return head if head in ("duplicate", "ledger", "isolation") else "outcome"
