"""Sagas written in Python, compiled to validated Amazon States Language.

Define a ``Saga`` of ``Step``s (``saga.py``), compile it (``compile``), check it
(``check_definition``), fill its function placeholders (``render``) and draw it
(``stepsaga.workflow.graph``). Handlers validate their events with the models in
``events.py``.
"""

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
from stepsaga.workflow.retry import (
    DEFAULT_RETRY,
    LAMBDA_SERVICE_RETRY,
    TRANSIENT_RETRY,
    JitterStrategy,
    RetryPolicy,
    SagaDefinitionError,
)
from stepsaga.workflow.saga import Compensate, Escalate, Saga, Step
from stepsaga.workflow.substitutions import placeholders, render

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
    "JitterStrategy",
    "OperatorDecision",
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
