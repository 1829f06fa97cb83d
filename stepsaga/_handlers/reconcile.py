"""The reconciliation handler (``compensations/reconcile.py``): one function, four kinds.

* ``reconcile`` — a step ended uncertain or refused: automatic reconciliation
  (``stepsaga._reconciliation.automatic``) decides ``applied``/``not_applied`` or leaves an
  open item → ``ReconciliationResult``. A claim refused before anything was recorded
  (tenant budget, replay window) gets an item too, so the case waits for a person
  instead of failing here.
* ``await_decision`` — park the case: attach the task token to the item and notify. If the
  item was resolved meanwhile, or a second look now decides it, resume the case at once.
* ``escalate`` — record "card charged, seats not provisioned" and the like (a fact for a
  person, never an automatic charge).
* ``compensation_failed`` — a compensation failed after its retries: the same automatic
  reconciliation, on the compensation's own action (a release: is the reservation
  released?) → ``applied`` (unwinding goes on), ``not_applied`` (the compensation runs again
  with the same key; the ledger's attempt budget bounds the rounds) or ``undecided`` with an
  open item (``compensation <op> failed…``), and the execution ends
  ``Saga.CompensationFailed``.

Every kind checks that tenant and case match the item or action it touches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from stepsaga._aws import metric_names
from stepsaga._handlers.compensation import applied_by, compensation_action
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.guard import Handler, count, invocation
from stepsaga._handlers.identity import (
    action_of,
    check_action_fields,
    check_compensates,
    check_item,
    check_original_key,
    check_saga,
    forward_step,
    refuse,
)
from stepsaga._handlers.logs import InvocationLog
from stepsaga._handlers.step_handler import Call, CallContext, Lookup, StepHandler
from stepsaga._model.inputs import describe_validation_error
from stepsaga._reconciliation.automatic import AutoVerdict, reconcile_action
from stepsaga._reconciliation.evidence import evidence, failure_of
from stepsaga._reconciliation.notify import Notice
from stepsaga._reconciliation.operator import decision_of, resolve
from stepsaga._reconciliation.questions import record_once
from stepsaga._reconciliation.reasons import (
    AUTO_RESOLVER,
    Reason,
    compensation_failed_reason,
    escalation_reason,
)
from stepsaga.errors import EventMismatchError, InvalidInputError, StepSagaError
from stepsaga.ledger import Action, ReconItem
from stepsaga.ledger._models import ReconOutcome, ReconStatus
from stepsaga.workflow._events import (
    AwaitDecisionEvent,
    CompensationFailureEvent,
    EscalationEvent,
    ReconcileEvent,
    ReconciliationOutcome,
    ReconciliationResult,
    parse_event,
)
from stepsaga.workflow._saga import Compensate, Saga, Step

Catalog = Mapping[str, StepHandler[Any, Any]]


def reconcile_handler(deps: HandlerDeps, saga: Saga, catalog: Catalog) -> Handler:
    reconciler = _Reconciler(deps, saga, catalog)
    return invocation(deps, "Reconcile", reconciler.handle)


class _Reconciler:
    def __init__(self, deps: HandlerDeps, saga: Saga, catalog: Catalog) -> None:
        self.deps = deps
        self.saga = saga
        self.catalog = catalog

    def handle(self, event: Any, log: InvocationLog) -> dict[str, Any]:
        parsed = _parse(event)
        log.bind(
            kind=parsed.kind,
            step=parsed.step,
            tenant_id=parsed.tenant_id,
            case_id=parsed.case_id,
            execution=parsed.execution.name,
        )
        check_saga(parsed, self.saga)
        if isinstance(parsed, ReconcileEvent):
            return self.reconcile(parsed, log)
        if isinstance(parsed, AwaitDecisionEvent):
            return self.await_decision(parsed, log)
        if isinstance(parsed, EscalationEvent):
            return self.escalate(parsed, log)
        return self.compensation_failed(parsed, log)

    # --- kinds ---------------------------------------------------------------------------

    def reconcile(self, event: ReconcileEvent[Any], log: InvocationLog) -> dict[str, Any]:
        step, operation, params, action = self._forward(event)
        log.bind(action_key=action.key)
        verdict = self._verdict(event, step, operation, params, action)
        log.bind(decision=f"reconcile_{verdict.outcome.value}", item_id=verdict.item_id)
        if verdict.opened:
            count(self.deps, log, metric_names.RECONCILIATION_OPENED)
        log.info("reconciled", note=verdict.note)
        return _result(verdict.outcome, verdict.item_id)

    def await_decision(self, event: AwaitDecisionEvent[Any], log: InvocationLog) -> dict[str, Any]:
        step, operation, params, action = self._forward(event)
        log.bind(action_key=action.key, item_id=event.item_id)
        item = self._own_item(event.item_id, event, action)
        if item.status is ReconStatus.RESOLVED:
            self._resume(item, event.task_token, log)
            return _result(ReconciliationOutcome.UNDECIDED, item.item_id)
        first_time = item.task_token != event.task_token
        item = self.deps.ledger.attach_task_token(item.item_id, event.task_token)
        if item.status is ReconStatus.RESOLVED:  # resolved before the token got attached
            self._resume(item, event.task_token, log)
            return _result(ReconciliationOutcome.UNDECIDED, item.item_id)
        log.bind(decision="await_decision")
        if first_time:
            self._notify(item, waiting=True, log=log)
        self._second_look(event, step, operation, params, action, item, log)
        return _result(ReconciliationOutcome.UNDECIDED, item.item_id)

    def escalate(self, event: EscalationEvent[Any], log: InvocationLog) -> dict[str, Any]:
        step, _, _, original = self._forward(event)
        if step.escalation is None or event.reason != step.escalation.reason:
            raise refuse("reason", f"{step.name} is not escalated with this reason")
        check_original_key(event.original.action_key, original)
        log.bind(action_key=original.key)
        record = self.deps.ledger.get(original.key)
        if record is None:
            raise refuse("original.action_key", f"the ledger has no action {original.key}")
        item, opened = record_once(
            self.deps.ledger,
            original.key,
            escalation_reason(step.escalation.reason),
            step=step.name,
            evidence=evidence(
                record,
                last_error=failure_of(event.failure),
                original_result=dict(event.original.result),
            ),
            dual_control=step.dual_control,
        )
        self._recorded(item, opened, log, decision="escalated")
        return _result(ReconciliationOutcome.UNDECIDED, item.item_id)

    def compensation_failed(
        self, event: CompensationFailureEvent[Any], log: InvocationLog
    ) -> dict[str, Any]:
        step, compensate = self._compensated(event.step)
        check_action_fields(event, compensate.name, compensate.operation, compensate.effect)
        check_compensates(event.compensates, step)
        check_item(event, self.saga, step.name)
        forward = self._operation(step.op)
        operation = self._operation(compensate.operation)
        params = _params(step.params_type, event.params)
        original = action_of(
            event, step.op, step.effect, forward.consequential(params), forward.cost
        )
        check_original_key(event.original.action_key, original)
        original_record = self.deps.ledger.get(original.key)
        if original_record is None:
            raise refuse("original.action_key", f"the ledger has no action {original.key}")
        compensation = compensation_action(original, compensate)
        log.bind(action_key=compensation.key)
        verdict = reconcile_action(
            self.deps.ledger,
            compensation,
            step=compensate.name,
            reason=Reason.from_error(event.error.error),
            failure=failure_of(event.error),
            look=self._looker(
                operation, params, compensation, applied_by(original, original_record)
            ),
            send_task_success=self.deps.send_task_success,
            topic=compensation_failed_reason(compensate.operation),
            context={"failure": failure_of(event.failure)},
            dual_control=step.dual_control,
        )
        if verdict.outcome is ReconciliationOutcome.UNDECIDED:
            if verdict.opened:
                count(self.deps, log, metric_names.COMPENSATION_FAILED)
            assert verdict.item is not None
            self._recorded(verdict.item, verdict.opened, log, decision="compensation_failed")
        else:
            log.bind(decision=f"reconcile_{verdict.outcome.value}", item_id=verdict.item_id)
        log.info("reconciled", note=verdict.note)
        return _result(verdict.outcome, verdict.item_id)

    # --- pieces --------------------------------------------------------------------------

    def _forward(
        self,
        event: ReconcileEvent[Any] | AwaitDecisionEvent[Any] | EscalationEvent[Any],
    ) -> tuple[Step, StepHandler[Any, Any], BaseModel, Action]:
        step = forward_step(self.saga, event.step)
        check_action_fields(event, step.name, step.op, step.effect)
        check_item(event, self.saga, step.name)
        operation = self._operation(step.op)
        params = _params(step.params_type, event.params)
        action = action_of(
            event, step.op, step.effect, operation.consequential(params), operation.cost
        )
        return step, operation, params, action

    def _verdict(
        self,
        event: ReconcileEvent[Any] | AwaitDecisionEvent[Any],
        step: Step,
        operation: StepHandler[Any, Any],
        params: BaseModel,
        action: Action,
    ) -> AutoVerdict:
        return reconcile_action(
            self.deps.ledger,
            action,
            step=step.name,
            reason=Reason.from_error(event.failure.error),
            failure=failure_of(event.failure),
            look=self._looker(operation, params, action),
            send_task_success=self.deps.send_task_success,
            dual_control=step.dual_control,
        )

    def _looker(
        self,
        operation: StepHandler[Any, Any],
        params: BaseModel,
        action: Action,
        original: Action | None = None,
    ) -> Callable[[], Lookup | None]:
        """Look for ``action``'s effect downstream, as its next attempt would."""

        def look() -> Lookup | None:
            record = self.deps.ledger.get(action.key)
            ctx = CallContext(
                tenant_id=action.tenant_id,
                case_id=action.intent.case_id,
                action_key=action.key,
                attempt=record.attempts if record else 1,
            )
            call = Call(ctx=ctx, params=params, action=action, original=original)
            return operation.lookup(self.deps.clients, call)

        return look

    def _second_look(
        self,
        event: AwaitDecisionEvent[Any],
        step: Step,
        operation: StepHandler[Any, Any],
        params: BaseModel,
        action: Action,
        item: ReconItem,
        log: InvocationLog,
    ) -> None:
        """Try automatic reconciliation once more (a lookup that failed a moment ago may
        work now); if it decides, resolve the item and resume the case right away."""
        send = self.deps.send_task_success
        if send is None:
            return  # nobody here could resume the case: leave it to the resolver
        try:
            verdict = self._verdict(event, step, operation, params, action)
            if verdict.outcome is ReconciliationOutcome.UNDECIDED:
                return
            stored = self.deps.ledger.get_item(item.item_id)
            if stored is not None and stored.status is ReconStatus.OPEN:
                resolve(
                    self.deps.ledger,
                    item.item_id,
                    ReconOutcome(verdict.outcome.value),
                    AUTO_RESOLVER,
                    verdict.note,
                    send_task_success=send,
                    automatic=True,
                )
            log.bind(decision=f"reconcile_{verdict.outcome.value}")
        except StepSagaError as exc:
            log.warning("second look left the item open", error=exc.error_name())

    def _own_item(
        self,
        item_id: str | None,
        event: AwaitDecisionEvent[Any],
        action: Action,
    ) -> ReconItem:
        if item_id is None:
            raise refuse("item_id", "reconciliation opened no item to wait on")
        item = self.deps.ledger.get_item(item_id)
        if item is None:
            raise refuse("item_id", f"no reconciliation item {item_id}")
        if (item.tenant_id, item.case_id, item.record_key) != (
            event.tenant_id,
            event.case_id,
            action.key,
        ):
            raise refuse("item_id", f"{item_id} belongs to another tenant, case or action")
        return item

    def _resume(self, item: ReconItem, token: str, log: InvocationLog) -> None:
        """The item was resolved before the case started waiting: resume it now."""
        send = self.deps.send_task_success
        log.bind(decision="resume")
        if send is None:
            log.warning("item already resolved, but no callback is configured to resume")
            return
        send(token, decision_of(item))

    def _recorded(
        self, item: ReconItem, opened: bool, log: InvocationLog, *, decision: str
    ) -> None:
        log.bind(decision=decision, item_id=item.item_id)
        if opened:
            count(self.deps, log, metric_names.RECONCILIATION_OPENED)
            self._notify(item, waiting=False, log=log)

    def _notify(self, item: ReconItem, *, waiting: bool, log: InvocationLog) -> None:
        try:
            self.deps.notifier.notify(Notice.of(item, waiting=waiting))
        except Exception as exc:  # best effort: the overdue alarm watches open items
            log.warning("notification failed", error=type(exc).__name__)

    def _operation(self, name: str) -> StepHandler[Any, Any]:
        operation = self.catalog.get(name)
        if operation is None:
            raise refuse("operation", f"no handler performs {name}")
        return operation

    def _compensated(self, name: str) -> tuple[Step, Compensate]:
        for step in self.saga.all_steps:
            if step.compensation is not None and step.compensation.name == name:
                return step, step.compensation
        raise refuse("step", f"{name} is not a compensation of saga {self.saga.name}")


