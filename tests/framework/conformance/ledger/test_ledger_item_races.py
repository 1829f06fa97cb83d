"""Reconciliation items under interleaving writers, items for never-claimed actions, and
the downstream reference a resolution records — on both stores.

The races are made deterministic with a store wrapper that runs another writer's call
between the ledger's read and its conditional write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepsaga import EffectClass
from stepsaga._reconciliation import resolve
from stepsaga._util.clock import ManualClock
from stepsaga.backends import ReconOutcome
from stepsaga.errors import BudgetExhaustedError, IllegalTransitionError, InvalidInputError
from stepsaga.ledger import Action, Ledger, ReconItem, Record, Status
from stepsaga.ledger._models import Claim, ReconStatus, ResolutionAudit
from stepsaga.ledger._store import (
    Expect,
    ForwardingStore,
    ItemWrite,
    LedgerStore,
    WriteResult,
)
from tests.framework.conformance.ledger.conftest import StoreFactory
from tests.framework.conformance.ledger.helpers import Counter, make_action

Hook = Callable[[], object]


class Interleaved(ForwardingStore):
    """A ``LedgerStore`` that runs ``before_resolve`` / ``before_put_item`` once, just
    before the wrapped write: another writer acting between the ledger's read and write."""

    def __init__(
        self,
        inner: LedgerStore,
        *,
        before_resolve: Hook | None = None,
        before_put_item: Hook | None = None,
    ) -> None:
        super().__init__(inner)
        self._before_resolve = before_resolve
        self._before_put_item = before_put_item

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        hook, self._before_resolve = self._before_resolve, None
        if hook is not None:
            hook()
        return self._inner.resolve(
            item, record, record_expect=record_expect, budget_delta=budget_delta, audit=audit
        )

    def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
        hook = self._before_put_item if expect is not None else None
        if hook is not None:
            self._before_put_item = None
            hook()
        return self._inner.put_item(item, expect=expect)


def shipment(cost: int | None = None) -> Action:
    return make_action("create_shipment", effect=EffectClass.PHYSICAL, cost=cost)


def unknown_item(ledger: Ledger, cost: int | None = None) -> ReconItem:
    """A physical action whose outcome is unknown, and its open item."""
    action = shipment(cost)
    claim = ledger.claim(action)
    assert isinstance(claim, Claim)
    ledger.mark_unknown(claim, "timeout after dispatch")
    return ledger.open_item(
        action.key, "outcome unknown", step="CreateShipment", evidence={"error": "timeout"}
    )


class Sent:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, token: str, output: dict[str, Any]) -> None:
        self.calls.append((token, output))


# --- a task token attached while the item is being resolved -------------------------------


@pytest.mark.parametrize("outcome", [ReconOutcome.APPLIED, ReconOutcome.NOT_APPLIED])
def test_a_token_attached_between_read_and_write_survives_the_resolution(
    make_store: StoreFactory, clock: ManualClock, outcome: ReconOutcome
) -> None:
    waiting = Ledger(make_store(), clock=clock)  # the case starting to wait
    waiting.set_budget("acme", 10)
    item = unknown_item(waiting, cost=4)
    resolver = Ledger(
        Interleaved(
            make_store(),
            before_resolve=lambda: waiting.attach_task_token(item.item_id, "tok-late"),
        ),
        clock=clock,
    )

    resolved = resolver.resolve_item(item.item_id, outcome, by="ops", note="checked")

    assert resolved.task_token == "tok-late"  # the caller can resume the waiting case
    stored = waiting.get_item(item.item_id)
    assert stored is not None
    assert (stored.status, stored.outcome, stored.task_token) == (
        ReconStatus.RESOLVED,
        outcome,
        "tok-late",
    )
    record = waiting.get(item.record_key)
    assert record is not None
    applied = outcome is ReconOutcome.APPLIED
    assert record.status is (Status.COMPLETED if applied else Status.RELEASED)
    assert waiting.budget("acme") == (6 if applied else 10)  # refunded once, if at all


