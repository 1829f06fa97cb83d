"""Sagas written in Python, compiled to validated Amazon States Language.

Define a ``Saga`` of ``Step``s, ``Parallel`` groups and ``ForEach`` per-item steps
(``saga.py``), compile it (``compile``), check it (``check_definition``), fill its
function placeholders (``render``) and draw it (``stepsaga.workflow.graph``). Handlers
validate their events with the models in ``events.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.workflow.compiler import compile, compile_saga
    from stepsaga.workflow.effects import EffectClass
    from stepsaga.workflow.events import (
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
    from stepsaga.workflow.names import QueryLanguage
    from stepsaga.workflow.retry import (
        DEFAULT_RETRY,
        LAMBDA_SERVICE_RETRY,
        TRANSIENT_RETRY,
        JitterStrategy,
        RetryPolicy,
        SagaDefinitionError,
    )
    from stepsaga.workflow.saga import Compensate, Escalate, ForEach, Parallel, Saga, Step
    from stepsaga.workflow.substitutions import placeholders, render

# Names load on first use: the CLI's read-only verbs never pay for what they do not run.
_WHERE = {
    "compile": "stepsaga.workflow.compiler",
    "compile_saga": "stepsaga.workflow.compiler",
    "EffectClass": "stepsaga.workflow.effects",
    "ActionRef": "stepsaga.workflow.events",
    "AwaitDecisionEvent": "stepsaga.workflow.events",
    "CaughtError": "stepsaga.workflow.events",
    "CompensationEvent": "stepsaga.workflow.events",
    "CompensationFailureEvent": "stepsaga.workflow.events",
    "EscalationEvent": "stepsaga.workflow.events",
    "ExecutionInfo": "stepsaga.workflow.events",
    "OperatorDecision": "stepsaga.workflow.events",
    "ReconcileEvent": "stepsaga.workflow.events",
    "ReconciliationEvent": "stepsaga.workflow.events",
    "ReconciliationOutcome": "stepsaga.workflow.events",
    "ReconciliationResult": "stepsaga.workflow.events",
    "StepEvent": "stepsaga.workflow.events",
    "StepResult": "stepsaga.workflow.events",
    "parse_event": "stepsaga.workflow.events",
    "parse_reconciliation_event": "stepsaga.workflow.events",
    "QueryLanguage": "stepsaga.workflow.names",
    "DEFAULT_RETRY": "stepsaga.workflow.retry",
    "LAMBDA_SERVICE_RETRY": "stepsaga.workflow.retry",
    "TRANSIENT_RETRY": "stepsaga.workflow.retry",
    "JitterStrategy": "stepsaga.workflow.retry",
    "RetryPolicy": "stepsaga.workflow.retry",
    "SagaDefinitionError": "stepsaga.workflow.retry",
    "Compensate": "stepsaga.workflow.saga",
    "Escalate": "stepsaga.workflow.saga",
    "ForEach": "stepsaga.workflow.saga",
    "Parallel": "stepsaga.workflow.saga",
    "Saga": "stepsaga.workflow.saga",
    "Step": "stepsaga.workflow.saga",
    "placeholders": "stepsaga.workflow.substitutions",
    "render": "stepsaga.workflow.substitutions",
}

__all__ = [
    "DEFAULT_RETRY",
    "LAMBDA_SERVICE_RETRY",
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
    "SagaDefinitionError",
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
