"""``build_handlers(deps)``: every function of a saga, keyed by its logical name.

The saga lists its functions (``Saga.functions``: ``RefundPayment`` →
``tasks.refund_payment.handler``). The module behind each path also defines the
``OPERATION`` it performs; the shared machinery does the rest. The embedded engine's
registry is exactly this dict; on Lambda each module's ``handler`` builds it once
(``entrypoint.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from stepsaga.handlers.compensation import compensation_handler
from stepsaga.handlers.deps import HandlerDeps
from stepsaga.handlers.forward import forward_handler
from stepsaga.handlers.guard import Handler
from stepsaga.handlers.operation import Operation
from stepsaga.handlers.reconcile import reconcile_handler
from stepsaga.workflow import Saga
from stepsaga.workflow.saga import RECONCILER_FUNCTION

#: The attribute naming a handler module's operation.
OPERATION_ATTRIBUTE = "OPERATION"


def default_saga() -> Saga:
    """The replacement-order saga (imported on demand: ``workflows`` sits above the core)."""
    from workflows.replacement_order import saga

    return saga


def operations_of(saga: Saga) -> dict[str, Operation[Any]]:
    """Operation name → ``Operation``, from the modules of the saga's handler paths."""
    catalog: dict[str, Operation[Any]] = {}
    wanted: list[tuple[str, str]] = []
    for step in saga.steps:
        wanted.append((step.op, step.handler_path))
        if step.compensation is not None:
            wanted.append((step.compensation.operation, step.compensation.handler_path))
    for name, path in wanted:
        module = importlib.import_module(path.rsplit(".", 1)[0])
        operation = getattr(module, OPERATION_ATTRIBUTE, None)
        if not isinstance(operation, Operation):
            raise TypeError(f"{module.__name__} defines no {OPERATION_ATTRIBUTE} (an Operation)")
        if operation.name != name:
            raise ValueError(
                f"{module.__name__}.{OPERATION_ATTRIBUTE} performs {operation.name!r}, "
                f"but the saga runs {name!r} there"
            )
        catalog[name] = operation
    return catalog


def build_handlers(
    deps: HandlerDeps,
    saga: Saga | None = None,
    operations: Mapping[str, Operation[Any]] | None = None,
) -> dict[str, Handler]:
    """Logical function name → ``handler(event, context) -> dict`` for every function of
    ``saga`` (default: replacement-order). ``operations`` (operation name → ``Operation``)
    overrides what the handler modules define (tests, sagas without modules)."""
    saga = saga or default_saga()
    catalog = dict(operations) if operations is not None else operations_of(saga)
    handlers: dict[str, Handler] = {}
    for step in saga.steps:
        handlers[step.name] = forward_handler(deps, saga, step, catalog[step.op])
        compensate = step.compensation
        if compensate is not None:
            handlers[compensate.name] = compensation_handler(
                deps, saga, step, compensate, catalog[step.op], catalog[compensate.operation]
            )
    if saga.uses_reconciler:
        handlers[RECONCILER_FUNCTION] = reconcile_handler(deps, saga, catalog)
    missing = sorted(set(saga.functions) - set(handlers))
    if missing:
        raise ValueError(f"saga {saga.name}: no handler for {', '.join(missing)}")
    return handlers
