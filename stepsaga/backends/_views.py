"""The values both backends hand the CLI: what ``--json`` prints, field for field.

Fields that exist in an AWS API keep its name and casing (``executionArn``, ``status``,
``startDate``… as ``DescribeExecution``), so a script written against AWS reads ours; fields
of our own are snake_case (``tenant_id``, ``case_id``, ``outcome``, ``steps``). Every
model is frozen; dump them with :func:`to_json` (aliases, ISO-8601 UTC dates, ``null`` for
absent values so every key is always present).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CaseOutcome(StrEnum):
    """What happened to the case, whatever the execution's own status says.

    Derived in one place: :func:`stepsaga.backends._outcome.derive_outcome`.
    """

    COMPLETED = "completed"
    """Every step is done (execution ``SUCCEEDED``)."""
    COMPENSATED = "compensated"
    """A step was rejected; the completed steps were undone or escalated to reconciliation."""
    AWAITING_RECONCILIATION = "awaiting_reconciliation"
    """The execution waits for a person to resolve a reconciliation item."""
    COMPENSATION_FAILED = "compensation_failed"
    """An undo failed after its retries; it waits in reconciliation."""
    STOPPED = "stopped"
    """An operator stopped the execution (``stepsaga stop``): closed, never redriven."""
    FAILED = "failed"
    """The execution stopped (retries exhausted, interrupted, timed out): redrive it."""
    RUNNING = "running"
    """The execution is still moving."""


class StepKind(StrEnum):
    STEP = "step"
    COMPENSATION = "compensation"


class ReconFilter(StrEnum):
    """``recon list --status``: which items to show."""

    OPEN = "open"
    RESOLVED = "resolved"
    ALL = "all"


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class StepView(_View):
    """One action of the case and where the ledger says it stands."""

    #: The Task state (and Lambda function) that performs it, e.g. ``RefundPayment``.
    state: str
    #: ``step`` (forward) or ``compensation`` (an undo).
    kind: StepKind
    #: Part of the action key, e.g. ``refund_payment``.
    operation: str
    #: ``{tenant}:{case}:r{revision}:{operation}`` (compensations: ``…:compensate:{op}``).
    action_key: str
    #: ``IN_PROGRESS``/``COMPLETED``/``FAILED``/``UNKNOWN``/``RELEASED``; ``None``: never claimed.
    ledger_status: str | None
    #: Lifetime claims of the action (0 if never claimed).
    attempts: int = 0
    #: Downstream reference (reservation id, idempotency key, shipment reference), if any.
    reference: str | None = None
    #: Why the ledger says it did not complete: ``BusinessRejectedError: …`` (FAILED), the
    #: reason an action is UNKNOWN or RELEASED; ``None`` otherwise.
    error: str | None = None


class ExecutionView(_View):
    """``start``/``status``/``redrive`` output: ``DescribeExecution`` plus the case's view."""

    execution_arn: str = Field(alias="executionArn")
    state_machine_arn: str = Field(alias="stateMachineArn")
    name: str
    #: ``DescribeExecution.status``: RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED, …
    status: str
    start_date: datetime = Field(alias="startDate")
    stop_date: datetime | None = Field(default=None, alias="stopDate")
    error: str | None = None
    cause: str | None = None
    redrive_count: int = Field(default=0, alias="redriveCount")
    redrive_date: datetime | None = Field(default=None, alias="redriveDate")
    #: ``REDRIVABLE`` / ``NOT_REDRIVABLE`` (as ``DescribeExecution.redriveStatus``).
    redrive_status: str | None = Field(default=None, alias="redriveStatus")
    #: The project's saga this execution runs (its steps are the ones listed).
    saga: str
    tenant_id: str
    case_id: str
    revision: int
    outcome: CaseOutcome
    steps: tuple[StepView, ...]
    #: States waiting for a callback (an operator's decision), e.g. ``AwaitDecisionCreateShipment``.
    waiting_for: tuple[str, ...] = ()
    #: Ids of this case's OPEN reconciliation items.
    open_items: tuple[str, ...] = ()
    #: Why the case did not complete, read from the ledger: the first refused step and its
    #: refusal (``CreateShipment: BusinessRejectedError: …``) when the outcome is
    #: compensated or failed; ``None`` otherwise.
    reason: str | None = None


