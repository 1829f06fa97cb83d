"""``cancel``: stop a case and undo what it applied, with the saga's own compensations.

``stop`` freezes a case: the execution ends, the ledger is settled, and every effect stays
where it is. ``cancel`` is ``stop`` and then the undo a rejection would have run:

1. The execution stops (``Stepsaga.Stopped``, cause ``cancelled by WHO: NOTE``) and the
   ledger is settled as for ``stop`` (``lifecycle.settle_stopped``): an action in flight
   becomes ``UNKNOWN`` with an open item, nothing waits on an item any more.
2. The steps whose effect is ``COMPLETED`` are undone in **reverse order**, each as the
   saga declares (:func:`undo_plan`): ``Compensate`` runs the compensation's own handler
   (its key derives from the original's, so running ``cancel`` again replays, never
   repeats); ``Escalate`` (an irreversible effect, e.g. ``physical``) opens an item for a
   person. A step whose outcome is uncertain is the open item of step 1, and a step that
   never ran, failed or was released has nothing to undo.

The events are the ones the state machine sends (``CompensationEvent``,
``EscalateEvent``), with ``failure`` = ``Stepsaga.Cancelled``; each backend delivers them
to the saga's deployed functions (embedded: in-process; AWS: ``lambda:InvokeFunction`` of
the function the state machine's definition names), so the undo runs the very code a
rejection runs. It is not a second run of the state machine: the execution is stopped
where it stood, and the undo needs no compensation-only route in the definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stepsaga.backends._assemble import CaseIdentity
from stepsaga.backends._views import UndoneView
from stepsaga.errors import StepSagaError
from stepsaga.ledger import Record, Status
from stepsaga.workflow import _names as names
from stepsaga.workflow._names import item_operation
from stepsaga.workflow._saga import RECONCILER_FUNCTION, Compensate, Escalate, Saga, Step

#: The error a cancel's undo events carry as ``failure`` (what started compensating).
CANCELLED = "Stepsaga.Cancelled"

#: Delivers one event to a saga function (logical name → its result, or raises).
Invoke = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]


def cancel_cause(by: str, note: str) -> str:
    """The stop cause and undo reason a cancel records."""
    return f"cancelled by {by}: {note}"


class UndoKind(StrEnum):
    """What cancel did about one completed step."""

    COMPENSATED = "compensated"
    """The compensation ran (or replayed: it had already run)."""
    ESCALATED = "escalated"
    """The effect cannot be undone by the saga: an open item asks a person."""
    FAILED = "failed"
    """The compensation raised; ``detail`` says why. Run ``cancel`` again to retry."""


@dataclass(frozen=True)
class PlannedUndo:
    """One completed step's undo, in the order cancel runs them."""

    step: Step
    record: Record
    #: The item id of a per-item step (``ForEach``), else ``None``.
    item: str | None
    params: Any


@dataclass(frozen=True)
class Undone:
    step: str
    action_key: str
    kind: UndoKind
    #: The compensation's action key, the escalation's item id, or the failure.
    detail: str


def undo_plan(
    saga: Saga, case: CaseIdentity, records: Mapping[str, Record], *, superseded: bool = False
) -> list[PlannedUndo]:
    """The case's ``COMPLETED`` forward steps, last first (a per-item step's items in
    reverse too); steps without effect have nothing to undo. A ``superseded`` revision
    undoes nothing: the later revision adopted or changed its effects, and the ledger
    refuses its keys anyway."""
    plan: list[PlannedUndo] = []
    if superseded:
        return plan
    for step in saga.all_steps:
        if not step.has_effect:
            continue
        for item, params in _instances(saga, step, case.document):
            record = records.get(case.key(item_operation(step.op, item)))
            if record is not None and record.status is Status.COMPLETED:
                plan.append(PlannedUndo(step, record, item, params))
    return plan[::-1]


def undo(
    saga: Saga,
    case: CaseIdentity,
    plan: list[PlannedUndo],
    invoke: Invoke,
    *,
    execution_name: str,
    reason: str,
) -> tuple[Undone, ...]:
    """Run ``plan`` in order through ``invoke``; a failed compensation is reported and
    the rest still run (each undo stands on its own key)."""
    done: list[Undone] = []
    for planned in plan:
        policy = planned.step.on_later_failure
        function = policy.name if isinstance(policy, Compensate) else RECONCILER_FUNCTION
        event = _event(saga, case, planned, execution_name, reason)
        try:
            result = invoke(function, event)
        except StepSagaError as exc:
            done.append(_failed(planned, exc.error_name(), exc.message))
            continue
        except Exception as exc:  # a handler bug: reported, the rest still undone
            done.append(_failed(planned, type(exc).__name__, str(exc)))
            continue
        if isinstance(policy, Escalate):
            detail = str(result.get("item_id") or "")
            done.append(Undone(planned.step.name, planned.record.key, UndoKind.ESCALATED, detail))
        else:
            detail = str(result.get("action_key") or "")
            done.append(Undone(planned.step.name, planned.record.key, UndoKind.COMPENSATED, detail))
    return tuple(done)