#: The reconciliation handler's events by ``kind``.
EVENTS: dict[str, type[BaseModel]] = {
    "reconcile": ReconcileEvent[Any],
    "await_decision": AwaitDecisionEvent[Any],
    "escalate": EscalationEvent[Any],
    "compensation_failed": CompensationFailureEvent[Any],
}
Parsed = (
    ReconcileEvent[Any]
    | AwaitDecisionEvent[Any]
    | EscalationEvent[Any]
    | CompensationFailureEvent[Any]
)


def _parse(event: Any) -> Parsed:
    """By ``kind`` first, so a bad field is named as in the event (``failure.Error``), not
    under the union's tag."""
    kind = event.get("kind") if isinstance(event, dict) else None
    model = EVENTS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise EventMismatchError(f"kind: must be one of {', '.join(EVENTS)}", field="kind")
    parsed = parse_event(model, event)
    assert isinstance(parsed, Parsed)
    return parsed


def _params(model: type[BaseModel], data: Any) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, line = describe_validation_error(exc, "")
        if field:
            raise InvalidInputError(f"params.{line}", field=f"params.{field}") from None
        raise InvalidInputError(f"params{line}", field="params") from None


def _result(outcome: ReconciliationOutcome, item_id: str | None) -> dict[str, Any]:
    return ReconciliationResult(outcome=outcome, item_id=item_id).model_dump(mode="json")
