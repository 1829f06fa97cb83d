"""The machinery shared by every task, compensation and reconciliation handler.

Handlers are thin: validate the event → build the action from the event's intent → run it
through the ledger → raise only ``stepsaga.errors``. One file per responsibility:

* ``deps.py`` — ``HandlerDeps`` (ledger, services, clock, logger, metrics, notifier, task
  callback) and ``local_deps`` for the embedded backend and tests;
* ``settings.py`` — ``HandlerSettings`` (the Lambda environment, typed), ``deps_from_settings``;
* ``registry.py`` — ``build_handlers(deps, saga=None)``: logical function name → handler;
* ``entrypoint.py`` — ``lambda_entry(name)``: the lazy module-level Lambda handler;
* ``operation.py`` — ``Operation``: what a task module defines (digest params, perform,
  lookup);
* ``decision.py`` — the ``decision`` log names and who looks before acting (what an
  exception does to a record is the ledger's ``ERROR_TABLE``);
* ``identity.py`` — the action from the event's intent; tenant/case/step/effect checks;
* ``execute.py`` — claim → look → perform → record, two-phase;
* ``forward.py``, ``compensation.py``, ``reconcile.py`` — the three kinds of handler;
* ``guard.py`` — one wrapper per invocation: error mapping, metrics, flush;
* ``logs.py``, ``metrics.py`` — Powertools logger adapter, EMF metrics sink.
"""

from stepsaga.handlers.decision import Decision
from stepsaga.handlers.deps import HandlerDeps, local_deps
from stepsaga.handlers.entrypoint import LambdaEntry, lambda_entry
from stepsaga.handlers.guard import Handler
from stepsaga.handlers.logs import InvocationLog, StructuredLogger, powertools_logger
from stepsaga.handlers.metrics import EmfMetrics, MetricsSink, NullMetrics, RecordingMetrics
from stepsaga.handlers.operation import Absent, Call, Found, Lookup, Operation, Outcome
from stepsaga.handlers.registry import build_handlers, default_saga, operations_of
from stepsaga.handlers.settings import HandlerSettings, deps_from_settings, load_settings

__all__ = [
    "Absent",
    "Call",
    "Decision",
    "EmfMetrics",
    "Found",
    "Handler",
    "HandlerDeps",
    "HandlerSettings",
    "InvocationLog",
    "LambdaEntry",
    "Lookup",
    "MetricsSink",
    "NullMetrics",
    "Operation",
    "Outcome",
    "RecordingMetrics",
    "StructuredLogger",
    "build_handlers",
    "default_saga",
    "deps_from_settings",
    "lambda_entry",
    "load_settings",
    "local_deps",
    "operations_of",
    "powertools_logger",
]
