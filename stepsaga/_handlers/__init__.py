"""The machinery shared by every task, compensation and reconciliation handler.

Handlers are thin: validate the event → build the action from the event's intent → run it
through the ledger → raise only ``stepsaga.errors``. One file per responsibility:

* ``step_handler.py`` — ``StepHandler``: what an app writes per step (perform, lookup,
  consequential params), ``Call``, ``CallContext``, ``Outcome``;
* ``deps.py`` — ``HandlerDeps`` (ledger, the app's clients, clock, logger, metrics,
  notifier, task callback) and ``local_deps`` for the embedded backend and tests;
* ``settings.py`` — ``HandlerSettings`` (the Lambda environment, typed), ``deps_from_settings``;
* ``registry.py`` — ``build_handlers(deps, saga)``: logical function name → handler;
* ``entrypoint.py`` — the generic Lambda entry point (``stepsaga.lambda_handler.handler``);
* ``decision.py`` — the ``decision`` log names and who looks before acting (what an
  exception does to a record is the ledger's ``ERROR_TABLE``);
* ``identity.py`` — the action from the event's intent; tenant/case/step/effect checks;
* ``execute.py`` — claim → look → perform → record, two-phase;
* ``forward.py``, ``compensation.py``, ``reconcile.py`` — the three kinds of handler;
* ``guard.py`` — one wrapper per invocation: error mapping, metrics, flush;
* ``logs.py``, ``metrics.py`` — Powertools logger adapter, EMF metrics sink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga._handlers.decision import Decision
    from stepsaga._handlers.deps import HandlerDeps, local_deps
    from stepsaga._handlers.guard import Handler
    from stepsaga._handlers.logs import InvocationLog, StructuredLogger, powertools_logger
    from stepsaga._handlers.metrics import EmfMetrics, MetricsSink, NullMetrics, RecordingMetrics
    from stepsaga._handlers.registry import build_handlers, step_handlers_of
    from stepsaga._handlers.settings import HandlerSettings, deps_from_settings, load_settings
    from stepsaga._handlers.step_handler import (
        Absent,
        Call,
        CallContext,
        Found,
        Lookup,
        Outcome,
        StepHandler,
        load_step_handler,
    )

# Names load on first use: the CLI's read-only verbs never pay for what they do not run.
_WHERE = {
    "Decision": "stepsaga._handlers.decision",
    "HandlerDeps": "stepsaga._handlers.deps",
    "local_deps": "stepsaga._handlers.deps",
    "Handler": "stepsaga._handlers.guard",
    "InvocationLog": "stepsaga._handlers.logs",
    "StructuredLogger": "stepsaga._handlers.logs",
    "powertools_logger": "stepsaga._handlers.logs",
    "EmfMetrics": "stepsaga._handlers.metrics",
    "MetricsSink": "stepsaga._handlers.metrics",
    "NullMetrics": "stepsaga._handlers.metrics",
    "RecordingMetrics": "stepsaga._handlers.metrics",
    "build_handlers": "stepsaga._handlers.registry",
    "step_handlers_of": "stepsaga._handlers.registry",
    "HandlerSettings": "stepsaga._handlers.settings",
    "deps_from_settings": "stepsaga._handlers.settings",
    "load_settings": "stepsaga._handlers.settings",
    "Absent": "stepsaga._handlers.step_handler",
    "Call": "stepsaga._handlers.step_handler",
    "CallContext": "stepsaga._handlers.step_handler",
    "Found": "stepsaga._handlers.step_handler",
    "Lookup": "stepsaga._handlers.step_handler",
    "Outcome": "stepsaga._handlers.step_handler",
    "StepHandler": "stepsaga._handlers.step_handler",
    "load_step_handler": "stepsaga._handlers.step_handler",
}

__all__ = [
    "Absent",
    "Call",
    "CallContext",
    "Decision",
    "EmfMetrics",
    "Found",
    "Handler",
    "HandlerDeps",
    "HandlerSettings",
    "InvocationLog",
    "Lookup",
    "MetricsSink",
    "NullMetrics",
    "Outcome",
    "RecordingMetrics",
    "StepHandler",
    "StructuredLogger",
    "build_handlers",
    "deps_from_settings",
    "load_settings",
    "load_step_handler",
    "local_deps",
    "powertools_logger",
    "step_handlers_of",
]


if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)
