"""Compile a ``Saga`` to Amazon States Language (JSONPath or JSONata, Standard workflows).

What it emits is what the embedded engine runs: ``compile`` loads every definition it
produces into the engine (``stepsaga.workflow._validate.check_definition`` →
``stepsaga.engine.load``), so it cannot emit anything the engine refuses —
``stepsaga.engine.REFUSED`` is the one list of that. The compiler itself sticks to
``Task`` (``lambda:invoke`` and ``lambda:invoke.waitForTaskToken`` with
``{"FunctionName": "${<Function>FunctionArn}", "Payload": {…}}``), ``Pass``, ``Choice``,
``Parallel``, inline ``Map``, ``Succeed`` and ``Fail``; reference paths, the ``[*]``
wildcard in ``ResultSelector``, the context object (``$$.Execution.Input.<path>``,
``$$.Execution.Name``, ``$$.State.Name``, ``$$.State.RetryCount``, ``$$.Task.Token``,
``$$.Map.Item.Value``, ``$$.Map.Item.Index``); no intrinsic functions, never ``OutputPath`` or
``HeartbeatSeconds``, and ``InputPath`` only where a group's first rejection becomes
``$.failure``. ``QueryLanguage`` only when ``Saga.query_language`` is JSONata: the JSONPath
machine is then translated field for field (``stepsaga.workflow._jsonata``), same states
and routes, and loaded into the engine as well.

State layout. No state only moves data (each costs a billed transition): every read of the
case goes to the context object, ``$$.Execution.Input.<path>`` — the original input, free,
the same after a redrive — and the state data *starts as the case itself*, gaining these
top-level fields through ``ResultPath`` (which creates the objects on its way). A case may
not have a top-level field of these names (``names.StateField``, the one table):
``Saga`` refuses such an input model, ``Saga.check_input`` such an input at start.
The last forward element ends the execution (``"End": true`` on its task, also when
``<X>Decision`` sends it round again); only a final group, whose outcome is a Choice (which
cannot end an execution), goes on to ``Completed`` (``Succeed``). Success is the
execution's status, never a state's name.

* ``$.results.<Step>`` — each forward step's ``StepResult``;
* ``$.failure`` — the ``{Error, Cause}`` a ``Catch`` caught on a forward step;
* ``$.compensations.<Step>`` — how ``<Step>``'s effect was handled on the way back
  (``StepResult`` of its compensation, or ``ReconciliationResult`` of its escalation);
* ``$.reconciliation.<Step>`` — the ``ReconciliationResult``/decision for ``<Step>``
  (and ``$.reconciliation.<Compensation>`` when a compensation failed: then
  ``$.compensations.<Step>`` stays unset unless a later run of the compensation completes);
* ``$.compensation_failure`` — the ``{Error, Cause}`` of a compensation that failed;
* ``$.groups.<Group>`` — a parallel group's ``{"branches": [<branch state>…],
  "failures": [<{Error, Cause}>…]}`` or a per-item step's ``{"items": [{item, key,
  results, failure?}…], "failures": […]}``: a branch or an item keeps its results (and the
  rejection that stopped it) to itself, and ``failures`` lists the rejections.

Routes out of a forward step ``X`` (error names come from ``stepsaga.errors``):

* ``Retry``: ``stepsaga.workflow._retry.DEFAULT_RETRY`` (Lambda service errors, timeouts,
  transient errors, in-progress; bounded, capped, FULL jitter); a task-token wait never
  retries its ``States.Timeout``.
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
  reconciliation leaves to a person (``stepsaga._reconciliation.automatic``). Escalations
  and reconciliation tasks are not caught: if the reconciler itself keeps failing, the
  execution fails there and can be redriven.

Parallel groups and per-item steps. A group ``G`` (``Parallel``) is a ``Parallel`` state
whose branches run their steps with exactly the routes above, except that a rejection
ends the branch (``G Branch<i>Rejected`` for its first step, ``…RejectedLater`` for a
later one: a Pass keeping the failure and what completed) instead of
unwinding: no branch ever fails another, so an uncertain step waits in reconciliation in
its branch while the others finish and keep their proof. A per-item step ``X``
(``ForEach``) is an inline ``Map`` over the case's list (``ItemsPath`` into the context
object, which Step Functions and moto/LocalStack accept; ``MaxConcurrency``), each
iteration running ``X`` for one item (``params`` = the item, ``item`` = its declared key,
so the action key is ``…:<op>#<item>``) and ending ``<X>ItemDone`` or ``<X>ItemRejected``.
Then ``<G>Outcome`` (Choice: is ``$.groups.<G>.failures[0]`` present?) goes on, or
``<G>Rejected`` copies the first rejection to ``$.failure`` and unwinds — from the group's
own completed steps. On the way back a group member ``X`` is undone only if it completed:
``Was<X>Applied`` (Choice, ``IsPresent`` on its result) guards its disposition, and a
per-item step's items are undone by ``Undo<X>Items``, an inline ``Map`` over the recorded
iterations (the same ``MaxConcurrency``) whose item that cannot be undone ends
``<C>ItemFailed``; ``Undo<X>Outcome`` then fails the execution ``CompensationFailed`` if any
did. Order of undoing: latest element first; in a group, last branch first and each
branch's steps latest first; the items of a per-item step concurrently, as they ran.
Transient errors exhausted inside a branch or an item fail the group, and so the
execution, which a redrive resumes: only the unfinished branches and items run again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stepsaga.engine._definition import load
from stepsaga.errors import (
    COMPENSATE,
    RECONCILE,
    SAGA_COMPENSATED,
    SAGA_COMPENSATION_FAILED,
    DefinitionError,
    InvalidDefinition,
)
from stepsaga.errors import names as error_names
from stepsaga.workflow import _names as names
from stepsaga.workflow._events import (
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
from stepsaga.workflow._jsonata import to_jsonata
from stepsaga.workflow._names import QueryLanguage
from stepsaga.workflow._payloads import Path, selector, template
from stepsaga.workflow._retry import DEFAULT_RETRY, WAIT_FOR_TOKEN_RETRY, RetryPolicy
from stepsaga.workflow._saga import (
    IDENTITY_PATHS,
    RECONCILER_FUNCTION,
    Compensate,
    Element,
    ForEach,
    Parallel,
    Saga,
    Step,
)
from stepsaga.workflow._validate import check_definition

LAMBDA_INVOKE = names.LAMBDA_INVOKE
LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN = names.LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN

#: Context-object paths the compiled machines read (besides ``CASE``, the case itself).
CONTEXT_PATHS = ("$$.Execution.Name", "$$.State.Name", "$$.State.RetryCount", "$$.Task.Token")

CASE = names.CASE_PATH_ROOT
FAILURE_PATH = f"$.{names.StateField.FAILURE}"
COMPENSATION_FAILURE_PATH = f"$.{names.StateField.COMPENSATION_FAILURE}"

COMPENSATED_CAUSE = (
    "A step was rejected; the completed steps were compensated or escalated to reconciliation."
)
COMPENSATION_FAILED_CAUSE = (
    "A compensation failed after its retries and automatic reconciliation could not decide "
    "it; it was recorded for a person."
)


def results_path(step: str) -> str:
    return f"$.{names.StateField.RESULTS}.{step}"


def compensations_path(step: str) -> str:
    return f"$.{names.StateField.COMPENSATIONS}.{step}"


def reconciliation_path(state: str) -> str:
    return f"$.{names.StateField.RECONCILIATION}.{state}"


def groups_path(group: str) -> str:
    return f"$.{names.StateField.GROUPS}.{group}"


#: ``ResultSelector`` of a group: every branch/iteration state, and the rejections among them.
def _group_selector(key: str) -> dict[str, str]:
    return {f"{key}.$": "$", "failures.$": "$[*].failure"}


@dataclass(frozen=True)
class _At:
    """Where a step's task runs: at the top level or in a branch (params from the case),
    or in a per-item ``Map`` iteration (params = ``$.item``, item id = ``$.key``)."""

    per_item: bool = False


TOP = _At()
ITEM = _At(per_item=True)


class _UndoKind(StrEnum):
    STEP = "step"  # a top-level step: its disposition directly
    MEMBER = "member"  # a parallel group's step: guarded by Was<X>Applied
    ITEMS = "items"  # a per-item step's items: Undo<X>Items


@dataclass(frozen=True)
class _Undo:
    """One thing the way back may undo, and where its result is."""

    element: int
    step: Step
    kind: _UndoKind
    group: str = ""
    branch: int = 0
    concurrency: int = 1

    @property
    def entry(self) -> str:
        if self.kind is _UndoKind.MEMBER:
            return names.was_applied(self.step.name)
        if self.kind is _UndoKind.ITEMS:
            return names.undo_items(self.step.name)
        return _disposition_entry(self.step)

    @property
    def original(self) -> str:
        """Where the step's ``StepResult`` is, in the state that undoes it."""
        if self.kind is _UndoKind.MEMBER:
            return f"{groups_path(self.group)}.branches[{self.branch}].results.{self.step.name}"
        return results_path(self.step.name)


