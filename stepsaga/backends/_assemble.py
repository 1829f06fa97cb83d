"""Building the views from what each backend reads: a ``DescribeExecution`` response, the
case's ledger records and reconciliation items. Shared so both backends print the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from stepsaga._model.keys import action_key, compensation_of
from stepsaga._util.paging import MAX_LIMIT, check_limit
from stepsaga.backends._outcome import OutcomeFacts, derive_outcome
from stepsaga.backends._views import (
    CaseOutcome,
    ExecutionSummary,
    ExecutionView,
    ReconFilter,
    ReconItemView,
    ReconPage,
    StepKind,
    StepView,
)
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import ReconItem, Record, Status
from stepsaga.ledger._models import ReconStatus, ResolutionAudit
from stepsaga.ledger._paging import decode_token
from stepsaga.workflow._names import item_operation
from stepsaga.workflow._saga import Saga, Step

if TYPE_CHECKING:
    from stepsaga.ledger._rules import Ledger


@dataclass(frozen=True)
class CaseIdentity:
    """Whose case an execution runs: read back from its input (the validated case)."""

    tenant_id: str
    case_id: str
    revision: int
    #: The execution input itself (per-item steps read their items from it).
    document: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_input(cls, execution_input: str | Mapping[str, Any]) -> CaseIdentity:
        data = json.loads(execution_input) if isinstance(execution_input, str) else execution_input
        try:
            return cls(
                str(data["tenant_id"]),
                str(data["case_id"]),
                int(data["approval"]["revision"]),
                data,
            )
        except (KeyError, TypeError, ValueError):
            raise InvalidInputError(
                "the execution's input is not a stepsaga case", field="input"
            ) from None

    def key(self, operation: str) -> str:
        """The action key of ``operation`` for this intent (docs/contributing/internals.md)."""
        return action_key(self.tenant_id, self.case_id, self.revision, operation)


@dataclass(frozen=True)
class PlannedAction:
    state: str
    kind: StepKind
    operation: str
    action_key: str
    #: The step's (or the compensated step's) ``dual_control``: its items need two people.
    dual_control: bool = False


def _operations(saga: Saga, step: Step, case: CaseIdentity) -> list[str]:
    """The ledger operations of ``step`` for this case: one per item of a per-item step
    (none if the input holds no valid item list), else the step's operation."""
    each = saga.per_item(step.name)
    if each is None:
        return [step.op]
    try:
        return [item_operation(step.op, item) for item in each.item_ids(case.document)]
    except InvalidInputError:
        return []


def planned_actions(saga: Saga, case: CaseIdentity) -> list[PlannedAction]:
    """Every action the saga may take for this case: forward steps (each item of a
    per-item step), then compensations."""
    actions: list[PlannedAction] = []
    for step in saga.all_steps:
        if step.has_effect:
            for op in _operations(saga, step, case):
                actions.append(
                    PlannedAction(step.name, StepKind.STEP, op, case.key(op), step.dual_control)
                )
    for step in saga.all_steps:
        comp = step.compensation
        if comp is not None:
            for op in _operations(saga, step, case):
                key = compensation_of(case.key(op), comp.operation)
                actions.append(
                    PlannedAction(
                        comp.name, StepKind.COMPENSATION, comp.operation, key, step.dual_control
                    )
                )
    return actions


def case_records(ledger: Ledger, saga: Saga, case: CaseIdentity) -> dict[str, Record]:
    """The ledger's records of the case's planned actions, by action key (one read each,
    by key: no listing)."""
    records: dict[str, Record] = {}
    for action in planned_actions(saga, case):
        record = ledger.get(action.action_key)
        if record is not None:
            records[action.action_key] = record
    return records


