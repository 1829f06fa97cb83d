"""Deciding an item: what ``stepsaga recon resolve`` calls, and automatic reconciliation too.

``resolve`` changes the ledger record and the item in one transaction
(``Ledger.resolve_item``): ``applied`` → record ``COMPLETED`` with ``result`` (what the
step's replay returns); ``not_applied`` → record ``RELEASED`` (claimable again with the same
key) and the budget debit refunded — the only refund an uncertain outcome ever gets; for
an action that was never claimed (no record) ``not_applied`` changes no record and
``applied`` is refused. Then,
if a case waits on the item (a task token is attached), it sends the ``OperatorDecision`` so
the case continues. Resolving a resolved item the same way changes nothing — also when an
identical resolve ran at the same moment and won: the loser gets the same resolved item
(``changed`` false) and resumes nothing itself; another way is refused.

Dual control (``stepsaga.ledger._approvals``): on an item of a step declared
``dual_control=True``, a person's first ``not_applied`` only records a first approval (the
item stays OPEN, nothing is resumed: ``Resolution.awaiting_second_approver``); a second,
other person's ``not_applied`` resolves it. Automatic reconciliation passes
``automatic=True`` and is exempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stepsaga._model.person import check_person
from stepsaga._reconciliation.callbacks import TaskSuccessSender
from stepsaga.errors import IllegalTransitionError, InvalidInputError, NotFoundError, TransientError
from stepsaga.ledger import Ledger, ReconItem
from stepsaga.ledger._models import ReconOutcome, ReconStatus
from stepsaga.workflow._events import OperatorDecision, ReconciliationOutcome


@dataclass(frozen=True)
class Resolution:
    item: ReconItem
    #: False when the item was already resolved the same way (nothing written or sent).
    changed: bool
    #: True when a waiting case was sent the decision.
    resumed: bool

    @property
    def awaiting_second_approver(self) -> bool:
        """A first ``not_applied`` approval is recorded; another person must decide."""
        return self.item.awaiting_second_approver


def parse_outcome(value: ReconOutcome | str) -> ReconOutcome:
    """``applied`` / ``not_applied`` (also ``not-applied``, any case)."""
    if isinstance(value, ReconOutcome):
        return value
    text = str(value).strip().lower().replace("-", "_")
    try:
        return ReconOutcome(text)
    except ValueError:
        raise InvalidInputError(
            f"outcome: {value!r} is not one of applied, not-applied", field="outcome"
        ) from None


def decision_of(item: ReconItem) -> dict[str, Any]:
    """The ``SendTaskSuccess`` output for a resolved item."""
    if item.outcome is None:
        raise IllegalTransitionError(f"item {item.item_id} is not resolved", item_id=item.item_id)
    decision = OperatorDecision(
        outcome=ReconciliationOutcome(item.outcome.value),
        item_id=item.item_id,
        decided_by=item.resolved_by,
        note=item.note,
    )
    return decision.model_dump(mode="json")


def resolve(
    ledger: Ledger,
    item_id: str,
    outcome: ReconOutcome | str,
    by: str,
    note: str,
    *,
    send_task_success: TaskSuccessSender | None,
    result: Mapping[str, Any] | None = None,
    reference: str | None = None,
    identity: Mapping[str, str] | None = None,
    automatic: bool = False,
) -> Resolution:
    """Decide ``item_id`` (see the module docstring).

    ``result`` is what the step's replay returns after ``applied`` (default: a note naming
    the item and who decided); ``reference`` the downstream id the record keeps (refund
    id, shipment id; default: the one recorded). An item about an action that was never
    claimed (its first claim was refused: tenant budget, replay window) can only be
    ``not_applied``. ``send_task_success`` is the engine's or boto3's callback;
    ``None`` resolves without resuming (e.g. no case waits, or the caller resumes later
    with ``resume_waiting``). If the ledger is resolved but resuming fails, a
    ``TransientError`` says so (the resolution stands; ``resume_waiting`` retries it).
    ``identity`` is kept in the audit record (AWS: the signing identity's details);
    ``automatic`` marks automatic reconciliation, which dual control does not hold.
    """
    decided, by = parse_outcome(outcome), check_person(by, "by")
    item = _require(ledger, item_id)
    if item.status is ReconStatus.RESOLVED:
        if item.outcome is decided:
            return Resolution(item=item, changed=False, resumed=False)
        raise IllegalTransitionError(
            f"item {item_id} was already resolved as {_name(item.outcome)} by "
            f"{item.resolved_by}; refusing to resolve it as {_name(decided)}",
            item_id=item_id,
            outcome=_name(item.outcome),
            resolved_by=item.resolved_by,
        )
    payload: Mapping[str, Any] | None = None
    if decided is ReconOutcome.APPLIED:
        payload = (
            result
            if result is not None
            else {"reconciled": {"item_id": item_id, "outcome": decided.value, "by": by}}
        )
    resolved, written = ledger.decide_item(
        item_id,
        decided,
        by,
        note,
        result=payload,
        reference=reference,
        identity=identity,
        automatic=automatic,
    )
    if not written:  # an identical resolve won the race: the same result, its to resume
        return Resolution(item=resolved, changed=False, resumed=False)
    if resolved.status is not ReconStatus.RESOLVED:  # a first approval: nothing to resume
        return Resolution(item=resolved, changed=True, resumed=False)
    token = resolved.task_token
    if token is None or send_task_success is None:
        return Resolution(item=resolved, changed=True, resumed=False)
    _send(send_task_success, token, resolved)
    return Resolution(item=resolved, changed=True, resumed=True)


def resume_waiting(ledger: Ledger, item_id: str, send_task_success: TaskSuccessSender) -> bool:
    """Send a resolved item's decision to the case waiting on it (again). False when no
    case waits on it (no task token)."""
    item = _require(ledger, item_id)
    if item.status is not ReconStatus.RESOLVED:
        raise IllegalTransitionError(
            f"item {item_id} is {item.status.value}; resolve it first", item_id=item_id
        )
    if item.task_token is None:
        return False
    _send(send_task_success, item.task_token, item)
    return True


def _send(send_task_success: TaskSuccessSender, token: str, item: ReconItem) -> None:
    try:
        send_task_success(token, decision_of(item))
    except Exception as exc:
        raise TransientError(
            f"item {item.item_id} is resolved, but the waiting case could not be resumed "
            f"({type(exc).__name__}); resume it again",
            item_id=item.item_id,
        ) from exc


def _require(ledger: Ledger, item_id: str) -> ReconItem:
    if not isinstance(item_id, str) or not item_id.strip():
        raise InvalidInputError("item_id: must be a non-empty string", field="item_id")
    item = ledger.get_item(item_id)
    if item is None:
        raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
    return item


def _name(outcome: ReconOutcome | None) -> str:
    return outcome.value if outcome is not None else "?"
