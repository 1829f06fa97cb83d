"""``build_handlers(deps, saga)``: every function of a saga, keyed by its logical name.

The saga lists its functions (``Saga.functions``: ``ChargeCard`` →
``tasks.charge_card:ChargeCard``); each step's ``StepHandler`` is loaded from its
reference and wrapped in the shared machinery (forward, compensation, reconciler). The
embedded engine's registry is exactly this dict; on Lambda the generic entry point
(``stepsaga.lambda_handler``) builds it once per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepsaga._handlers.compensation import compensation_handler
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.forward import forward_handler
from stepsaga._handlers.guard import Handler
from stepsaga._handlers.reconcile import reconcile_handler
from stepsaga._handlers.step_handler import StepHandler, load_step_handler
from stepsaga.workflow._saga import RECONCILER_FUNCTION, Saga


def step_handlers_of(saga: Saga) -> dict[str, StepHandler[Any, Any]]:
    """Operation name → its ``StepHandler``, loaded from the saga's references."""
    catalog: dict[str, StepHandler[Any, Any]] = {}
    for step in saga.all_steps:
        catalog[step.op] = load_step_handler(step.handler_ref)
        if step.compensation is not None:
            compensate = step.compensation
            catalog[compensate.operation] = load_step_handler(compensate.handler_ref)
    return catalog


def build_handlers(
    deps: HandlerDeps,
    saga: Saga,
    step_handlers: Mapping[str, StepHandler[Any, Any]] | None = None,
) -> dict[str, Handler]:
    """Logical function name → ``handler(event, context) -> dict`` for every function of
    ``saga``. ``step_handlers`` (operation name → ``StepHandler``) replaces what the
    saga's references name (tests, sagas defined in a script)."""
    catalog = dict(step_handlers) if step_handlers is not None else step_handlers_of(saga)
    handlers: dict[str, Handler] = {}
    for step in saga.all_steps:
        handlers[step.name] = forward_handler(deps, saga, step, _need(catalog, saga, step.op))
        compensate = step.compensation
        if compensate is not None:
            handlers[compensate.name] = compensation_handler(
                deps,
                saga,
                step,
                compensate,
                catalog[step.op],
                _need(catalog, saga, compensate.operation),
            )
    if saga.uses_reconciler:
        handlers[RECONCILER_FUNCTION] = reconcile_handler(deps, saga, catalog)
    return handlers


def _need(
    catalog: Mapping[str, StepHandler[Any, Any]], saga: Saga, operation: str
) -> StepHandler[Any, Any]:
    handler = catalog.get(operation)
    if handler is None:
        raise LookupError(f"saga {saga.name}: no step handler for operation {operation!r}")
    return handler
