"""Compensations (``compensations/``): undo a confirmed effect, once, with their own key.

The compensation's action derives from the original's (``{original}:compensate:{op}``),
and its digest covers exactly which original it undoes, so running it any number of times
— a retry, a redrive, a duplicate delivery — records one outcome and replays it. It
refuses an event whose ``original.action_key`` is not this tenant's and case's action, or
whose original effect is not ``COMPLETED`` in the ledger: only confirmed effects are undone.
Compensations cost nothing from the tenant budget: undoing must never be refused for money.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.execute import run_action
from stepsaga._handlers.guard import Handler, invocation
from stepsaga._handlers.identity import (
    action_of,
    check_action_fields,
    check_compensates,
    check_item,
    check_original_key,
    check_saga,
    completed_original,
)
from stepsaga._handlers.logs import InvocationLog
from stepsaga._handlers.step_handler import StepHandler
from stepsaga._model.keys import parse_action_key
from stepsaga.ledger import Action, Record
from stepsaga.ledger._revisions import ADOPTED_FROM
from stepsaga.workflow._events import CompensationEvent, parse_event
from stepsaga.workflow._saga import Compensate, Saga, Step


def compensation_action(original: Action, compensate: Compensate) -> Action:
    """The compensation of ``original``: own key, digest = which original it undoes."""
    return original.compensation(
        compensate.operation,
        effect=compensate.effect,
        params={"undoes": original.key, "original_digest": original.digest},
    )


def applied_by(original: Action, record: Record) -> Action:
    """The action whose key went downstream for ``original``'s effect: an effect a later
    revision adopted was applied under the earlier revision's key, so that is the one to
    undo (``Call.original``); the compensation keeps its own key."""
    adopted = (record.terms or {}).get(ADOPTED_FROM)
    if not isinstance(adopted, str):
        return original
    key = parse_action_key(adopted)
    if key is None:
        return original
    return replace(original, intent=replace(original.intent, revision=key.revision))


def compensation_handler(
    deps: HandlerDeps,
    saga: Saga,
    step: Step,
    compensate: Compensate,
    forward: StepHandler[Any, Any],
    operation: StepHandler[Any, Any],
) -> Handler:
    model = CompensationEvent[step.params_type]  # type: ignore[name-defined]

    def body(event: Any, log: InvocationLog) -> dict[str, Any]:
        log.bind(step=compensate.name)
        parsed = parse_event(model, event, params_checked=saga.input_model is not None)
        log.bind_event(parsed)
        check_saga(parsed, saga)
        check_action_fields(parsed, compensate.name, compensate.operation, compensate.effect)
        check_compensates(parsed.compensates, step)
        check_item(parsed, saga, step.name)
        original = action_of(
            parsed, step.op, step.effect, forward.consequential(parsed.params), forward.cost
        )
        check_original_key(parsed.original.action_key, original)
        record = completed_original(deps.ledger, original)
        action = compensation_action(original, compensate)
        undone = applied_by(original, record)
        return run_action(deps, operation, action, parsed.params, log, original=undone)

    return invocation(deps, compensate.name, body)
