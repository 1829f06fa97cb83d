"""Sagas written in Python, compiled to validated Amazon States Language.

Define a ``Saga`` of ``Step``s, ``Parallel`` groups and ``ForEach`` per-item steps
(``saga.py``), compile it (``compile``), check it (``check_definition``), fill its
function placeholders (``render``) and draw it (``stepsaga.workflow._graph``). Handlers
validate their events with the models in ``events.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.workflow._compiler import compile, compile_saga
    from stepsaga.workflow._effects import EffectClass
    from stepsaga.workflow._events import (
        ActionRef,
        AwaitDecisionEvent,
        CaughtError,
        CompensationEvent,
        CompensationFailureEvent,
        EscalationEvent,
        ExecutionInfo,
        OperatorDecision,
        ReconcileEvent,
        ReconciliationEvent,
        ReconciliationOutcome,
        ReconciliationResult,
        StepEvent,
        StepResult,
        parse_event,
        parse_reconciliation_event,
    )
    from stepsaga.workflow._names import QueryLanguage
    from stepsaga.workflow._retry import (
        DEFAULT_RETRY,
        IN_PROGRESS_RETRY,
        LAMBDA_SERVICE_RETRY,
        LAMBDA_TIMEOUT_RETRY,
        TRANSIENT_RETRY,
        JitterStrategy,
        RetryPolicy,
    )
    from stepsaga.workflow._saga import Compensate, Escalate, ForEach, Parallel, Saga, Step
    from stepsaga.workflow._substitutions import placeholders, render

# Names load on first use: the CLI's read-only verbs never pay for what they do not run.
_WHERE = {
    "compile": "stepsaga.workflow._compiler",
    "compile_saga": "stepsaga.workflow._compiler",
    "EffectClass": "stepsaga.workflow._effects",
    "ActionRef": "stepsaga.workflow._events",
    "AwaitDecisionEvent": "stepsaga.workflow._events",
    "CaughtError": "stepsaga.workflow._events",
    "CompensationEvent": "stepsaga.workflow._events",
    "CompensationFailureEvent": "stepsaga.workflow._events",
    "EscalationEvent": "stepsaga.workflow._events",
    "ExecutionInfo": "stepsaga.workflow._events",
    "OperatorDecision": "stepsaga.workflow._events",
    "ReconcileEvent": "stepsaga.workflow._events",
    "ReconciliationEvent": "stepsaga.workflow._events",
    "ReconciliationOutcome": "stepsaga.workflow._events",
    "ReconciliationResult": "stepsaga.workflow._events",
    "StepEvent": "stepsaga.workflow._events",
    "StepResult": "stepsaga.workflow._events",
    "parse_event": "stepsaga.workflow._events",
    "parse_reconciliation_event": "stepsaga.workflow._events",
    "QueryLanguage": "stepsaga.workflow._names",
    "DEFAULT_RETRY": "stepsaga.workflow._retry",
    "IN_PROGRESS_RETRY": "stepsaga.workflow._retry",
    "LAMBDA_SERVICE_RETRY": "stepsaga.workflow._retry",
    "LAMBDA_TIMEOUT_RETRY": "stepsaga.workflow._retry",
    "TRANSIENT_RETRY": "stepsaga.workflow._retry",
    "JitterStrategy": "stepsaga.workflow._retry",
    "RetryPolicy": "stepsaga.workflow._retry",
    "Compensate": "stepsaga.workflow._saga",
    "Escalate": "stepsaga.workflow._saga",
    "ForEach": "stepsaga.workflow._saga",
    "Parallel": "stepsaga.workflow._saga",
    "Saga": "stepsaga.workflow._saga",
    "Step": "stepsaga.workflow._saga",
    "placeholders": "stepsaga.workflow._substitutions",
    "render": "stepsaga.workflow._substitutions",
}

__all__ = [
    "DEFAULT_RETRY",
    "IN_PROGRESS_RETRY",
    "LAMBDA_SERVICE_RETRY",
    "LAMBDA_TIMEOUT_RETRY",
    "TRANSIENT_RETRY",
    "ActionRef",
    "AwaitDecisionEvent",
    "CaughtError",
    "Compensate",
    "CompensationEvent",
    "CompensationFailureEvent",
    "EffectClass",
    "Escalate",
    "EscalationEvent",
    "ExecutionInfo",
    "ForEach",
    "JitterStrategy",
    "OperatorDecision",
    "Parallel",
    "QueryLanguage",
    "ReconcileEvent",
    "ReconciliationEvent",
    "ReconciliationOutcome",
    "ReconciliationResult",
    "RetryPolicy",
    "Saga",
    "Step",
    "StepEvent",
    "StepResult",
    "compile",
    "compile_saga",
    "parse_event",
    "parse_reconciliation_event",
    "placeholders",
    "render",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
