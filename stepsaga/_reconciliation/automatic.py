"""Automatic reconciliation: decide from the ledger and the downstream what can be decided,
and leave only the rest to a person.

It serves forward steps (``Reconcile<Step>``) and compensations
(``Record<Compensation>Failure``) alike; only the item's wording differs (``topic``).

Rules, by what the ledger record of the action says:

* no record — nothing was ever claimed (the claim was refused before writing: tenant
  budget, replay window): a tenant budget that now covers the cost → ``not_applied`` (run
  the step again; a free action — a compensation — is never refused for money); otherwise
  an open item about the unclaimed action (``<reason> (never claimed)``), so the case waits
  for a person instead of failing. Only ``not_applied``
  resolves it (after a top-up the step runs again with the same key); ``applied`` is
  refused, since the ledger never dispatched anything;
* another digest under the key → an open item (``action key conflict``);
* ``COMPLETED`` → ``applied`` (a step replays it; a compensation's unwinding goes on);
* ``IN_PROGRESS`` with a live lease → ``ActionInProgressError`` (retried: ask again later);
* ``UNKNOWN``, or ``IN_PROGRESS`` whose lease expired → look downstream (payments by key,
  shipments by business reference, reservations by id — a release by whether the
  reservation is released): found → resolved ``applied`` with the downstream result;
  absent → resolved ``not_applied`` (``RELEASED``: the action is claimed again with the same
  key); the lookup fails or the operation has none → open item. Absent on a record that
  has used its whole lifetime attempt budget → open item: resolving it ``not_applied``
  grants one attempt past the budget, and only a person grants that;
* ``RELEASED`` → after an uncertain outcome it was already decided absent →
  ``not_applied``; after any other failure (a compensation catches every error, some
  raised before its claim) → ``not_applied`` once per attempt, recorded as an item resolved
  by ``stepsaga:auto`` — the same question again means the last run never reached the
  ledger, so a person decides — and never once every attempt is used; a tenant budget that
  now covers the cost → ``not_applied``; anything else (attempt budget, a budget still
  short) → open item;
* ``UNKNOWN`` because a later revision meets an earlier one's changed or uncertain effect
  (the record names the earlier key under ``supersedes``) → open item (``revision
  conflict``), never a lookup: resolving it ``applied`` keeps the earlier effect for this
  revision, ``not_applied`` performs this revision's step;
* ``FAILED`` → open item (a recorded failure that reached reconciliation needs a person).

So an automatic ``not_applied`` never grants an attempt past the lifetime budget, and one a
run could earn without claiming (a failure before the claim) is given once per attempt: the
ledger's lifetime attempt budget bounds how often a case goes round, whatever the state
machine does.

Automatic resolutions go through the operator API with ``resolved_by = stepsaga:auto`` and a
note naming the evidence, so the audit trail reads the same as a person's decision.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stepsaga._reconciliation.callbacks import TaskSuccessSender
from stepsaga._reconciliation.evidence import evidence
from stepsaga._reconciliation.lookup import Found, Lookup
from stepsaga._reconciliation.operator import resolve
from stepsaga._reconciliation.questions import open_question
from stepsaga._reconciliation.reasons import AUTO_RESOLVER, Reason
from stepsaga.errors import (
    ActionInProgressError,
    IllegalTransitionError,
    TransientError,
)
from stepsaga.ledger import Action, Ledger, ReconItem, Record, Status
from stepsaga.ledger._models import ReconOutcome
from stepsaga.ledger._revisions import SUPERSEDES
from stepsaga.workflow._events import ReconciliationOutcome

#: Rounds of "read the record, decide, write" before a moving record counts as busy.
MAX_ROUNDS = 3

Looker = Callable[[], Lookup | None]


@dataclass(frozen=True)
class AutoVerdict:
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
    topic: str | None = None,
    context: Mapping[str, Any] | None = None,
    dual_control: bool = False,
) -> AutoVerdict:
    """Decide ``action`` after ``failure`` (see the module docstring).

    ``topic`` prefixes every item's reason (``compensation release_reservation failed``:
    an item about a compensation reads so in ``recon list``); ``context`` is more evidence
    for a person (what started compensating); ``dual_control`` marks the items opened
    (a person's ``not_applied`` needs a second person; this module's own are exempt)."""
    ask = _Asker(ledger, step, reason, failure, topic, dict(context or {}), dual_control)
    for _ in range(MAX_ROUNDS):
        try:
            return _decide(ledger, action, ask, look, send_task_success)
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
    ask: _Asker,
    look: Looker,
    send: TaskSuccessSender | None,
) -> AutoVerdict:
    record = ledger.get(action.key)
    now = ledger.clock.now()
    reason = ask.reason
    if record is None:
        if reason is Reason.BUDGET_EXHAUSTED and _budget_covers(ledger, action):
            return AutoVerdict(ReconciliationOutcome.NOT_APPLIED, "the tenant budget now covers it")
        return ask.unclaimed(action)
    if record.digest != action.digest:
        return ask.item(record, Reason.ACTION_CONFLICT)
    if record.status is Status.COMPLETED:
        return AutoVerdict(ReconciliationOutcome.APPLIED, "the ledger record is COMPLETED")
    if record.status is Status.IN_PROGRESS and record.lease_live(now):
        assert record.lease_expires_at is not None
        raise ActionInProgressError(
            f"{action.key}: an attempt still holds the lease; reconcile after it ends",
            retry_after_seconds=_seconds_until(record.lease_expires_at, now),
            key=action.key,
        )
    if record.status is Status.UNKNOWN and SUPERSEDES in (record.error or {}):
        # Looking under this revision's key would find nothing and run the step again on
        # top of the earlier revision's effect: what to do is a person's call.
        return ask.item(record, Reason.REVISION_CONFLICT, next=_REVISION_NEXT)
    if record.status in (Status.UNKNOWN, Status.IN_PROGRESS):
        return _by_lookup(ledger, record, ask, look, send)
    if record.status is Status.RELEASED:
        if reason is Reason.OUTCOME_UNKNOWN:
            return AutoVerdict(ReconciliationOutcome.NOT_APPLIED, "the record is RELEASED")
        if reason is Reason.OTHER:
            return _released_once(ledger, record, ask, send)
        if reason is Reason.BUDGET_EXHAUSTED and _budget_covers(ledger, action):
            return AutoVerdict(ReconciliationOutcome.NOT_APPLIED, "the tenant budget now covers it")
    return ask.item(record)


def _by_lookup(
    ledger: Ledger,
    record: Record,
    ask: _Asker,
    look: Looker,
    send: TaskSuccessSender | None,
) -> AutoVerdict:
    try:
        found = look()
    except TransientError as exc:
        return ask.item(record, lookup=f"failed: {exc.message}")
    if found is None:
        return ask.item(record, lookup="this operation cannot look")
    if not isinstance(found, Found) and _spent(ledger, record):
        return ask.item(record, lookup=f"absent downstream: {found.evidence}; {_SPENT}")
    item, _ = open_question(
        ledger,
        record.key,
        ask.question(record),
        step=ask.step,
        evidence=ask.evidence(record, lookup=found.evidence),
        dual_control=ask.dual_control,
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
            automatic=True,
        )
        return AutoVerdict(ReconciliationOutcome.APPLIED, note, item=resolution.item)
    note = f"absent downstream: {found.evidence}"
    return _resolved_not_applied(ledger, item, note, send)


def _released_once(
    ledger: Ledger, record: Record, ask: _Asker, send: TaskSuccessSender | None
) -> AutoVerdict:
    """``RELEASED`` after a failure that may have struck before the claim (a compensation
    catches every error): run it again once per attempt. The answer is an item resolved
    by ``stepsaga:auto``; meeting the answered question again means the last run never
    reached the ledger, and a person decides — so the ledger bounds every round."""
    if _spent(ledger, record):
        return ask.item(record, Reason.ATTEMPT_BUDGET_EXHAUSTED)
    question = ask.question(record)
    item, opened = open_question(
        ledger,
        record.key,
        question,
        step=ask.step,
        evidence=ask.evidence(record),
        dual_control=ask.dual_control,
    )
    if item.reason != question:  # asked and answered before: no attempt since
        note = f"undecided: {item.reason}; the last run made no attempt"
        return AutoVerdict(ReconciliationOutcome.UNDECIDED, note, item=item, opened=opened)
    note = "the record is RELEASED: nothing was applied"
    return _resolved_not_applied(ledger, item, note, send)


def _resolved_not_applied(
    ledger: Ledger, item: ReconItem, note: str, send: TaskSuccessSender | None
) -> AutoVerdict:
    """Resolve ``item`` as ``not_applied`` by ``stepsaga:auto`` (resuming the waiting case)."""
    resolution = resolve(
        ledger,
        item.item_id,
        ReconOutcome.NOT_APPLIED,
        AUTO_RESOLVER,
        note,
        send_task_success=send,
        automatic=True,
    )
    return AutoVerdict(ReconciliationOutcome.NOT_APPLIED, note, item=resolution.item)


#: What a person decides about a later revision's step that meets an earlier effect.
_REVISION_NEXT = (
    "applied: what the earlier revision did stands for this one (recorded with its result, "
    "nothing is sent); not_applied: perform this revision's step as approved, a new effect "
    "on top of the earlier one (after undoing or adjusting it by hand)"
)

#: Why an action that proved absent still goes to a person.
_SPENT = "every attempt of the lifetime budget is used: only a person grants another"


def _spent(ledger: Ledger, record: Record) -> bool:
    return record.attempts >= ledger.policy.attempt_budget


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


@dataclass(frozen=True)
class _Asker:
    """How this reconciliation words and files the questions it leaves to a person."""

    ledger: Ledger
    step: str
    reason: Reason
    failure: Mapping[str, str]
    topic: str | None
    context: Mapping[str, Any]
    dual_control: bool = False

    def question(self, record: Record, reason: Reason | None = None) -> str:
        """The item's reason. An uncertain outcome is per attempt: a later attempt that ends
        uncertain again is a new question, never the answered one."""
        return self._worded(reason or self.reason, f"attempt {record.attempts}")

    def evidence(self, record: Record | None, **more: Any) -> dict[str, Any]:
        return evidence(record, last_error=dict(self.failure), **self.context, **more)

    def item(
        self,
        record: Record,
        reason: Reason | None = None,
        *,
        lookup: str | None = None,
        **more: Any,
    ) -> AutoVerdict:
        """Leave it to a person: the open item for this question."""
        item, opened = open_question(
            self.ledger,
            record.key,
            self.question(record, reason),
            step=self.step,
            evidence=self.evidence(record, lookup=lookup, **more),
            dual_control=self.dual_control,
        )
        note = f"undecided: {item.reason}" + (f"; lookup {lookup}" if lookup else "")
        return AutoVerdict(ReconciliationOutcome.UNDECIDED, note, item=item, opened=opened)

    def unclaimed(self, action: Action) -> AutoVerdict:
        """The claim was refused before anything was written: ask a person about the
        action itself (the item carries its tenant, case and key; no record exists)."""
        item, opened = open_question(
            self.ledger,
            action,
            self._worded(self.reason, "never claimed"),
            step=self.step,
            evidence=self.evidence(
                None,
                request_digest=action.digest,
                next=_UNCLAIMED_NEXT.get(self.reason, _UNCLAIMED_DEFAULT),
            ),
            dual_control=self.dual_control,
        )
        note = f"undecided: {item.reason}"
        return AutoVerdict(ReconciliationOutcome.UNDECIDED, note, item=item, opened=opened)

    def _worded(self, reason: Reason, which: str) -> str:
        if self.topic is None:
            return f"{reason.value} ({which})"
        if reason is Reason.OTHER:
            return f"{self.topic} ({which})"
        return f"{self.topic}: {reason.value} ({which})"


def _budget_covers(ledger: Ledger, action: Action) -> bool:
    """A top-up since the refusal; a free action (a compensation) is never refused for
    money, so a budget error cannot be about it."""
    if not action.cost:
        return False
    remaining = ledger.budget(action.tenant_id)
    return remaining is None or remaining >= action.cost


def _seconds_until(moment: datetime, now: datetime) -> float:
    return max(0.0, (moment - now).total_seconds())