def case_open_items(ledger: Ledger, case: CaseIdentity) -> list[ReconItem]:
    """The OPEN reconciliation items of this revision of the case: one indexed query of
    the case's own entries (``by-case`` / ``recon_by_case``), so it costs the same whether
    the tenant has ten open items or ten thousand (never a listing of the tenant's items)."""
    prefix = case.key("")
    found = ledger.list_items(tenant=case.tenant_id, status=ReconStatus.OPEN, case=case.case_id)
    return [item for item in found if item.record_key.startswith(prefix)]


def step_views(
    saga: Saga, case: CaseIdentity, records: Mapping[str, Record]
) -> tuple[StepView, ...]:
    views = []
    for action in planned_actions(saga, case):
        record = records.get(action.action_key)
        views.append(
            StepView(
                state=action.state,
                kind=action.kind,
                operation=action.operation,
                action_key=action.action_key,
                ledger_status=record.status.value if record else None,
                attempts=record.attempts if record else 0,
                reference=record.reference if record else None,
                error=record_error(record) if record else None,
            )
        )
    return tuple(views)


#: The line a refusal keeps in a view (the ledger keeps it whole).
MAX_REASON = 300


def record_error(record: Record) -> str | None:
    """One line saying why a record did not complete (its ``error``)."""
    error = record.error or {}
    if record.status is Status.COMPLETED or not error:
        return None
    name, message = error.get("error"), error.get("message") or error.get("reason")
    text = f"{name}: {message}" if name and message else str(message or name or "")
    return " ".join(text.split())[:MAX_REASON] or None


def refusal(steps: Sequence[StepView]) -> str | None:
    """The first forward step the ledger recorded as refused (``FAILED``), as a reason."""
    for step in steps:
        if step.kind is StepKind.STEP and step.ledger_status == Status.FAILED.value:
            return f"{step.state}: {step.error}" if step.error else step.state
    return None


def execution_view(
    described: Mapping[str, Any],
    *,
    saga: Saga,
    records: Mapping[str, Record],
    waiting_for: Sequence[str] = (),
    open_items: Sequence[str] = (),
) -> ExecutionView:
    """``described`` is a ``DescribeExecution`` response (boto3's or the local engine's)."""
    case = CaseIdentity.from_input(described["input"])
    facts = OutcomeFacts(
        status=str(described["status"]),
        error=described.get("error"),
        waiting_for=tuple(waiting_for),
    )
    outcome = derive_outcome(facts)
    redrive_status = described.get("redriveStatus")
    steps = step_views(saga, case, records)
    if outcome in (CaseOutcome.STOPPED, CaseOutcome.COMPENSATED):
        redrive_status = "NOT_REDRIVABLE"  # our rule (lifecycle.redrive_refusal), not AWS's
    return ExecutionView(
        execution_arn=described["executionArn"],
        state_machine_arn=described["stateMachineArn"],
        name=described["name"],
        status=str(described["status"]),
        start_date=_date(described["startDate"]),
        stop_date=_date(described.get("stopDate")),
        error=described.get("error"),
        cause=described.get("cause"),
        redrive_count=int(described.get("redriveCount", 0)),
        redrive_date=_date(described.get("redriveDate")),
        redrive_status=redrive_status,
        saga=saga.name,
        tenant_id=case.tenant_id,
        case_id=case.case_id,
        revision=case.revision,
        outcome=outcome,
        steps=steps,
        waiting_for=tuple(waiting_for),
        open_items=tuple(open_items),
        reason=refusal(steps) if outcome in _REFUSED_OUTCOMES else None,
    )


#: Outcomes whose view says which step was refused and why.
_REFUSED_OUTCOMES = frozenset(
    {CaseOutcome.COMPENSATED, CaseOutcome.FAILED, CaseOutcome.COMPENSATION_FAILED}
)