def deployed_functions(definition: Mapping[str, Any]) -> dict[str, str]:
    """Logical function name → ``FunctionName`` in a deployed definition: a compensation's
    is its own Task state's; the reconciler's is any state whose payload is a reconciler
    event. Branches and item processors are searched too."""
    found: dict[str, str] = {}
    for name, state in _states(definition):
        parameters = state.get("Parameters")
        if state.get("Type") != "Task" or not isinstance(parameters, Mapping):
            continue
        function, payload = parameters.get("FunctionName"), parameters.get("Payload")
        if not isinstance(function, str) or not isinstance(payload, Mapping):
            continue
        kind = payload.get("kind")
        found[RECONCILER_FUNCTION if kind in _RECONCILER_KINDS else name] = function
    return found


def undo_functions(definition: Mapping[str, Any]) -> frozenset[str]:
    """The logical functions cancel may invoke for a saga compiled to ``definition``: its
    compensations (``Compensate``) and, if any step escalates, the reconciler (``Escalate``)
    — what the resolver's role may invoke, nothing else."""
    found: set[str] = set()
    for name, state in _states(definition):
        parameters = state.get("Parameters")
        payload = parameters.get("Payload") if isinstance(parameters, Mapping) else None
        if state.get("Type") != "Task" or not isinstance(payload, Mapping):
            continue
        if payload.get("kind") == "compensation":
            found.add(name)
        elif payload.get("kind") == "escalate":
            found.add(RECONCILER_FUNCTION)
    return frozenset(found)


_RECONCILER_KINDS = frozenset({"reconcile", "escalate", "await_decision", "compensation_failed"})


def _states(definition: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    states: list[tuple[str, Mapping[str, Any]]] = []
    for name, state in (definition.get("States") or {}).items():
        states.append((name, state))
        for branch in state.get("Branches") or []:
            states += _states(branch)
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if isinstance(processor, Mapping):
            states += _states(processor)
    return states


def undone_view(done: Undone) -> UndoneView:
    return UndoneView(
        step=done.step, action_key=done.action_key, kind=done.kind.value, detail=done.detail
    )


def _failed(planned: PlannedUndo, error: str, message: str) -> Undone:
    text = " ".join(f"{error}: {message}".split())[:500]
    return Undone(planned.step.name, planned.record.key, UndoKind.FAILED, text)


def _event(
    saga: Saga, case: CaseIdentity, planned: PlannedUndo, execution_name: str, reason: str
) -> dict[str, Any]:
    """The event the state machine's compensation or escalation state would send."""
    step, record = planned.step, planned.record
    document = case.document
    approval = document.get("approval", {})
    policy = step.on_later_failure
    state = policy.name if isinstance(policy, Compensate) else names.escalate(step.name)
    event: dict[str, Any] = {
        "saga": saga.name,
        "tenant_id": case.tenant_id,
        "case_id": case.case_id,
        "revision": case.revision,
        "approved_at": approval.get("approved_at"),
        "params": planned.params,
        "original": {
            "action_key": record.key,
            "status": Status.COMPLETED.value,
            "result": dict(record.result or {}),
            "replayed": False,
        },
        "failure": {"Error": CANCELLED, "Cause": reason},
        "execution": {"name": execution_name, "state": state, "retry_count": 0},
    }
    if planned.item is not None:
        event["item"] = planned.item
    if isinstance(policy, Compensate):
        event.update(
            kind="compensation",
            step=policy.name,
            operation=policy.operation,
            effect=policy.effect.value,
            compensates={"step": step.name, "operation": step.op, "effect": step.effect.value},
        )
    else:
        assert isinstance(policy, Escalate)  # a step with effect declares one of the two
        event.update(
            kind="escalate",
            step=step.name,
            operation=step.op,
            effect=step.effect.value,
            reason=policy.reason,  # the declared reason; the cause says who cancelled
        )
    return event


def _instances(saga: Saga, step: Step, document: Mapping[str, Any]) -> list[tuple[str | None, Any]]:
    """``(item id, params)`` of each run of ``step``: one per item of a per-item step."""
    each = saga.per_item(step.name)
    if each is None:
        return [(None, _at(document, step.params) if step.params else {})]
    try:
        ids = each.item_ids(document)
    except StepSagaError:
        return []
    items = _at(document, each.items)
    return list(zip(ids, items if isinstance(items, list) else [], strict=False))


def _at(document: Mapping[str, Any], path: str) -> Any:
    value: Any = document
    for part in path.removeprefix("$.").split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


__all__ = [
    "CANCELLED",
    "Invoke",
    "PlannedUndo",
    "UndoKind",
    "Undone",
    "cancel_cause",
    "deployed_functions",
    "undo",
    "undo_functions",
    "undo_plan",
    "undone_view",
]
