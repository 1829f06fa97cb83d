"""What each Task receives (its Lambda ``Payload``) and what it must return.

These models are the contract between the compiled state machine and the handlers: the
ASL compiler builds every ``Payload`` template from them (``stepsaga.workflow._payloads``
refuses a template whose fields differ from the model's), and handlers validate their
event with them (``parse_event``). All are frozen and ignore fields they do not know (a
release may add some); an event that does not fit is ``EventMismatchError`` (failed for
redrive, never compensated).

Event kinds (``kind`` is the discriminator):

* ``step`` — ``StepEvent``: a forward step (``tasks/…``).
* ``compensation`` — ``CompensationEvent``: undo a completed step (``compensations/…``).
* ``reconcile`` / ``await_decision`` / ``escalate`` / ``compensation_failed`` — the
  reconciliation handler's events (``ReconciliationEvent``, one handler, one function).

``params`` is the step's consequential parameters, copied from the execution input (the
case) at the path the step declares; parametrize the generic models with the params model,
e.g. ``StepEvent[Charge]`` (the step's ``params_model``). ``execution`` identifies the
*attempt* and is for logging only: an action key is built from tenant, case, revision and
operation, never from it. ``item`` is set only for a per-item step (``ForEach``): the item's
declared key, which the action key carries (``…:<operation>#<item>``).

Results, stored by ``ResultSelector``/``ResultPath`` in the state (see
``stepsaga.workflow._compiler``):

* forward steps and compensations return ``StepResult`` → ``$.results.<Step>`` /
  ``$.compensations.<Step>``;
* ``reconcile`` / ``escalate`` / ``compensation_failed`` return ``ReconciliationResult``;
* ``await_decision`` completes when someone calls ``SendTaskSuccess`` with an
  ``OperatorDecision`` as output (the Lambda's own return value is ignored).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
)

from stepsaga._model.approval_time import ApprovedAt
from stepsaga._model.case import CaseId, TenantId
from stepsaga._model.inputs import validate_object
from stepsaga.errors import EventMismatchError, InvalidInputError
from stepsaga.ledger._models import MAX_REVISION
from stepsaga.workflow._effects import EffectClass

P = TypeVar("P")

StepName = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Za-z0-9]{0,47}$")]
Operation = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,47}$")]


def _item_text(value: object) -> object:
    """An item key may be a number in the case (a line number, a stable index)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: One item of a per-item step (``ForEach``): part of its action key (``op#item``).
ItemId = Annotated[
    str,
    BeforeValidator(_item_text),
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"),
]


class _Model(BaseModel):
    # Added fields are ignored: an execution started under the previous release may send
    # (or the next release may add) a field this handler does not know; that is not a
    # reason to fail, let alone to compensate.
    model_config = ConfigDict(extra="ignore", frozen=True)


# --- pieces ----------------------------------------------------------------------------


class ExecutionInfo(_Model):
    """Where this attempt runs, from the context object. For logs only: these identify
    attempts, never actions."""

    #: ``$$.Execution.Name`` (tenant + case + revision on both backends).
    name: str
    #: ``$$.State.Name``.
    state: str
    #: ``$$.State.RetryCount``: 0 on the first attempt, reset by redrive.
    retry_count: int = Field(ge=0)


class CaughtError(_Model):
    """What a ``Catch`` stores at its ``ResultPath``: Step Functions' ``{Error, Cause}``.

    ``Cause`` of a Lambda error is the JSON text ``{"errorMessage", "errorType", …}``.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    error: str = Field(alias="Error")
    cause: str = Field(default="", alias="Cause")


class ActionRef(_Model):
    """The forward action a compensation undoes."""

    step: StepName
    operation: Operation
    effect: EffectClass


class _CaseIdentity(_Model):
    """Who and which approved intent, copied from the validated case."""

    saga: str
    tenant_id: TenantId
    case_id: CaseId
    revision: int = Field(ge=1, le=MAX_REVISION)
    approved_at: ApprovedAt


# --- results ---------------------------------------------------------------------------


class StepResult(_Model):
    """What a forward-step or compensation handler returns (its Lambda response).

    Failures are raised (``stepsaga.errors``), never returned, so a returned result is
    always ``COMPLETED``: the first time (``replayed`` false) or replayed from the ledger.
    """

    action_key: str
    status: Literal["COMPLETED"]
    #: The downstream outcome worth keeping (reservation id, refund id, shipment id …).
    result: dict[str, Any]
    replayed: bool


class ReconciliationOutcome(StrEnum):
    APPLIED = "applied"
    NOT_APPLIED = "not_applied"
    UNDECIDED = "undecided"


class ReconciliationResult(_Model):
    """What ``reconcile``, ``escalate`` and ``compensation_failed`` return.

    ``reconcile`` and ``compensation_failed``: ``applied``/``not_applied`` when automatic
    reconciliation decided (the step's or the compensation's ledger record is already
    ``COMPLETED``/``RELEASED``; ``item_id`` names the item it resolved, if any), else
    ``undecided`` with the open item. ``escalate`` only records: ``undecided`` + item.
    """

    outcome: ReconciliationOutcome
    item_id: str | None


class OperatorDecision(_Model):
    """The ``SendTaskSuccess`` output that ends an ``await_decision`` wait.

    Send it only after the ledger record was resolved (``applied`` → ``COMPLETED``,
    ``not_applied`` → ``RELEASED``): the state machine then runs the step again with the
    same action key, which replays the recorded outcome or performs the effect.
    """

    outcome: Literal[ReconciliationOutcome.APPLIED, ReconciliationOutcome.NOT_APPLIED]
    item_id: str
    decided_by: str | None = None
    note: str | None = None


# --- events ----------------------------------------------------------------------------


class StepEvent(_CaseIdentity, Generic[P]):
    """A forward step: perform ``operation`` once for this approved intent."""

    kind: Literal["step"] = "step"
    step: StepName
    operation: Operation
    effect: EffectClass
    params: P
    execution: ExecutionInfo
    #: The item of a per-item step (``ForEach``); ``None`` for every other step.
    item: ItemId | None = None


class CompensationEvent(_CaseIdentity, Generic[P]):
    """Undo ``compensates`` (which completed with ``original``) after ``failure``.

    ``params`` are the original step's parameters; the compensation's action key derives
    from ``original.action_key`` (``{key}:compensate:{operation}``).
    """

    kind: Literal["compensation"] = "compensation"
    step: StepName
    operation: Operation
    effect: EffectClass
    compensates: ActionRef
    params: P
    original: StepResult
    failure: CaughtError
    execution: ExecutionInfo
    #: The item of a per-item step (``ForEach``); ``None`` for every other step.
    item: ItemId | None = None


class ReconcileEvent(_CaseIdentity, Generic[P]):
    """``step`` failed with an uncertain outcome or an exhausted budget (``failure``): try
    to decide automatically (find the refund by key, the shipment by reference), else open
    a reconciliation item. Returns ``ReconciliationResult``."""

    kind: Literal["reconcile"] = "reconcile"
    step: StepName
    operation: Operation
    effect: EffectClass
    params: P
    failure: CaughtError
    execution: ExecutionInfo
    #: The item of a per-item step (``ForEach``); ``None`` for every other step.
    item: ItemId | None = None


class AwaitDecisionEvent(_CaseIdentity, Generic[P]):
    """Park the case until an operator decides item ``item_id``: store ``task_token`` on
    the item (and notify). The wait ends with ``SendTaskSuccess(OperatorDecision)``."""

    kind: Literal["await_decision"] = "await_decision"
    step: StepName
    operation: Operation
    effect: EffectClass
    params: P
    failure: CaughtError
    item_id: str | None
    task_token: str
    execution: ExecutionInfo
    #: The item of a per-item step (``ForEach``); ``None`` for every other step.
    item: ItemId | None = None


class EscalationEvent(_CaseIdentity, Generic[P]):
    """A later step failed and ``step``'s effect must not be reversed automatically (a
    refund): record a reconciliation item with ``reason`` — a record, never an automatic
    charge. Returns ``ReconciliationResult``."""

    kind: Literal["escalate"] = "escalate"
    step: StepName
    operation: Operation
    effect: EffectClass
    reason: str
    params: P
    original: StepResult
    failure: CaughtError
    execution: ExecutionInfo
    #: The item of a per-item step (``ForEach``); ``None`` for every other step.
    item: ItemId | None = None


class CompensationFailureEvent(_CaseIdentity, Generic[P]):
    """Compensation ``step`` of ``compensates`` failed with ``error`` after its retries:
    reconcile the compensation's own action automatically, else record it for a person.
    ``failure`` is the error that started compensating. Returns ``ReconciliationResult``:
    ``applied`` → the unwinding goes on; ``not_applied`` → the compensation runs again with
    the same key; ``undecided`` → the execution fails with ``Saga.CompensationFailed``."""

    kind: Literal["compensation_failed"] = "compensation_failed"
    step: StepName
    operation: Operation
    effect: EffectClass
    compensates: ActionRef
    params: P
    original: StepResult
    failure: CaughtError
    error: CaughtError
    execution: ExecutionInfo
    #: The item of a per-item step (``ForEach``); ``None`` for every other step.
    item: ItemId | None = None


#: Every event the reconciliation handler receives, told apart by ``kind``.
ReconciliationEvent = Annotated[
    ReconcileEvent[Any]
    | AwaitDecisionEvent[Any]
    | EscalationEvent[Any]
    | CompensationFailureEvent[Any],
    Field(discriminator="kind"),
]
RECONCILIATION_EVENT: TypeAdapter[ReconciliationEvent] = TypeAdapter(ReconciliationEvent)

M = TypeVar("M", bound=BaseModel)


def parse_event(model: type[M], event: object, *, params_checked: bool = True) -> M:
    """Validate a handler's event; a bad event is ``EventMismatchError`` naming the field.

    The envelope (every field but ``params``) is the framework's: when it does not fit, the
    state machine and the handler come from different releases. ``params`` was validated
    when the case started if the saga has an input model (``params_checked``), so failing
    now is the same mismatch; without one, a bad ``params`` is the case's own fault and
    stays ``InvalidInputError`` (which compensates).
    """
    try:
        return validate_object(model.model_validate, event, "event")
    except InvalidInputError as exc:
        field = str(exc.data.get("field", ""))
        if not params_checked and (field == "params" or field.startswith("params.")):
            raise
        raise EventMismatchError(exc.message, **exc.data) from None


def parse_reconciliation_event(event: object) -> ReconciliationEvent:
    """Validate any of the reconciliation handler's events (by ``kind``)."""
    try:
        return validate_object(RECONCILIATION_EVENT.validate_python, event, "event")
    except InvalidInputError as exc:
        raise EventMismatchError(exc.message, **exc.data) from None