def listed_summary(
    listed: Mapping[str, Any],
    saga: str,
    *,
    waiting_for: Sequence[str] = (),
    identity: CaseIdentity | None = None,
) -> ExecutionSummary | None:
    """A ``ListExecutions`` item as a listing row. Whose case: ``identity``, else read from
    the item's ``input``; ``None`` when that is not a stepsaga case. ``error`` (when the
    item carries it) and ``waiting`` (for a decision) feed the one outcome rule."""
    if identity is None:
        try:
            identity = CaseIdentity.from_input(listed["input"])
        except (InvalidInputError, KeyError, ValueError):
            return None
    facts = OutcomeFacts(
        status=str(listed["status"]),
        error=listed.get("error"),
        waiting_for=tuple(waiting_for),
    )
    return ExecutionSummary(
        execution_arn=listed["executionArn"],
        state_machine_arn=listed["stateMachineArn"],
        name=listed["name"],
        status=str(listed["status"]),
        start_date=_date(listed["startDate"]),
        stop_date=_date(listed.get("stopDate")),
        redrive_count=int(listed.get("redriveCount", 0)),
        saga=saga,
        tenant_id=identity.tenant_id,
        case_id=identity.case_id,
        revision=identity.revision,
        outcome=derive_outcome(facts),
    )


def recon_list(
    ledger: Ledger | None,
    *,
    status: ReconFilter,
    tenant: str | None,
    case: str | None,
    limit: int | None,
) -> list[ReconItemView]:
    """``recon_list`` of both backends: every page, or the first ``limit`` items."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInputError("--limit must be a whole number of at least 1", field="limit")
    if ledger is None:
        return []
    wanted = _recon_status(status)
    if limit is not None and limit <= MAX_LIMIT:
        page = ledger.page_items(tenant=tenant, status=wanted, case=case, limit=limit)
        return [item_view(item) for item in page.items]
    items = ledger.list_items(tenant=tenant, status=wanted, case=case)
    return item_views(items, limit=limit)


def recon_page(
    ledger: Ledger | None,
    *,
    status: ReconFilter,
    tenant: str | None,
    case: str | None,
    limit: int | None,
    next_token: str | None,
) -> ReconPage:
    """``recon_page`` of both backends (a home without a ledger has no items, but a bad
    ``--limit`` or ``--next-token`` is refused all the same)."""
    if ledger is None:
        check_limit(limit)
        wanted = _recon_status(status)
        decode_token("items", (tenant, case, wanted.value if wanted else None), next_token)
        return ReconPage(items=())
    page = ledger.page_items(
        tenant=tenant, status=_recon_status(status), case=case, limit=limit, next_token=next_token
    )
    return ReconPage(items=tuple(item_view(i) for i in page.items), next_token=page.next_token)


def _recon_status(status: ReconFilter) -> ReconStatus | None:
    return None if status is ReconFilter.ALL else ReconStatus(status.value.upper())


def item_views(
    items: Sequence[ReconItem], *, case: str | None = None, limit: int | None = None
) -> list[ReconItemView]:
    """The items of ``case`` (any if ``None``), oldest first, at most ``limit`` of them."""
    chosen = sorted((i for i in items if case in (None, i.case_id)), key=lambda i: i.created_at)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError("--limit must be a whole number of at least 1", field="limit")
        chosen = chosen[:limit]
    return [item_view(item) for item in chosen]


def item_view(item: ReconItem, audit: ResolutionAudit | None = None) -> ReconItemView:
    return ReconItemView(
        id=item.item_id,
        tenant_id=item.tenant_id,
        case_id=item.case_id,
        step=item.step,
        action_key=item.record_key,
        reason=item.reason,
        status=item.status.value,
        evidence=dict(item.evidence),
        outcome=item.outcome.value if item.outcome else None,
        resolved_by=item.resolved_by,
        note=item.note,
        waiting=item.task_token is not None and item.outcome is None,
        created_at=item.created_at,
        updated_at=item.updated_at,
        resolved_at=item.resolved_at,
        dual_control=item.dual_control,
        first_approval=item.first_approval.to_dict() if item.first_approval else None,
        awaiting_second_approver=item.awaiting_second_approver,
        audit=audit.to_dict() if audit is not None else None,
    )


def _date(value: Any) -> Any:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))
