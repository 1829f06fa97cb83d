"""Claim → (look) → perform → record: one action through the ledger, two-phase.

The claim is written before anything is sent (``IN_PROGRESS``, budget debited); the outcome
after (``COMPLETED``/``FAILED``/``RELEASED``/``UNKNOWN``). What each downstream error means
for the record is the ledger's ``ERROR_TABLE`` (the one ``Ledger.perform`` uses). A
process that dies in between leaves ``IN_PROGRESS`` with a lease: the next attempt takes
over (keyed/blind, looking first) or the ledger turns it ``UNKNOWN`` (physical).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stepsaga._aws import metric_names
from stepsaga._handlers.decision import (
    SAME_KEY_RECALLS,
    Decision,
    decision_for,
    looks_before_acting,
)
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.guard import count
from stepsaga._handlers.logs import InvocationLog
from stepsaga._handlers.step_handler import Call, CallContext, Found, Outcome, StepHandler
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    IllegalTransitionError,
    OutcomeUnknownError,
    StepSagaError,
    TransientError,
    describe,
)
from stepsaga.ledger import Action
from stepsaga.ledger._models import Claim, EffectClass, Replay
from stepsaga.ledger._outcomes import ErrorFamily, Settlement, error_family, settlement_for
from stepsaga.workflow._events import StepResult

MAX_REASON = 500


def run_action(
    deps: HandlerDeps,
    operation: StepHandler[Any, Any],
    action: Action,
    params: Any,
    log: InvocationLog,
    *,
    original: Action | None = None,
    undo: str | None = None,
) -> dict[str, Any]:
    """Perform ``action`` at most once and return its ``StepResult`` (as JSON). ``undo``
    names the step's compensation (a later revision asks whether an earlier effect was
    undone)."""
    log.bind(action_key=action.key)
    if action.effect is EffectClass.READ:
        outcome = _read(deps, operation, _call(action, params, 1, original), log)
        return _result(action, dict(outcome.result), replayed=False)
    try:
        granted = deps.ledger.claim(action, undo=undo)
    except ActionInProgressError:
        log.bind(decision=Decision.IN_PROGRESS.value)
        raise
    except ActionConflictError:
        log.bind(decision=Decision.CONFLICT.value)
        raise
    except OutcomeUnknownError:
        log.bind(decision=Decision.UNKNOWN.value)
        raise
    except StepSagaError:
        log.bind(decision=Decision.REFUSED.value)
        raise
    if isinstance(granted, Replay):
        return _replay(deps, granted, action, log)
    claim = granted
    log.bind(attempt=claim.attempt)
    if claim.takeover:
        log.warning("took over an expired lease", takeover=True)
    call = _call(action, params, claim.attempt, original)
    outcome = _act(deps, operation, claim, call, log)
    try:
        deps.ledger.complete(claim, outcome.result, reference=outcome.reference)
    except IllegalTransitionError as exc:
        log.bind(decision=Decision.IN_PROGRESS.value)
        raise ActionInProgressError(
            f"{action.key}: another attempt took the action over; its outcome will be replayed",
            retry_after_seconds=1.0,
            key=action.key,
        ) from exc
    if log.fields.get("decision") is None:
        log.bind(decision=Decision.PERFORMED.value)
    return _result(action, dict(outcome.result), replayed=False)


def _call(action: Action, params: Any, attempt: int, original: Action | None) -> Call[Any]:
    ctx = CallContext(
        tenant_id=action.tenant_id,
        case_id=action.intent.case_id,
        action_key=action.key,
        attempt=attempt,
    )
    return Call(ctx=ctx, params=params, action=action, original=original)


def _result(action: Action, result: dict[str, Any], *, replayed: bool) -> dict[str, Any]:
    return StepResult(
        action_key=action.key, status="COMPLETED", result=result, replayed=replayed
    ).model_dump(mode="json")


def _replay(
    deps: HandlerDeps, replay: Replay, action: Action, log: InvocationLog
) -> dict[str, Any]:
    log.bind(decision=Decision.REPLAYED.value, attempt=replay.record.attempts)
    count(deps, log, metric_names.DUPLICATE_REPLAYED)
    return _result(action, replay.unwrap(), replayed=True)  # a recorded failure raises


def _read(
    deps: HandlerDeps, operation: StepHandler[Any, Any], call: Call[Any], log: InvocationLog
) -> Outcome:
    """Reads record nothing and can always be repeated (``ERROR_TABLE``'s read column)."""
    log.bind(decision=Decision.PERFORMED.value)
    try:
        return operation.perform(deps.clients, call)
    except Exception as exc:
        decided = settlement_for(error_family(exc), EffectClass.READ)
        error = decided.raised(exc, key=call.action.key, attempts=1, reason=_reason(exc))
        if error is exc:
            raise
        raise error from exc


def _act(
    deps: HandlerDeps,
    operation: StepHandler[Any, Any],
    claim: Claim,
    call: Call[Any],
    log: InvocationLog,
) -> Outcome:
    effect = claim.record.effect
    if looks_before_acting(effect, claim.attempt):
        found = _look_first(deps, operation, claim, call, log)
        if found is not None:
            return found
    # The table decides every failure; after an uncertain call, the answer to the call
    # again with the same key is looked up as such (a refusal then proves nothing).
    recalls = 0
    while True:
        try:
            return operation.perform(deps.clients, call)
        except Exception as exc:
            family = error_family(exc)
            decided = settlement_for(family, effect, recalled=recalls > 0)
            if decided.recall and recalls < SAME_KEY_RECALLS:
                recalls += 1
                log.warning(
                    "uncertain outcome; calling again with the same key",
                    decision=Decision.RECALL_SAME_KEY.value,
                )
                continue
            error = _settle(deps, claim, family, decided, exc, log)
            if error is exc:
                raise
            raise error from exc


def _look_first(
    deps: HandlerDeps,
    operation: StepHandler[Any, Any],
    claim: Claim,
    call: Call[Any],
    log: InvocationLog,
) -> Outcome | None:
    """Reconcile before repeating: an earlier attempt's effect is recorded, not redone."""
    try:
        found = operation.lookup(deps.clients, call)
    except StepSagaError as exc:
        _record(log, deps.ledger.release, claim, _reason(exc))
        log.bind(decision=Decision.RELEASED.value)
        raise TransientError(
            f"{claim.key}: could not look for an earlier attempt's effect before acting "
            f"({exc.error_name()}); retry",
            key=claim.key,
        ) from exc
    if isinstance(found, Found):
        log.bind(decision=Decision.FOUND.value)
        log.info("found an earlier attempt's effect downstream", evidence=found.evidence)
        return Outcome(result=dict(found.result), reference=found.reference)
    return None


def _settle(
    deps: HandlerDeps,
    claim: Claim,
    family: ErrorFamily,
    decided: Settlement,
    cause: Exception,
    log: InvocationLog,
) -> BaseException:
    """Record ``cause`` as its cell of ``ERROR_TABLE`` says; return the error to raise."""
    reason = _reason(cause)
    log.bind(decision=decision_for(family, decided).value)
    _record(log, deps.ledger.settle, claim, decided, cause, reason)
    return decided.raised(cause, key=claim.key, attempts=claim.attempt, reason=reason)


def _record(log: InvocationLog, write: Callable[..., object], *args: Any) -> None:
    """Write an outcome; if the ledger cannot take it, the lease rules take over and the
    caller still sees the original error."""
    try:
        write(*args)
    except StepSagaError as exc:
        log.warning("could not record the outcome", error=exc.error_name(), detail=exc.message)


def _reason(exc: BaseException) -> str:
    """What the record, the raised error (the history's cause) and the item keep of
    ``exc``: type, redacted message and raising frame (``stepsaga.errors.describe``)."""
    return describe(exc)[:MAX_REASON]