def _next(state: str | None) -> dict[str, Any]:
    """``Next`` to ``state``, or ``End`` when there is none (no Succeed state to pay for)."""
    return {"End": True} if state is None else {"Next": state}


def _disposition_entry(step: Step) -> str:
    if step.compensation is not None:
        return step.compensation.name
    return names.escalate(step.name)


def _has_disposition(step: Step) -> bool:
    return step.compensation is not None or step.escalation is not None


def compile(saga: Saga) -> dict[str, Any]:
    """The ASL definition of ``saga`` with ``${<Function>FunctionArn}`` placeholders.

    The result has passed the graph check (``stepsaga.workflow._validate``).
    """
    definition = _Compiler(saga).definition()
    check_definition(definition)
    if saga.query_language is QueryLanguage.JSONATA:
        translated = to_jsonata(definition)
        try:
            load(translated)  # the same graph, checked above; the engine must run it too
        except InvalidDefinition as exc:
            raise DefinitionError([f"the embedded engine refuses the JSONata: {exc}"]) from None
        return translated
    return definition


compile_saga = compile


class _Compiler:
    def __init__(self, saga: Saga) -> None:
        self.saga = saga
        self.elements: list[Element] = list(saga.steps)
        self.undos = self._undos()

    def _undos(self) -> list[_Undo]:
        """Everything the way back may undo, in the order it is undone (latest first).
        A top-level step is undone only if something after it can be rejected; a group's
        members always (the group itself can be rejected)."""
        undos: list[_Undo] = []
        last = len(self.elements) - 1
        for k in reversed(range(len(self.elements))):
            element = self.elements[k]
            if isinstance(element, Step):
                if k < last and _has_disposition(element):
                    undos.append(_Undo(k, element, _UndoKind.STEP))
            elif isinstance(element, Parallel):
                for i in reversed(range(len(element.branches))):
                    for step in reversed(element.branches[i]):
                        if _has_disposition(step):
                            undos.append(_Undo(k, step, _UndoKind.MEMBER, element.name, i))
            elif _has_disposition(element.step):
                undos.append(
                    _Undo(
                        k, element.step, _UndoKind.ITEMS, element.name, 0, element.max_concurrency
                    )
                )
        return undos

    def definition(self) -> dict[str, Any]:
        states: dict[str, Any] = {}
        for k, element in enumerate(self.elements):
            if isinstance(element, Step):
                states |= self.step_states(
                    element, TOP, next_state=self.next_forward(k), rejected=self.unwind_from(k)
                )
            else:
                states[element.name] = (
                    self.parallel(element)
                    if isinstance(element, Parallel)
                    else self.for_each(element)
                )
                states[names.group_outcome(element.name)] = self.group_outcome(k, element)
                states[names.group_rejected(element.name)] = self.group_rejected(k, element)
        if not isinstance(self.elements[-1], Step):
            # A group's outcome is a Choice, which cannot end the execution.
            states[names.COMPLETED] = {"Type": "Succeed", "Comment": "Every step completed."}
        for position, undo in enumerate(self.undos):
            after = self.after(position)
            if undo.kind is _UndoKind.ITEMS:
                states |= self.undo_items(undo, after)
                continue
            if undo.kind is _UndoKind.MEMBER:
                states[undo.entry] = self.was_applied(undo.step, undo.original, after)
            states |= self.disposition(
                undo.step, TOP, undo.original, after, failed=names.COMPENSATION_FAILED
            )
        states[names.COMPENSATED] = {
            "Type": "Fail",
            "Comment": "Business rejection: completed steps were compensated or escalated.",
            "Error": SAGA_COMPENSATED,
            "Cause": COMPENSATED_CAUSE,
        }
        if any(undo.step.compensation is not None for undo in self.undos):
            states[names.COMPENSATION_FAILED] = {
                "Type": "Fail",
                "Comment": "A compensation failed and waits in reconciliation.",
                "Error": SAGA_COMPENSATION_FAILED,
                "Cause": COMPENSATION_FAILED_CAUSE,
            }
        return {
            "Comment": self.saga.comment or f"stepsaga saga {self.saga.name}",
            "StartAt": self.elements[0].name,
            "States": states,
        }

    # --- pieces shared by the tasks ----------------------------------------------------

    def identity(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"saga": self.saga.name}
        for field, path in IDENTITY_PATHS.items():
            fields[field] = Path(f"{CASE}.{path}")
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
    def params(step: Step, at: _At) -> Path | dict[str, Any]:
        if at.per_item:
            return Path("$.item")
        return Path(f"{CASE}.{step.params}") if step.params is not None else {}

    @staticmethod
    def item(at: _At) -> dict[str, Any]:
        """The ``item`` field of a per-item step's events (left out elsewhere)."""
        return {"item": Path("$.key")} if at.per_item else {}

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
        next_state: str | None,
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
        return state | _next(next_state)

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

    def next_forward(self, k: int) -> str | None:
        """The element after ``k``; ``None`` after the last one (its task ends the execution)."""
        return self.elements[k + 1].name if k + 1 < len(self.elements) else None

    def unwind_from(self, k: int, *, inclusive: bool = False) -> str:
        """First state of the way back when element ``k`` is rejected: the first undo of an
        element before it (``inclusive``: of it or before it, for a group), or
        ``Compensated`` if there is none."""
        for undo in self.undos:
            if undo.element < k or (inclusive and undo.element == k):
                return undo.entry
        return names.COMPENSATED

    def after(self, position: int) -> str:
        """Where the way back goes once ``self.undos[position]`` is done."""
        following = self.undos[position + 1 : position + 2]
        return following[0].entry if following else names.COMPENSATED

    # --- forward states ----------------------------------------------------------------

    def step_states(
        self, step: Step, at: _At, *, next_state: str | None, rejected: str
    ) -> dict[str, Any]:
        """A forward step and, if it has an effect, its reconciliation states."""
        states = {step.name: self.forward(step, at, next_state, rejected)}
        if step.has_effect:
            states[names.reconcile(step.name)] = self.reconcile(step, at)
            states[names.decision(step.name)] = self.decision(step)
            states[names.await_decision(step.name)] = self.await_decision(step, at)
        return states

    def forward(self, step: Step, at: _At, next_state: str | None, rejected: str) -> dict[str, Any]:
        catch = [
            {
                "ErrorEquals": error_names(COMPENSATE),
                "ResultPath": FAILURE_PATH,
                "Next": rejected,
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
            params=self.params(step, at),
            execution=self.execution(),
            **self.item(at),
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
            next_state=next_state,
        )

    def reconcile(self, step: Step, at: _At) -> dict[str, Any]:
        payload = template(
            ReconcileEvent,
            kind="reconcile",
            **self.identity(),
            **self.action(step),
            params=self.params(step, at),
            failure=Path(FAILURE_PATH),
            execution=self.execution(),
            **self.item(at),
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

    def await_decision(self, step: Step, at: _At) -> dict[str, Any]:
        payload = template(
            AwaitDecisionEvent,
            kind="await_decision",
            **self.identity(),
            **self.action(step),
            params=self.params(step, at),
            failure=Path(FAILURE_PATH),
            item_id=Path(f"{reconciliation_path(step.name)}.item_id"),
            task_token=Path("$$.Task.Token"),
            execution=self.execution(),
            **self.item(at),
        )
        return self.task(
            RECONCILER_FUNCTION,
            payload,
            comment=f"Wait for an operator to resolve {step.name} (SendTaskSuccess).",
            result_selector=selector(ReconciliationResult, "$"),
            result_path=reconciliation_path(step.name),
            timeout=self.saga.decision_timeout_seconds,
            retry=WAIT_FOR_TOKEN_RETRY,
            next_state=names.decision(step.name),
            wait_for_token=True,
        )

    # --- parallel groups and per-item steps --------------------------------------------

    def parallel(self, group: Parallel) -> dict[str, Any]:
        branches = []
        for i, branch in enumerate(group.branches):
            done, rejected = names.branch_done(group.name, i), names.branch_rejected(group.name, i)
            later = names.branch_rejected_later(group.name, i)
            states: dict[str, Any] = {}
            for j, step in enumerate(branch):
                following = branch[j + 1].name if j + 1 < len(branch) else done
                states |= self.step_states(
                    step, TOP, next_state=following, rejected=later if j else rejected
                )
            states[done] = {
                "Type": "Pass",
                "Comment": "The branch completed: keep its results.",
                "Parameters": {"results.$": "$.results"},
                "End": True,
            }
            # The branch's first step rejected: nothing in it completed, and ``$.results``
            # may not exist yet (the state data starts as the case; no state creates it).
            states[rejected] = {
                "Type": "Pass",
                "Comment": "The branch's first step was rejected: end the branch, keep why.",
                "Parameters": {"results": {}, "failure.$": FAILURE_PATH},
                "End": True,
            }
            if len(branch) > 1:
                states[later] = {
                    "Type": "Pass",
                    "Comment": "A step was rejected: end the branch, keep what completed and why.",
                    "Parameters": {"results.$": "$.results", "failure.$": FAILURE_PATH},
                    "End": True,
                }
            branches.append({"StartAt": branch[0].name, "States": states})
        return {
            "Type": "Parallel",
            "Comment": f"{', '.join(s.name for s in group.steps)} at once; no branch fails "
            "another.",
            "Branches": branches,
            "ResultSelector": _group_selector("branches"),
            "ResultPath": groups_path(group.name),
            "Next": names.group_outcome(group.name),
        }

    def for_each(self, each: ForEach) -> dict[str, Any]:
        step = each.step
        key = "$$.Map.Item.Index" if each.item_key is None else f"$$.Map.Item.Value.{each.item_key}"
        states = self.step_states(
            step,
            ITEM,
            next_state=names.item_done(step.name),
            rejected=names.item_rejected(step.name),
        )
        kept = {"item.$": "$.item", "key.$": "$.key", "results.$": "$.results"}
        states[names.item_done(step.name)] = {
            "Type": "Pass",
            "Comment": "The item completed: keep it, its key and its result.",
            "Parameters": kept,
            "End": True,
        }
        states[names.item_rejected(step.name)] = {
            "Type": "Pass",
            "Comment": "The item was rejected: keep it and why.",
            "Parameters": {**kept, "failure.$": FAILURE_PATH},
            "End": True,
        }
        return {
            "Type": "Map",
            "Comment": f"{step.name} once per item of {each.items}, keyed by "
            + (each.item_key or "position (declared stable)"),
            "ItemsPath": f"{CASE}.{each.items}",
            "ItemSelector": {
                "item.$": "$$.Map.Item.Value",
                "key.$": key,
                "results": {},
                "compensations": {},
                "reconciliation": {},
            },
            "MaxConcurrency": each.max_concurrency,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": step.name,
                "States": states,
            },
            "ResultSelector": _group_selector("items"),
            "ResultPath": groups_path(each.name),
            "Next": names.group_outcome(each.name),
        }

    def group_outcome(self, k: int, group: Parallel | ForEach) -> dict[str, Any]:
        return {
            "Type": "Choice",
            "Comment": f"Was any part of {group.name} rejected?",
            "Choices": [
                {
                    "Variable": f"{groups_path(group.name)}.failures[0]",
                    "IsPresent": True,
                    "Next": names.group_rejected(group.name),
                }
            ],
            "Default": self.next_forward(k) or names.COMPLETED,
        }

    def group_rejected(self, k: int, group: Parallel | ForEach) -> dict[str, Any]:
        # A reference path (InputPath), not a Parameters path: interpreters agree that an
        # index in a reference path selects one node.
        return {
            "Type": "Pass",
            "Comment": f"Unwind from {group.name}'s completed steps, with its first rejection.",
            "InputPath": f"{groups_path(group.name)}.failures[0]",
            "ResultPath": FAILURE_PATH,
            "Next": self.unwind_from(k, inclusive=True),
        }

    def was_applied(self, step: Step, original: str, otherwise: str) -> dict[str, Any]:
        return {
            "Type": "Choice",
            "Comment": f"Undo {step.name} only if it completed.",
            "Choices": [
                {"Variable": original, "IsPresent": True, "Next": _disposition_entry(step)}
            ],
            "Default": otherwise,
        }

    def undo_items(self, undo: _Undo, after: str) -> dict[str, Any]:
        step = undo.step
        done = names.item_undone(step.name)
        states = {names.was_applied(step.name): self.was_applied(step, undo.original, done)}
        failed = names.COMPENSATION_FAILED
        if step.compensation is not None:
            failed = names.item_not_undone(step.compensation.name)
        states |= self.disposition(step, ITEM, undo.original, done, failed=failed)
        states[done] = {
            "Type": "Pass",
            "Comment": "This item is undone (or had nothing to undo).",
            "Parameters": {"compensations.$": "$.compensations"},
            "End": True,
        }
        map_state: dict[str, Any] = {
            "Type": "Map",
            "Comment": f"Undo every item of {step.name} that completed.",
            "ItemsPath": f"{groups_path(undo.group)}.items",
            "ItemSelector": {
                "item.$": "$$.Map.Item.Value.item",
                "key.$": "$$.Map.Item.Value.key",
                "results.$": "$$.Map.Item.Value.results",
                "failure.$": FAILURE_PATH,
                "compensations": {},
                "reconciliation": {},
            },
            "MaxConcurrency": undo.concurrency,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": names.was_applied(step.name),
                "States": states,
            },
            "ResultSelector": {"items.$": "$", "failed.$": "$[*].failed"},
            "ResultPath": compensations_path(step.name),
            "Next": after,
        }
        out = {undo.entry: map_state}
        if step.compensation is not None:
            states[failed] = {
                "Type": "Pass",
                "Comment": "This item's compensation waits for a person.",
                "Parameters": {
                    "failed": True,
                    "compensations.$": "$.compensations",
                    "reconciliation.$": "$.reconciliation",
                },
                "End": True,
            }
            map_state["Next"] = names.undo_outcome(step.name)
            out[names.undo_outcome(step.name)] = {
                "Type": "Choice",
                "Comment": "Did any item's compensation fail?",
                "Choices": [
                    {
                        "Variable": f"{compensations_path(step.name)}.failed[0]",
                        "IsPresent": True,
                        "Next": names.COMPENSATION_FAILED,
                    }
                ],
                "Default": after,
            }
        return out

    # --- the way back ------------------------------------------------------------------

    def disposition(
        self, step: Step, at: _At, original: str, after: str, *, failed: str
    ) -> dict[str, Any]:
        """``step``'s compensation (with its failure route) or escalation, going on to
        ``after``; a compensation nobody could decide goes to ``failed``."""
        if step.compensation is not None:
            comp = step.compensation
            return {
                comp.name: self.compensation(step, comp, at, original, after),
                names.record_failure(comp.name): self.record_failure(step, comp, at, original),
                names.decision(comp.name): self.compensation_decision(comp, after, failed),
            }
        return {names.escalate(step.name): self.escalation(step, at, original, after)}

    def compensation(
        self, step: Step, comp: Compensate, at: _At, original: str, after: str
    ) -> dict[str, Any]:
        payload = template(
            CompensationEvent,
            kind="compensation",
            **self.identity(),
            step=comp.name,
            operation=comp.operation,
            effect=comp.effect,
            compensates=template(ActionRef, **self.action(step)),
            params=self.params(step, at),
            original=Path(original),
            failure=Path(FAILURE_PATH),
            execution=self.execution(),
            **self.item(at),
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
            next_state=after,
        )

    def record_failure(
        self, step: Step, comp: Compensate, at: _At, original: str
    ) -> dict[str, Any]:
        payload = template(
            CompensationFailureEvent,
            kind="compensation_failed",
            **self.identity(),
            step=comp.name,
            operation=comp.operation,
            effect=comp.effect,
            compensates=template(ActionRef, **self.action(step)),
            params=self.params(step, at),
            original=Path(original),
            failure=Path(FAILURE_PATH),
            error=Path(COMPENSATION_FAILURE_PATH),
            execution=self.execution(),
            **self.item(at),
        )
        return self.reconciler_task(
            payload,
            comment=f"{comp.name} failed: try to decide it automatically, else record it.",
            result_path=reconciliation_path(comp.name),
            timeout=comp.timeout_seconds,
            next_state=names.decision(comp.name),
        )

    def compensation_decision(self, comp: Compensate, after: str, failed: str) -> dict[str, Any]:
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
                    "Next": after,
                },
                {
                    "Variable": variable,
                    "StringEquals": ReconciliationOutcome.NOT_APPLIED.value,
                    "Next": comp.name,
                },
            ],
            "Default": failed,
        }

    def escalation(self, step: Step, at: _At, original: str, after: str) -> dict[str, Any]:
        assert step.escalation is not None
        payload = template(
            EscalationEvent,
            kind="escalate",
            **self.identity(),
            **self.action(step),
            reason=step.escalation.reason,
            params=self.params(step, at),
            original=Path(original),
            failure=Path(FAILURE_PATH),
            execution=self.execution(),
            **self.item(at),
        )
        return self.reconciler_task(
            payload,
            comment=f"{step.name} is not reversed automatically: record it for a person.",
            result_path=compensations_path(step.name),
            timeout=step.timeout_seconds,
            next_state=after,
        )