def test_the_operator_resumes_a_case_that_began_to_wait_during_its_resolution(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    waiting = Ledger(make_store(), clock=clock)
    item = unknown_item(waiting)
    resolver = Ledger(
        Interleaved(
            make_store(),
            before_resolve=lambda: waiting.attach_task_token(item.item_id, "tok-late"),
        ),
        clock=clock,
    )
    sent = Sent()

    resolution = resolve(
        resolver, item.item_id, "applied", "ops@acme", "label seen", send_task_success=sent
    )

    assert resolution.resumed is True
    assert [(token, out["outcome"]) for token, out in sent.calls] == [("tok-late", "applied")]


def test_attaching_to_an_item_resolved_meanwhile_returns_the_resolved_item(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    resolver = Ledger(make_store(), clock=clock)
    item = unknown_item(resolver)
    waiting = Ledger(
        Interleaved(
            make_store(),
            before_put_item=lambda: resolver.resolve_item(
                item.item_id, ReconOutcome.APPLIED, by="ops", note="label seen"
            ),
        ),
        clock=clock,
    )

    attached = waiting.attach_task_token(item.item_id, "tok-1")

    # Nobody will send this token the decision: the caller resumes the case itself.
    assert (attached.status, attached.outcome) == (ReconStatus.RESOLVED, ReconOutcome.APPLIED)
    assert attached.task_token is None
    assert waiting.attach_task_token(item.item_id, "tok-2") == attached


# --- items for actions that were never claimed ---------------------------------------------


def exhausted(ledger: Ledger) -> tuple[Action, ReconItem]:
    """A first claim refused by a tenant budget of 0, and the item asking about it."""
    ledger.set_budget("acme", 0)
    action = shipment(cost=1)
    with pytest.raises(BudgetExhaustedError):
        ledger.claim(action)
    item = ledger.open_item_for(
        action,
        "tenant budget exhausted",
        step="CreateShipment",
        evidence={"last_error": "BudgetExhaustedError"},
    )
    return action, item


def test_an_action_without_a_record_gets_an_item(ledger: Ledger) -> None:
    action, item = exhausted(ledger)

    assert ledger.get(action.key) is None
    assert (item.record_key, item.tenant_id, item.case_id, item.step) == (
        action.key,
        "acme",
        "CASE-1001",
        "CreateShipment",
    )
    assert (item.reason, item.status) == ("tenant budget exhausted", ReconStatus.OPEN)
    assert item.evidence == {"last_error": "BudgetExhaustedError"}
    again = ledger.open_item_for(action, "tenant budget exhausted", step="X", evidence={})
    assert again == item
    assert ledger.list_items(tenant="acme", status="open") == [item]


def test_not_applied_changes_no_record_and_the_step_runs_after_a_top_up(ledger: Ledger) -> None:
    action, item = exhausted(ledger)
    attached = ledger.attach_task_token(item.item_id, "tok-1")

    resolved = ledger.resolve_item(item.item_id, "not_applied", by="ops", note="budget raised")

    assert (resolved.status, resolved.outcome) == (ReconStatus.RESOLVED, ReconOutcome.NOT_APPLIED)
    assert resolved.task_token == attached.task_token == "tok-1"
    assert ledger.get(action.key) is None
    assert ledger.budget("acme") == 0  # nothing was debited, nothing refunded
    ledger.set_budget("acme", 1)
    fn = Counter({"shipment_id": "SHP-1"})
    assert ledger.perform(action, fn) == {"shipment_id": "SHP-1"}
    record = ledger.get(action.key)
    assert record is not None
    assert (record.status, record.attempts, fn.calls) == (Status.COMPLETED, 1, 1)


def test_applied_is_refused_for_an_action_the_ledger_never_dispatched(ledger: Ledger) -> None:
    action, item = exhausted(ledger)

    with pytest.raises(IllegalTransitionError, match="never claimed"):
        ledger.resolve_item(item.item_id, "applied", by="ops", note="did it by hand")

    stored = ledger.get_item(item.item_id)
    assert stored is not None
    assert stored.status is ReconStatus.OPEN
    assert ledger.get(action.key) is None


def test_a_claim_landing_during_the_resolution_is_not_ignored(
    make_store: StoreFactory, clock: ManualClock
) -> None:
    worker = Ledger(make_store(), clock=clock)
    action, item = exhausted(worker)

    def claim_meanwhile() -> None:
        worker.set_budget("acme", 1)
        assert isinstance(worker.claim(action), Claim)

    resolver = Ledger(Interleaved(make_store(), before_resolve=claim_meanwhile), clock=clock)

    # The resolution expected no record; one appeared (a live claim), so it reads again and
    # refuses rather than deciding about an attempt in flight.
    with pytest.raises(IllegalTransitionError):
        resolver.resolve_item(item.item_id, "not_applied", by="ops", note="budget raised")
    stored = worker.get_item(item.item_id)
    assert stored is not None
    assert stored.status is ReconStatus.OPEN
    record = worker.get(action.key)
    assert record is not None
    assert record.status is Status.IN_PROGRESS


# --- the downstream reference ---------------------------------------------------------------


def test_applied_records_the_downstream_reference(ledger: Ledger) -> None:
    item = unknown_item(ledger)

    ledger.resolve_item(
        item.item_id,
        ReconOutcome.APPLIED,
        by="stepsaga:auto",
        note="found downstream",
        result={"shipment_id": "SHP-7"},
        reference="SHP-7",
    )

    record = ledger.get(item.record_key)
    assert record is not None
    assert (record.status, record.reference, record.result) == (
        Status.COMPLETED,
        "SHP-7",
        {"shipment_id": "SHP-7"},
    )


def test_a_reference_only_goes_with_applied(ledger: Ledger) -> None:
    item = unknown_item(ledger)
    with pytest.raises(InvalidInputError):
        ledger.resolve_item(item.item_id, "not_applied", by="ops", note="?", reference="SHP-7")
    with pytest.raises(InvalidInputError):
        ledger.resolve_item(item.item_id, "applied", by="ops", note="?", reference="")
    stored = ledger.get_item(item.item_id)
    assert stored is not None
    assert stored.status is ReconStatus.OPEN
