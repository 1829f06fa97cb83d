"""When a revision may start, when an execution may be redriven, and what stopping one
leaves in the ledger: one rule each, used by both backends.

* **Start** (revisions supersede, docs/explanation/design.md): revision N starts only when every
  earlier revision's execution is closed — ended, or stopped by an operator — and no later
  revision exists (a superseded revision never starts).
* **Redrive** is refused, naming why, for an execution an operator stopped, one that ended
  compensated (its undo is complete: redriving replays the ``Fail`` state forever), and one
  a later revision superseded.
* **Stop** closes the case in the ledger too: each in-flight claim of the stopped
  execution (``IN_PROGRESS``) becomes ``UNKNOWN`` with an open item, every uncertain action
  without an open item gets one (never silently dropped), and the open items lose their
  task token (no execution waits on them any more; a resolution only records the finding).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stepsaga._reconciliation.evidence import evidence
from stepsaga._reconciliation.reasons import Reason
from stepsaga.backends._assemble import CaseIdentity, case_open_items, planned_actions
from stepsaga.errors import EXECUTION_STOPPED, SAGA_COMPENSATED, InvalidInputError
from stepsaga.ledger import Ledger, Status
from stepsaga.workflow._saga import Saga

#: ``DescribeExecution`` statuses of an execution that is still open.
MOVING = ("RUNNING", "PENDING_REDRIVE")

#: What a person decides about an action its stopped execution left uncertain.
STOPPED_NEXT = (
    "the execution was stopped while this action was in flight: look downstream, then "
    "resolve applied (it happened) or not-applied (it did not); nothing resumes either way"
)


@dataclass(frozen=True)
class Sibling:
    """Another execution of the same tenant's case (another revision)."""

    identity: CaseIdentity
    name: str
    status: str

    @classmethod
    def of(cls, described: Mapping[str, Any]) -> Sibling:
        return cls(
            CaseIdentity.from_input(described["input"]), str(described["name"]), described["status"]
        )


def stop_cause(by: str, note: str) -> str:
    """The ``cause`` a stopped execution keeps: who stopped it and why."""
    return f"stopped by {by}: {note}"


def stopped(described: Mapping[str, Any]) -> bool:
    return described.get("status") == "ABORTED" and described.get("error") == EXECUTION_STOPPED


def superseding(case: CaseIdentity, siblings: Iterable[Sibling]) -> Sibling | None:
    """The newest later revision of the case, if any: ``case`` is then superseded for
    good (waiting cannot help; a queue dead-letters it), where an earlier open revision
    only makes it wait."""
    later = [s for s in siblings if s.identity.revision > case.revision]
    return max(later, key=lambda s: s.identity.revision, default=None)


def refuse_ended(described: Mapping[str, Any], verb: str) -> None:
    """``stop``/``cancel`` of an execution that ended on its own (succeeded, compensated,
    failed, timed out): ``InvalidInputError`` (exit 2) saying there is nothing to do."""
    if described["status"] in MOVING:
        return
    why = (
        "there is nothing to stop"
        if verb == "stop"
        else "there is nothing to cancel (an ended case is changed by a new revision)"
    )
    raise InvalidInputError(
        f"execution {described['name']} is {described['status']}, not running: {why}",
        field="ref",
    )


def start_refusal(case: CaseIdentity, siblings: Iterable[Sibling]) -> str | None:
    """Why revision ``case.revision`` may not start now (``None``: it may)."""
    others = [s for s in siblings if s.identity.revision != case.revision]
    newest = superseding(case, others)
    if newest is not None:
        return (
            f"case {case.case_id} revision {case.revision}: revision "
            f"{newest.identity.revision} exists (execution {newest.name}), so this revision "
            "is superseded and does not start"
        )
    for sibling in sorted(others, key=lambda s: s.identity.revision):
        if sibling.status in MOVING:
            return (
                f"case {case.case_id} revision {case.revision} starts only when every earlier "
                f"revision is closed: execution {sibling.name} (revision "
                f"{sibling.identity.revision}) is {sibling.status}; stop it first "
                f"(stepsaga stop {sibling.name} --by WHO --note TEXT) or let it end"
            )
    return None


def redrive_refusal(
    described: Mapping[str, Any], siblings: Callable[[], Iterable[Sibling]]
) -> str | None:
    """Why this execution may not be redriven (``None``: the engine or AWS decides).
    ``siblings`` (the case's other revisions) is called only when the execution itself
    does not already say why."""
    if stopped(described):
        return f"it was stopped ({described.get('cause') or 'by an operator'})"
    if described.get("status") == "FAILED" and described.get("error") == SAGA_COMPENSATED:
        return (
            "it ended compensated (its completed steps were undone or escalated); approve a "
            "new revision to act on the case again"
        )
    mine = CaseIdentity.from_input(described["input"])
    later = [s for s in siblings() if s.identity.revision > mine.revision]
    if later:
        newest = max(later, key=lambda s: s.identity.revision)
        return f"it is superseded by revision {newest.identity.revision} (execution {newest.name})"
    return None


def settle_stopped(
    ledger: Ledger, saga: Saga, case: CaseIdentity, by: str, note: str
) -> tuple[str, ...]:
    """Leave the ledger consistent after a stop (see the module docstring); the ids of
    the case's open items. Repeatable: a second run changes nothing."""
    open_items = case_open_items(ledger, case)
    asked = {item.record_key for item in open_items}
    ids = [item.item_id for item in open_items]
    reason = stop_cause(by, note)
    for action in planned_actions(saga, case):
        record = ledger.get(action.action_key)
        if record is None:
            continue
        if record.status is Status.IN_PROGRESS:
            record = ledger.abandon(record.key, f"execution stopped in flight; {reason}")
        if record is None or record.status is not Status.UNKNOWN or record.key in asked:
            continue
        item = ledger.open_item(
            record.key,
            f"{Reason.EXECUTION_STOPPED.value}: outcome unknown (attempt {record.attempts})",
            step=action.state,
            evidence=evidence(record, stopped=reason, next=STOPPED_NEXT),
            dual_control=action.dual_control,
        )
        asked.add(record.key)
        ids.append(item.item_id)
    for item in open_items:
        if item.task_token is not None:
            ledger.detach_task_token(item.item_id)
    return tuple(ids)
