"""Compile a ``Saga`` to Amazon States Language (JSONPath or JSONata, Standard workflows).

ASL feature budget — the embedded engine implements exactly these, so the compiler uses
nothing else:

* states: ``Task``, ``Pass``, ``Choice``, ``Succeed``, ``Fail`` (no Wait/Map/Parallel);
* Task resources: ``arn:aws:states:::lambda:invoke`` and
  ``arn:aws:states:::lambda:invoke.waitForTaskToken``, ``Parameters`` =
  ``{"FunctionName": "${<Function>FunctionArn}", "Payload": {…}}``;
* fields: ``Comment``, ``StartAt``, ``States``, ``Type``, ``Resource``, ``Parameters``,
  ``ResultSelector``, ``ResultPath``, ``TimeoutSeconds``, ``Retry`` (``ErrorEquals``,
  ``IntervalSeconds``, ``MaxAttempts``, ``BackoffRate``, ``MaxDelaySeconds``,
  ``JitterStrategy``), ``Catch`` (``ErrorEquals``, ``ResultPath``, ``Next``), ``Next``,
  ``Choices`` (``Variable`` + ``StringEquals``), ``Default``, ``Error``, ``Cause``;
  never ``InputPath``/``OutputPath`` or ``HeartbeatSeconds``; ``QueryLanguage`` only when
  ``Saga.query_language`` is JSONata: the machine below is then translated field for field
  (``stepsaga.workflow.jsonata``), same states and routes;
* paths: plain reference paths only (``$``, ``$.a.b``, ``$.Payload.x``); context object:
  ``$$.Execution.Name``, ``$$.State.Name``, ``$$.State.RetryCount``, ``$$.Task.Token``;
* intrinsic functions: **none**.

State layout. ``Prepare`` (a Pass) wraps the execution input so every path is unambiguous::

    {"case": <execution input>, "results": {}, "compensations": {}, "reconciliation": {}}

* ``$.results.<Step>`` — each forward step's ``StepResult``;
* ``$.failure`` — the ``{Error, Cause}`` a ``Catch`` caught on a forward step;
* ``$.compensations.<Step>`` — how ``<Step>``'s effect was handled on the way back
  (``StepResult`` of its compensation, or ``ReconciliationResult`` of its escalation);
* ``$.reconciliation.<Step>`` — the ``ReconciliationResult``/decision for ``<Step>``
  (and ``$.reconciliation.<Compensation>`` when a compensation failed: then
  ``$.compensations.<Step>`` stays unset unless a later run of the compensation completes);
* ``$.compensation_failure`` — the ``{Error, Cause}`` of a compensation that failed.

Routes out of a forward step ``X`` (error names come from ``stepsaga.errors``):

* ``Retry``: ``LAMBDA_SERVICE_ERRORS``, then ``RETRYABLE`` (bounded, capped, FULL jitter).
  When they run out the error is *not* caught: the execution fails at ``X`` and can be
  redriven (the ledger's attempt budget bounds recovery across redrives).
* ``Catch COMPENSATE`` (business rejection, invalid input) → the dispositions of the
  completed steps in reverse order — ``<Compensation>`` tasks and ``Escalate<Step>``
  records — then ``Fail Compensated`` (``Saga.Compensated``).
* ``Catch RECONCILE`` (outcome unknown, budgets, conflict, replay window) →
  ``Reconcile<X>`` (automatic reconciliation, ``ReconciliationResult``) →
  ``<X>Decision`` (Choice on ``$.reconciliation.<X>.outcome``):
  ``applied`` → ``X`` again (the ledger record is ``COMPLETED``: the handler replays the
  recorded outcome without calling downstream, so ``$.results.X`` is filled and the saga
  goes on to the next step); ``not_applied`` → ``X`` again with the same action key (the
  record is ``RELEASED`` and may be claimed again); anything else →
  ``AwaitDecision<X>`` (``lambda:invoke.waitForTaskToken``: the handler stores
  ``$$.Task.Token`` on the item; ``stepsaga recon resolve`` sends the ``OperatorDecision``)
  → ``<X>Decision`` again. The wait is bounded by ``TimeoutSeconds``
  (``Saga.decision_timeout_seconds``); no ``HeartbeatSeconds`` because nobody heartbeats a
  person's decision. A timed-out wait fails the execution; a redrive waits again.
* A compensation ``C`` that fails after its retries is caught (``States.ALL``) →
  ``Record<C>Failure`` (automatic reconciliation of ``C``'s own action, exactly as for a
  forward step: ``ReconciliationResult`` at ``$.reconciliation.<C>``) → ``<C>Decision``
  (Choice on its ``outcome``): ``applied`` → the unwinding goes on (the next disposition,
  or ``Compensated``; the record is ``COMPLETED``, nothing is called again);
  ``not_applied`` → ``C`` again with the same action key (the record is ``RELEASED``);
  anything else → ``Fail CompensationFailed`` (``Saga.CompensationFailed``) with the item
  open for a person. Only the ledger bounds the ``C`` → ``Record<C>Failure`` → ``C``
  round: every automatic ``not_applied`` is paid for by a claim of ``C``, and once its
  lifetime attempt budget is spent the claim fails ``AttemptBudgetExhaustedError``, which
  reconciliation leaves to a person (``stepsaga.reconciliation.automatic``). Escalations
  and reconciliation tasks are not caught: if the reconciler itself keeps failing, the
  execution fails there and can be redriven.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stepsaga.errors import COMPENSATE, RECONCILE, SAGA_COMPENSATED, SAGA_COMPENSATION_FAILED
from stepsaga.errors import names as error_names
from stepsaga.workflow import names
from stepsaga.workflow.events import (
    ActionRef,
    AwaitDecisionEvent,
    CompensationEvent,
    CompensationFailureEvent,
    EscalationEvent,
    ExecutionInfo,
    ReconcileEvent,
    ReconciliationOutcome,
    ReconciliationResult,
    StepEvent,
    StepResult,
)
from stepsaga.workflow.jsonata import to_jsonata
from stepsaga.workflow.names import QueryLanguage
from stepsaga.workflow.payloads import Path, selector, template
from stepsaga.workflow.retry import DEFAULT_RETRY, RetryPolicy
from stepsaga.workflow.saga import IDENTITY_PATHS, RECONCILER_FUNCTION, Compensate, Saga, Step
from stepsaga.workflow.validate import check_definition

LAMBDA_INVOKE = names.LAMBDA_INVOKE
LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN = names.LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN

#: Context-object paths the compiled machines read.
CONTEXT_PATHS = ("$$.Execution.Name", "$$.State.Name", "$$.State.RetryCount", "$$.Task.Token")

FAILURE_PATH = "$.failure"
COMPENSATION_FAILURE_PATH = "$.compensation_failure"

COMPENSATED_CAUSE = (
    "A step was rejected; the completed steps were compensated or escalated to reconciliation."
)
COMPENSATION_FAILED_CAUSE = (
    "A compensation failed after its retries and automatic reconciliation could not decide "
    "it; it was recorded for a person."
)


def results_path(step: str) -> str:
    return f"$.results.{step}"


def compensations_path(step: str) -> str:
    return f"$.compensations.{step}"


def reconciliation_path(state: str) -> str:
    return f"$.reconciliation.{state}"


def compile(saga: Saga) -> dict[str, Any]:
    """The ASL definition of ``saga`` with ``${<Function>FunctionArn}`` placeholders.

    The result has passed the graph check (``stepsaga.workflow.validate``).
    """
    definition = _Compiler(saga).definition()
    check_definition(definition)
    if saga.query_language is QueryLanguage.JSONATA:
        return to_jsonata(definition)
    return definition


compile_saga = compile


class _Compiler:
    def __init__(self, saga: Saga) -> None:
        self.saga = saga
        self.steps = list(saga.steps)

    def definition(self) -> dict[str, Any]:
        states: dict[str, Any] = {names.PREPARE: self.prepare()}
        for index, step in enumerate(self.steps):
            states[step.name] = self.forward(index, step)
            if step.has_effect:
                states[names.reconcile(step.name)] = self.reconcile(step)
                states[names.decision(step.name)] = self.decision(step)
                states[names.await_decision(step.name)] = self.await_decision(step)
        states[names.COMPLETED] = {"Type": "Succeed", "Comment": "Every step completed."}
        # Dispositions of every step but the last (nothing runs after the last step).
        for index in reversed(range(len(self.steps) - 1)):
            step = self.steps[index]
            if step.compensation is not None:
                comp = step.compensation
                states[comp.name] = self.compensation(index, step, comp)
                states[names.record_failure(comp.name)] = self.record_failure(step, comp)
                states[names.decision(comp.name)] = self.compensation_decision(index, comp)
            elif step.escalation is not None:
                states[names.escalate(step.name)] = self.escalation(index, step)
        states[names.COMPENSATED] = {
            "Type": "Fail",
            "Comment": "Business rejection: completed steps were compensated or escalated.",
            "Error": SAGA_COMPENSATED,
            "Cause": COMPENSATED_CAUSE,
        }
        if any(step.compensation is not None for step in self.steps[:-1]):
            states[names.COMPENSATION_FAILED] = {
                "Type": "Fail",
                "Comment": "A compensation failed and waits in reconciliation.",
                "Error": SAGA_COMPENSATION_FAILED,
                "Cause": COMPENSATION_FAILED_CAUSE,
            }
        return {
            "Comment": self.saga.comment or f"stepsaga saga {self.saga.name}",
            "StartAt": names.PREPARE,
            "States": states,
        }

    # --- pieces shared by the tasks ----------------------------------------------------

    def identity(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"saga": self.saga.name}
        for field, path in IDENTITY_PATHS.items():
            fields[field] = Path(f"$.case.{path}")
        return fields

    @staticmethod
    def execution() -> dict[str, Any]:
        return template(
            ExecutionInfo,
            name=Path("$$.Execution.Name"),
            state=Path("$$.State.Name"),
            retry_count=Path("$$.State.RetryCount"),
        )

    @staticmethod
    def params(step: Step) -> Path | dict[str, Any]:
        return Path(f"$.case.{step.params}") if step.params is not None else {}

    @staticmethod
    def action(step: Step) -> dict[str, Any]:
        return {"step": step.name, "operation": step.op, "effect": step.effect}

    def task(
        self,
        function: str,
        payload: dict[str, Any],
        *,
        comment: str,
        result_selector: dict[str, Any],
        result_path: str,
        timeout: int,
        retry: Sequence[RetryPolicy],
        next_state: str,
        catch: list[dict[str, Any]] | None = None,
        wait_for_token: bool = False,
    ) -> dict[str, Any]:
        state: dict[str, Any] = {
            "Type": "Task",
            "Comment": comment,
            "Resource": LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN if wait_for_token else LAMBDA_INVOKE,
            "Parameters": {"FunctionName": names.placeholder(function), "Payload": payload},
            "ResultSelector": result_selector,
            "ResultPath": result_path,
            "TimeoutSeconds": timeout,
            "Retry": [policy.to_asl() for policy in retry],
        }
        if catch:
            state["Catch"] = catch
        state["Next"] = next_state
        return state

    def reconciler_task(
        self,
        payload: dict[str, Any],
        *,
        comment: str,
        result_path: str,
        timeout: int,
        next_state: str,
    ) -> dict[str, Any]:
        """A task on the one reconciliation function, returning ``ReconciliationResult``."""
        return self.task(
            RECONCILER_FUNCTION,
            payload,
            comment=comment,
            result_selector=selector(ReconciliationResult, "$.Payload"),
            result_path=result_path,
            timeout=timeout,
            retry=DEFAULT_RETRY,
            next_state=next_state,
        )

    def next_forward(self, index: int) -> str:
        return self.steps[index + 1].name if index + 1 < len(self.steps) else names.COMPLETED

    def unwind_from(self, index: int) -> str:
        """First state of the way back when step ``index`` is rejected: the disposition of
        the nearest completed step before it, or ``Compensated`` if there is none."""
        for earlier in reversed(self.steps[:index]):
            if earlier.compensation is not None:
                return earlier.compensation.name
            if earlier.escalation is not None:
                return names.escalate(earlier.name)
        return names.COMPENSATED

    # --- states ------------------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        return {
            "Type": "Pass",
            "Comment": "Keep the case apart from the results, so every path is unambiguous.",
            "Parameters": {"case.$": "$", "results": {}, "compensations": {}, "reconciliation": {}},
            "Next": self.steps[0].name,
        }

    def forward(self, index: int, step: Step) -> dict[str, Any]:
        catch = [
            {
                "ErrorEquals": error_names(COMPENSATE),
                "ResultPath": FAILURE_PATH,
                "Next": self.unwind_from(index),
            }
        ]
        if step.has_effect:
            catch.append(
                {
                    "ErrorEquals": error_names(RECONCILE),
                    "ResultPath": FAILURE_PATH,
                    "Next": names.reconcile(step.name),
                }
            )
        payload = template(
            StepEvent,
            kind="step",
            **self.identity(),
            **self.action(step),
            params=self.params(step),
            execution=self.execution(),
        )
        return self.task(
            step.name,
            payload,
            comment=f"{step.op} ({step.effect.value})",
            result_selector=selector(StepResult, "$.Payload"),
            result_path=results_path(step.name),
            timeout=step.timeout_seconds,
            retry=step.retry,
            catch=catch,
            next_state=self.next_forward(index),
        )

    def reconcile(self, step: Step) -> dict[str, Any]:
        payload = template(
            ReconcileEvent,
            kind="reconcile",
            **self.identity(),
            **self.action(step),
            params=self.params(step),
            failure=Path(FAILURE_PATH),
            execution=self.execution(),
        )
        return self.reconciler_task(
            payload,
            comment=f"Outcome of {step.name} uncertain: try to decide it automatically.",
            result_path=reconciliation_path(step.name),
            timeout=step.timeout_seconds,
            next_state=names.decision(step.name),
        )

    def decision(self, step: Step) -> dict[str, Any]:
        variable = f"{reconciliation_path(step.name)}.outcome"
        return {
            "Type": "Choice",
            "Comment": (
                f"applied: run {step.name} again, which replays the recorded outcome; "
                "not_applied: run it again with the same action key; else wait for a person."
            ),
            "Choices": [
                {
                    "Variable": variable,
                    "StringEquals": ReconciliationOutcome.APPLIED.value,
                    "Next": step.name,
                },
                {
                    "Variable": variable,
                    "StringEquals": ReconciliationOutcome.NOT_APPLIED.value,
                    "Next": step.name,
                },
            ],
            "Default": names.await_decision(step.name),
        }

    def await_decision(self, step: Step) -> dict[str, Any]:
        payload = template(
            AwaitDecisionEvent,
            kind="await_decision",
            **self.identity(),
            **self.action(step),
            params=self.params(step),
            failure=Path(FAILURE_PATH),
            item_id=Path(f"{reconciliation_path(step.name)}.item_id"),
            task_token=Path("$$.Task.Token"),
            execution=self.execution(),
        )
        return self.task(
            RECONCILER_FUNCTION,
            payload,
            comment=f"Wait for an operator to resolve {step.name} (SendTaskSuccess).",
            result_selector=selector(ReconciliationResult, "$"),
            result_path=reconciliation_path(step.name),
            timeout=self.saga.decision_timeout_seconds,
            retry=DEFAULT_RETRY,
            next_state=names.decision(step.name),
            wait_for_token=True,
        )

    def compensation(self, index: int, step: Step, comp: Compensate) -> dict[str, Any]:
        payload = template(
            CompensationEvent,
            kind="compensation",
            **self.identity(),
            step=comp.name,
            operation=comp.operation,
            effect=comp.effect,
            compensates=template(ActionRef, **self.action(step)),
            params=self.params(step),
            original=Path(results_path(step.name)),
            failure=Path(FAILURE_PATH),
            execution=self.execution(),
        )
        catch = [
            {
                "ErrorEquals": ["States.ALL"],
                "ResultPath": COMPENSATION_FAILURE_PATH,
                "Next": names.record_failure(comp.name),
            }
        ]
        return self.task(
            comp.name,
            payload,
            comment=f"Compensate {step.name}: {comp.operation} ({comp.effect.value}).",
            result_selector=selector(StepResult, "$.Payload"),
            result_path=compensations_path(step.name),
            timeout=comp.timeout_seconds,
            retry=comp.retry,
            catch=catch,
            next_state=self.unwind_from(index),
        )

    def record_failure(self, step: Step, comp: Compensate) -> dict[str, Any]:
        payload = template(
            CompensationFailureEvent,
            kind="compensation_failed",
            **self.identity(),
            step=comp.name,
            operation=comp.operation,
            effect=comp.effect,
            compensates=template(ActionRef, **self.action(step)),
            params=self.params(step),
            original=Path(results_path(step.name)),
            failure=Path(FAILURE_PATH),
            error=Path(COMPENSATION_FAILURE_PATH),
            execution=self.execution(),
        )
        return self.reconciler_task(
            payload,
            comment=f"{comp.name} failed: try to decide it automatically, else record it.",
            result_path=reconciliation_path(comp.name),
            timeout=comp.timeout_seconds,
            next_state=names.decision(comp.name),
        )

    def compensation_decision(self, index: int, comp: Compensate) -> dict[str, Any]:
        variable = f"{reconciliation_path(comp.name)}.outcome"
        return {
            "Type": "Choice",
            "Comment": (
                f"applied: {comp.name} took effect, unwind on; not_applied: run it again "
                "with the same action key (its attempt budget bounds this); else the item "
                "waits for a person."
            ),
            "Choices": [
                {
                    "Variable": variable,
                    "StringEquals": ReconciliationOutcome.APPLIED.value,
                    "Next": self.unwind_from(index),
                },
                {
                    "Variable": variable,
                    "StringEquals": ReconciliationOutcome.NOT_APPLIED.value,
                    "Next": comp.name,
                },
            ],
            "Default": names.COMPENSATION_FAILED,
        }

    def escalation(self, index: int, step: Step) -> dict[str, Any]:
        assert step.escalation is not None
        payload = template(
            EscalationEvent,
            kind="escalate",
            **self.identity(),
            **self.action(step),
            reason=step.escalation.reason,
            params=self.params(step),
            original=Path(results_path(step.name)),
            failure=Path(FAILURE_PATH),
            execution=self.execution(),
        )
        return self.reconciler_task(
            payload,
            comment=f"{step.name} is not reversed automatically: record it for a person.",
            result_path=compensations_path(step.name),
            timeout=step.timeout_seconds,
            next_state=self.unwind_from(index),
        )
