"""Which action an event may act on — from its validated intent, never from an attempt id.

The action key is tenant + case + approved revision + operation, all from the validated
event (which the state machine built from the validated case). The execution name, the
Lambda request id and the retry count identify *attempts* and are only logged.

An event must also agree with the saga it claims to belong to: a forward step's
operation and effect class are the saga's (an event saying ``blind_write`` for a physical
step would weaken its protection), and a compensation's ``original.action_key`` must be
the key this very tenant and case would have used — otherwise it names another tenant's or
case's action, and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from stepsaga.errors import EventMismatchError, InvalidInputError
from stepsaga.ledger import Action, Intent, Ledger, Record, Status
from stepsaga.ledger._models import EffectClass
from stepsaga.workflow._events import ActionRef
from stepsaga.workflow._names import item_operation
from stepsaga.workflow._saga import Saga, Step


class CaseEvent(Protocol):
    """The identity and action fields every task event carries."""

    @property
    def saga(self) -> str: ...
    @property
    def tenant_id(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def revision(self) -> int: ...
    @property
    def approved_at(self) -> datetime: ...
    @property
    def step(self) -> str: ...
    @property
    def operation(self) -> str: ...
    @property
    def effect(self) -> EffectClass: ...
    @property
    def item(self) -> str | None: ...


def refuse(field: str, message: str) -> InvalidInputError:
    """An event that names another saga, step or action than this handler's: the state
    machine and the handlers disagree (``EventMismatchError``, never compensated)."""
    return EventMismatchError(f"{field}: {message}", field=field)


def check_saga(event: CaseEvent, saga: Saga) -> None:
    if event.saga != saga.name:
        raise refuse("saga", f"this handler serves saga {saga.name!r}, not {event.saga!r}")


def check_action_fields(event: CaseEvent, step: str, operation: str, effect: EffectClass) -> None:
    """The event's step, operation and effect class are the saga's, exactly."""
    if event.step != step:
        raise refuse("step", f"this handler runs {step}, not {event.step}")
    if event.operation != operation:
        raise refuse("operation", f"{step} performs {operation}, not {event.operation}")
    if event.effect is not effect:
        raise refuse(
            "effect", f"{step} is declared {effect.value}; the event says {event.effect.value}"
        )


def check_item(event: CaseEvent, saga: Saga, step: str) -> None:
    """A per-item step's events name their item; no other step's do (an item would give
    the action another key, a missing one would merge every item into one)."""
    each = saga.per_item(step)
    if each is not None and event.item is None:
        raise refuse("item", f"{step} runs once per item of {each.items}; name the item")
    if each is None and event.item is not None:
        raise refuse("item", f"{step} is not a per-item step; it takes no item")


def forward_step(saga: Saga, name: str) -> Step:
    """The saga's forward step ``name`` (an event naming another step is refused)."""
    for step in saga.all_steps:
        if step.name == name and step.has_effect:
            return step
    raise refuse("step", f"{name} is not a side-effecting step of saga {saga.name}")


def action_of(
    event: CaseEvent,
    operation: str,
    effect: EffectClass,
    params: Mapping[str, Any],
    cost: int | None = None,
) -> Action:
    """The action this event's intent performs: key and digest from the intent only (and,
    for one item of a per-item step, the item: ``op#item``)."""
    return Action(
        tenant_id=event.tenant_id,
        intent=Intent(event.case_id, event.revision, event.approved_at),
        operation=item_operation(operation, event.item),
        effect=effect,
        params=params,
        cost=cost,
    )


def check_compensates(ref: ActionRef, step: Step) -> None:
    expected = ActionRef(step=step.name, operation=step.op, effect=step.effect)
    if ref != expected:
        raise refuse(
            "compensates",
            f"must name {step.name} ({step.op}, {step.effect.value}), not {ref.step} "
            f"({ref.operation}, {ref.effect.value})",
        )


def check_original_key(given: str, original: Action, field: str = "original.action_key") -> None:
    """A compensation or escalation may only touch the action of its own tenant and case."""
    if given != original.key:
        raise refuse(
            field,
            f"{given!r} is not the {original.operation} action of tenant {original.tenant_id} "
            f"case {original.intent.case_id} revision {original.intent.revision}",
        )


def completed_original(ledger: Ledger, original: Action, field: str = "original") -> Record:
    """The original action's record, which must be ``COMPLETED`` with the same digest:
    only a confirmed effect is compensated."""
    record = ledger.get(original.key)
    if record is None:
        raise refuse(f"{field}.action_key", f"the ledger has no action {original.key}")
    if record.digest != original.digest:
        raise refuse("params", f"differ from the parameters {original.key} was performed with")
    if record.status is not Status.COMPLETED:
        raise refuse(
            f"{field}.action_key",
            f"{original.key} is {record.status.value}; only a completed effect is compensated",
        )
    return record
