"""Forward steps (``tasks/``): validate the event, build the action, run it once."""

from __future__ import annotations

from typing import Any

from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.execute import run_action
from stepsaga._handlers.guard import Handler, invocation
from stepsaga._handlers.identity import action_of, check_action_fields, check_item, check_saga
from stepsaga._handlers.logs import InvocationLog
from stepsaga._handlers.step_handler import StepHandler
from stepsaga.workflow._events import StepEvent, parse_event
from stepsaga.workflow._saga import Saga, Step


def forward_handler(
    deps: HandlerDeps, saga: Saga, step: Step, operation: StepHandler[Any, Any]
) -> Handler:
    """The handler of ``step``: returns ``StepResult``, raises only ``stepsaga.errors``."""
    model = StepEvent[step.params_type]  # type: ignore[name-defined]

    def body(event: Any, log: InvocationLog) -> dict[str, Any]:
        log.bind(step=step.name)
        parsed = parse_event(model, event, params_checked=saga.input_model is not None)
        log.bind_event(parsed)
        check_saga(parsed, saga)
        check_action_fields(parsed, step.name, step.op, step.effect)
        check_item(parsed, saga, step.name)
        action = action_of(
            parsed,
            step.op,
            step.effect,
            operation.consequential(parsed.params),
            operation.cost,
        )
        undo = step.compensation.operation if step.compensation is not None else None
        return run_action(deps, operation, action, parsed.params, log, undo=undo)

    return invocation(deps, step.name, body)
