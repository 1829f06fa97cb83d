"""Automatic reconciliation: decide from the ledger and the downstream what can be decided,
and leave only the rest to a person.

Rules, by what the ledger record of the action says:

* no record — nothing was ever claimed (the claim was refused before writing: tenant
  budget, replay window): a tenant budget that now covers the cost → ``not_applied`` (run
  the step again); otherwise an open item about the unclaimed action (``<reason> (never
  claimed)``), so the case waits for a person instead of failing. Only ``not_applied``
  resolves it (after a top-up the step runs again with the same key); ``applied`` is
  refused, since the ledger never dispatched anything;
* another digest under the key → an open item (``action key conflict``);
* ``COMPLETED`` → ``applied`` (the step replays it);
* ``IN_PROGRESS`` with a live lease → ``ActionInProgressError`` (retried: ask again later);
* ``UNKNOWN``, or ``IN_PROGRESS`` whose lease expired → look downstream (payments by key,
  shipments by business reference, reservations by id): found → resolved ``applied`` with
  the downstream result; absent → resolved ``not_applied`` (``RELEASED``: the step claims it
  again with the same key); the lookup fails or the operation has none → open item;
* ``RELEASED`` → after an uncertain outcome it was already decided absent →
  ``not_applied``; a tenant budget that now covers the cost → ``not_applied``; anything
  else (attempt budget, a budget still short) → open item;
* ``FAILED`` → open item (a recorded failure that reached reconciliation needs a person).

Automatic resolutions go through the operator API with ``resolved_by = stepsaga:auto`` and a
note naming the evidence, so the audit trail reads the same as a person's decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from stepsaga.errors import (
    ActionInProgressError,
    IllegalTransitionError,
    TransientError,
)
from stepsaga.ledger import Action, Ledger, ReconItem, ReconOutcome, Record, Status
from stepsaga.reconciliation.callbacks import TaskSuccessSender
from stepsaga.reconciliation.evidence import evidence
from stepsaga.reconciliation.lookup import Found, Lookup
from stepsaga.reconciliation.operator import resolve
from stepsaga.reconciliation.questions import open_question
from stepsaga.reconciliation.reasons import AUTO_RESOLVER, Reason
from stepsaga.workflow.events import ReconciliationOutcome

#: Rounds of "read the record, decide, write" before a moving record counts as busy.
MAX_ROUNDS = 3

Looker = Callable[[], Lookup | None]


@dataclass(frozen=True)
class Verdict:
    """What reconciliation decided; ``opened`` is true when this call opened an item that
    now waits for a person."""

    outcome: ReconciliationOutcome
    note: str
    item: ReconItem | None = None
    opened: bool = False

    @property
    def item_id(self) -> str | None:
        return self.item.item_id if self.item is not None else None


def reconcile_action(
    ledger: Ledger,
    action: Action,
    *,
    step: str,
    reason: Reason,
    failure: Mapping[str, str],
    look: Looker,
    send_task_success: TaskSuccessSender | None = None,
) -> Verdict:
    """Decide ``action`` after ``failure`` (see the module docstring)."""
    for _ in range(MAX_ROUNDS):
        try:
            return _decide(ledger, action, step, reason, failure, look, send_task_success)
        except IllegalTransitionError:
            continue  # the record moved under us (a late worker finished): read it again
    raise ActionInProgressError(
        f"{action.key}: the record keeps changing; reconcile again shortly",
        retry_after_seconds=1.0,
        key=action.key,
    )


def _decide(
    ledger: Ledger,
    action: Action,
    step: str,
    reason: Reason,
    failure: Mapping[str, str],
    look: Looker,
    send: TaskSuccessSender | None,
) -> Verdict:
    record = ledger.get(action.key)
    now = ledger.clock.now()
    if record is None:
        if reason is Reason.BUDGET_EXHAUSTED and _budget_covers(ledger, action):
            return Verdict(ReconciliationOutcome.NOT_APPLIED, "the tenant budget now covers it")
        return _ask_unclaimed(ledger, action, reason, step, failure)
    if record.digest != action.digest:
        return _ask(ledger, record, Reason.ACTION_CONFLICT, step, failure)
    if record.status is Status.COMPLETED:
        return Verdict(ReconciliationOutcome.APPLIED, "the ledger record is COMPLETED")
    if record.status is Status.IN_PROGRESS and record.lease_live(now):
        assert record.lease_expires_at is not None
        raise ActionInProgressError(
            f"{action.key}: an attempt still holds the lease; reconcile after it ends",
            retry_after_seconds=_seconds_until(record.lease_expires_at, now),
            key=action.key,
        )
    if record.status in (Status.UNKNOWN, Status.IN_PROGRESS):
        return _by_lookup(ledger, record, reason, step, failure, look, send)
    if record.status is Status.RELEASED:
        if reason in (Reason.OUTCOME_UNKNOWN, Reason.OTHER):
            return Verdict(ReconciliationOutcome.NOT_APPLIED, "the record is RELEASED")
        if reason is Reason.BUDGET_EXHAUSTED and _budget_covers(ledger, action):
            return Verdict(ReconciliationOutcome.NOT_APPLIED, "the tenant budget now covers it")
    return _ask(ledger, record, reason, step, failure)


def _by_lookup(
    ledger: Ledger,
    record: Record,
    reason: Reason,
    step: str,
    failure: Mapping[str, str],
    look: Looker,
    send: TaskSuccessSender | None,
) -> Verdict:
    try:
        found = look()
    except TransientError as exc:
        return _ask(ledger, record, reason, step, failure, lookup=f"failed: {exc.message}")
    if found is None:
        return _ask(ledger, record, reason, step, failure, lookup="this operation cannot look")
    item, _ = open_question(
        ledger,
        record.key,
        _question(reason, record),
        step=step,
        evidence=evidence(record, last_error=dict(failure), lookup=found.evidence),
    )
    if isinstance(found, Found):
        note = f"found downstream: {found.evidence}"
        resolution = resolve(
            ledger,
            item.item_id,
            ReconOutcome.APPLIED,
            AUTO_RESOLVER,
            note,
            send_task_success=send,
            result=found.result,
            reference=found.reference,
        )
        return Verdict(ReconciliationOutcome.APPLIED, note, item=resolution.item)
    note = f"absent downstream: {found.evidence}"
    resolution = resolve(
        ledger, item.item_id, ReconOutcome.NOT_APPLIED, AUTO_RESOLVER, note, send_task_success=send
    )
    return Verdict(ReconciliationOutcome.NOT_APPLIED, note, item=resolution.item)


def _ask(
    ledger: Ledger,
    record: Record,
    reason: Reason,
    step: str,
    failure: Mapping[str, str],
    *,
    lookup: str | None = None,
) -> Verdict:
    """Leave it to a person: the open item for this question."""
    item, opened = open_question(
        ledger,
        record.key,
        _question(reason, record),
        step=step,
        evidence=evidence(record, last_error=dict(failure), lookup=lookup),
    )
    note = f"undecided: {item.reason}" + (f"; lookup {lookup}" if lookup else "")
    return Verdict(ReconciliationOutcome.UNDECIDED, note, item=item, opened=opened)


#: What a person can do about an action that was never claimed, by why it was refused.
_UNCLAIMED_NEXT = {
    Reason.BUDGET_EXHAUSTED: (
        "top up the tenant budget, then resolve not_applied: the step runs again with the "
        "same key (applied is refused: nothing was dispatched)"
    ),
    Reason.REPLAY_WINDOW_EXPIRED: (
        "the approval is older than the retention window, so this step can never run under "
        "it: stop the execution and approve a new revision of the case"
    ),
}
_UNCLAIMED_DEFAULT = (
    "nothing was dispatched: resolve not_applied to run the step again with the same key "
    "once the cause is fixed, or stop the execution"
)


def _ask_unclaimed(
    ledger: Ledger, action: Action, reason: Reason, step: str, failure: Mapping[str, str]
) -> Verdict:
    """The claim was refused before anything was written: ask a person about the action
    itself (the item carries its tenant, case and key; no record exists)."""
    item, opened = open_question(
        ledger,
        action,
        f"{reason.value} (never claimed)",
        step=step,
        evidence=evidence(
            None,
            last_error=dict(failure),
            request_digest=action.digest,
            next=_UNCLAIMED_NEXT.get(reason, _UNCLAIMED_DEFAULT),
        ),
    )
    note = f"undecided: {item.reason}"
    return Verdict(ReconciliationOutcome.UNDECIDED, note, item=item, opened=opened)


def _question(reason: Reason, record: Record) -> str:
    """The item's reason. An uncertain outcome is per attempt: a later attempt that ends
    uncertain again is a new question, never the answered one."""
    return f"{reason.value} (attempt {record.attempts})"


def _budget_covers(ledger: Ledger, action: Action) -> bool:
    remaining = ledger.budget(action.tenant_id)
    return remaining is None or remaining >= (action.cost or 0)


def _seconds_until(moment: datetime, now: datetime) -> float:
    return max(0.0, (moment - now).total_seconds())