class ReconItemView(_View):
    """One reconciliation item (``recon list``/``show``)."""

    id: str
    tenant_id: str
    case_id: str
    step: str
    action_key: str
    reason: str
    #: ``OPEN`` or ``RESOLVED``.
    status: str
    evidence: dict[str, Any]
    outcome: str | None = None
    resolved_by: str | None = None
    note: str | None = None
    #: An execution waits on this item (a task token is attached).
    waiting: bool = False
    created_at: datetime
    updated_at: datetime
    resolved_at: datetime | None = None
    #: A person's ``not_applied`` needs two different people (the step's ``dual_control``).
    dual_control: bool = False
    #: The first of those two approvals (``by``, ``at``, ``note``): pending while OPEN.
    first_approval: dict[str, Any] | None = None
    #: OPEN with a first approval: one more, other person must decide.
    awaiting_second_approver: bool = False
    #: The audit record its resolution wrote (``recon show`` only; ``None`` in lists).
    audit: dict[str, Any] | None = None


class ReconPage(_View):
    """``recon list``: one page, oldest first; ``next_token`` (opaque) fetches the next
    with the same filters, ``None`` when there is none."""

    items: tuple[ReconItemView, ...]
    next_token: str | None = None


class ExecutionSummary(_View):
    """One row of ``stepsaga list``: a ``ListExecutions`` item plus whose case it runs and
    what became of it (no steps: a page stays one query, not one per action)."""

    execution_arn: str = Field(alias="executionArn")
    state_machine_arn: str = Field(alias="stateMachineArn")
    name: str
    status: str
    start_date: datetime = Field(alias="startDate")
    stop_date: datetime | None = Field(default=None, alias="stopDate")
    redrive_count: int = Field(default=0, alias="redriveCount")
    saga: str
    tenant_id: str
    case_id: str
    revision: int
    outcome: CaseOutcome


class ExecutionPage(_View):
    """``list_executions``: one page, newest first (as ``ListExecutions``).

    ``next_token`` is opaque: pass it back with the same filters for the next page; ``None``
    means there is none. A page may hold fewer than ``limit`` items and still have a next one
    (AWS: filters ``ListExecutions`` cannot apply stop after a bounded number of pages)."""

    items: tuple[ExecutionSummary, ...] = Field(alias="executions")
    next_token: str | None = Field(default=None, alias="nextToken")


class ResolutionView(_View):
    """``recon resolve`` output: the resolved item and, if a case waited on it, where that
    case went on to (its next waiting point or its end)."""

    item: ReconItemView
    execution: ExecutionView | None = None


class UndoneView(_View):
    """One completed step ``cancel`` undid: ``compensated`` (``detail``: the compensation's
    action key), ``escalated`` (``detail``: the item a person decides), or ``failed``
    (``detail``: the error; run ``cancel`` again, it replays what was undone)."""

    step: str
    action_key: str
    kind: str
    detail: str


class CancelView(_View):
    """``cancel`` output: the stopped execution (outcome ``stopped``, its open items: the
    uncertain steps and the escalations) and what was undone, last step first."""

    execution: ExecutionView
    undone: tuple[UndoneView, ...] = ()
    #: The later revision's execution that superseded this one: it owns the case's effects
    #: (it adopted or changed them), so this cancel undid nothing; cancel that one instead.
    superseded_by: str | None = None

    @property
    def complete(self) -> bool:
        """Every completed step was compensated or escalated (none failed)."""
        return all(u.kind != "failed" for u in self.undone)


def to_json(value: BaseModel | Sequence[BaseModel]) -> Any:
    """The JSON-ready form ``--json`` prints (aliases, ISO dates)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    return [item.model_dump(mode="json", by_alias=True) for item in value]
