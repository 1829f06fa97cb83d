"""One wrapper around every invocation: only ``stepsaga.errors`` leave a handler.

The error's class name is the Lambda ``errorType`` Step Functions matches, so a team's
own subclass leaves as its routing class (``stepsaga.errors.routed``: same message and
data, chained to the original), and an unexpected exception (a bug, a library error nobody
mapped) must not escape as ``KeyError``: it becomes ``TransientError`` (its message keeping
the original's type, message and raising frame: ``stepsaga.errors.describe``) — retried a
few times, then the execution fails at the step and is redriven after a fix. That is safe
because the ledger, not the error, decides what happened: a later attempt replays, looks
first or goes to reconciliation.
(Errors inside a downstream call are settled by the ledger's ``ERROR_TABLE``, in ``execute.py``.)

Claims taken during the invocation hold their lease until its deadline (the Lambda
context's remaining time; ``stepsaga.ledger._lease``). The wrapper also counts the metric
an error stands for (and ``RoutedError`` for every error a ``Catch`` routes, so the
Lambda-errors alarm sees only faults), logs the outcome with its correlation fields and
flushes metrics at the end of every invocation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stepsaga._aws import metric_names
from stepsaga._handlers.decision import Decision
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.logs import InvocationLog
from stepsaga._handlers.metrics import metric_for
from stepsaga.errors import (
    COMPENSATE,
    RECONCILE,
    InvalidInputError,
    StepSagaError,
    TransientError,
    describe,
    names,
    routed,
)
from stepsaga.ledger._lease import invocation_deadline

Handler = Callable[[Any, Any], dict[str, Any]]

#: Error names a ``Catch`` routes to compensation or reconciliation (the same lists the ASL
#: compiler uses); anything else escaping a handler is a fault.
_ROUTED = frozenset(names(COMPENSATE) + names(RECONCILE))
Body = Callable[[Any, InvocationLog], dict[str, Any]]


def invocation(deps: HandlerDeps, function: str, body: Body) -> Handler:
    """A Lambda-style handler running ``body(event, log)`` under the rules above."""

    def handler(event: Any, context: Any) -> dict[str, Any]:
        log = InvocationLog(
            deps.logger,
            function=function,
            request_id=str(getattr(context, "aws_request_id", "") or "") or None,
        )
        try:
            with invocation_deadline(context, deps.clock):
                result = body(event, log)
        except StepSagaError as exc:
            error = routed(exc)  # a team's subclass leaves as its framework class
            _failed(deps, log, error)
            if error is exc:
                raise
            raise error from exc
        except Exception as exc:
            error = TransientError(
                f"{function}: unexpected {describe(exc)}; nothing is assumed about the "
                "effect (the ledger decides on the next attempt)",
                function=function,
            )
            _failed(deps, log, error)
            raise error from exc
        finally:
            _flush(deps, log)
        log.info("done")
        return result

    return handler


def _failed(deps: HandlerDeps, log: InvocationLog, error: StepSagaError) -> None:
    if isinstance(error, InvalidInputError):
        log.bind(decision=log.fields.get("decision") or Decision.INVALID.value)
    name = metric_for(error)
    if name is not None:
        _count(deps, log, name)
    if error.error_name() in _ROUTED:
        # An outcome the state machine routes, not a fault: the alarms tell them apart.
        _count(deps, log, metric_names.ROUTED_ERROR)
    log.warning(
        "failed",
        error=error.error_name(),
        detail=error.message,
        field=str(error.data["field"]) if "field" in error.data else None,
    )


def _count(deps: HandlerDeps, log: InvocationLog, name: str) -> None:
    try:
        deps.metrics.count(name, log.correlation())
    except Exception as exc:  # a metric must never change a handler's outcome
        log.warning("metric not counted", metric=name, error=type(exc).__name__)


def count(deps: HandlerDeps, log: InvocationLog, name: str) -> None:
    """Count ``name`` with this invocation's correlation fields as metadata."""
    _count(deps, log, name)


def _flush(deps: HandlerDeps, log: InvocationLog) -> None:
    try:
        deps.metrics.flush()
    except Exception as exc:
        log.warning("metrics not flushed", error=type(exc).__name__)
