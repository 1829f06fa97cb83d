"""``redrive --all-failed``: redrive the technical failures of many cases at once, bounded.

After a downstream outage longer than the retry envelopes (``stepsaga.workflow._retry``),
every case that was in flight fails at the step it was in. Each one can continue from
there — the ledger replays what already happened and its attempt budget bounds how often
an action is tried across redrives — so an operator redrives them together instead of one
by one. Only failures a redrive can fix are touched; the rule is :data:`RULES`, in order:

* a business outcome (an error ``Saga.*``: compensated, compensation failed) — the saga
  ended as designed; never redriven;
* stopped by an operator (``stepsaga stop``: ``Stepsaga.Stopped``);
* an error other than ``--error`` (when given);
* not redrivable, as the service says (``redriveStatus``), or as the backend's redrive
  answers (``ExecutionNotRedrivable``: superseded by a later revision, redriven meanwhile);
* stopped longer ago than Step Functions' redrive window (14 days);
* otherwise: redriven.

It works over any :class:`~stepsaga.backends._base.SagaBackend` through its public verbs
(``list_executions`` with outcome ``failed``, ``status``, ``redrive``), so the embedded
engine and AWS decide alike. It is bounded twice: at most ``max_redrives`` redrives and at
most ``MAX_SCANNED`` listed executions per call; ``truncated`` says when a bound stopped it
(run it again: redriven cases are no longer failed).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from stepsaga.backends._base import SagaBackend
from stepsaga.backends._progress import ProgressListener
from stepsaga.backends._views import CaseOutcome, ExecutionView
from stepsaga.engine._quotas import REDRIVABLE_SECONDS
from stepsaga.errors import (
    EXECUTION_STOPPED,
    ExecutionNotRedrivable,
    InvalidInputError,
    StepSagaError,
    is_business_outcome,
)

__all__ = [
    "DEFAULT_MAX_REDRIVES",
    "MAX_REDRIVES",
    "MAX_SCANNED",
    "REDRIVE_WINDOW",
    "BulkRedriveView",
    "RedriveDecision",
    "RedriveRow",
    "decide",
    "redrive_all_failed",
]

#: Step Functions redrives an execution within 14 days of its stop (the engine's quota
#: table); checked before the service's own NOT_REDRIVABLE so the reason is the precise one.
REDRIVE_WINDOW = timedelta(seconds=REDRIVABLE_SECONDS)
DEFAULT_MAX_REDRIVES = 50
MAX_REDRIVES = 1000
#: Failed executions one call reads at most (pages of ``list_executions``).
MAX_SCANNED = 5000
_PAGE = 100


class RedriveDecision(StrEnum):
    REDRIVEN = "redriven"
    SKIPPED_BUSINESS_OUTCOME = "skipped_business_outcome"
    SKIPPED_STOPPED = "skipped_stopped"
    SKIPPED_OTHER_ERROR = "skipped_other_error"
    SKIPPED_NOT_REDRIVABLE = "skipped_not_redrivable"
    SKIPPED_OUTSIDE_WINDOW = "skipped_outside_window"
    #: The redrive was asked for and failed otherwise (the service or the store said no);
    #: the reason is in ``detail``.
    REFUSED = "refused"


class _Facts(BaseModel):
    model_config = ConfigDict(frozen=True)

    error: str | None
    wanted_error: str | None
    redrive_status: str | None
    stop_date: datetime | None
    now: datetime


Rule = tuple[RedriveDecision, Callable[[_Facts], bool], str]

#: The rule, one row per reason to leave an execution alone; the first match decides.
RULES: tuple[Rule, ...] = (
    (
        RedriveDecision.SKIPPED_BUSINESS_OUTCOME,
        lambda f: is_business_outcome(f.error),
        "a business outcome (Saga.*): the saga ended as designed",
    ),
    (
        RedriveDecision.SKIPPED_STOPPED,
        lambda f: f.error == EXECUTION_STOPPED,
        "an operator stopped it (stepsaga stop)",
    ),
    (
        RedriveDecision.SKIPPED_OTHER_ERROR,
        lambda f: f.wanted_error is not None and f.error != f.wanted_error,
        "failed with another error than --error",
    ),
    (
        RedriveDecision.SKIPPED_OUTSIDE_WINDOW,
        lambda f: f.stop_date is not None and f.now - f.stop_date > REDRIVE_WINDOW,
        "stopped more than 14 days ago (the redrive window)",
    ),
    (
        RedriveDecision.SKIPPED_NOT_REDRIVABLE,
        lambda f: f.redrive_status == "NOT_REDRIVABLE",
        "the service says it cannot be redriven",
    ),
)


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class RedriveRow(_View):
    """What was decided for one failed execution (and, if redriven, where it went)."""

    execution_arn: str = Field(alias="executionArn")
    name: str
    tenant_id: str
    case_id: str
    error: str | None = None
    stop_date: datetime | None = Field(default=None, alias="stopDate")
    decision: RedriveDecision
    detail: str
    #: After a redrive: the execution's status and the case's outcome.
    status: str | None = None
    outcome: CaseOutcome | None = None


class BulkRedriveView(_View):
    """``redrive --all-failed`` output: counts first, then one row per execution looked at."""

    redriven: int
    skipped: int
    refused: int
    #: A bound (``--max``, or the listing bound) stopped the walk: run it again.
    truncated: bool
    executions: tuple[RedriveRow, ...]


def decide(view: ExecutionView, *, error: str | None, now: datetime) -> tuple[RedriveDecision, str]:
    """The rule (:data:`RULES`) for one failed execution."""
    facts = _Facts(
        error=view.error,
        wanted_error=error,
        redrive_status=view.redrive_status,
        stop_date=view.stop_date,
        now=now,
    )
    for decision, matches, reason in RULES:
        if matches(facts):
            return decision, reason
    return RedriveDecision.REDRIVEN, "a technical failure inside the redrive window"


def check_max(max_redrives: int | None) -> int:
    """``--max``: how many redrives one call may make (1 to ``MAX_REDRIVES``)."""
    value = DEFAULT_MAX_REDRIVES if max_redrives is None else max_redrives
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REDRIVES:
        raise InvalidInputError(
            f"--max must be a whole number from 1 to {MAX_REDRIVES}", field="max"
        )
    return value


def check_error(error: str | None) -> str | None:
    if error is None:
        return None
    text = error.strip()
    if not text:
        raise InvalidInputError("--error: must not be empty", field="error")
    if is_business_outcome(text):
        raise InvalidInputError(
            f"--error: {text} is a business outcome (Saga.*), which is never redriven",
            field="error",
        )
    return text


def redrive_all_failed(
    backend: SagaBackend,
    *,
    now: datetime,
    error: str | None = None,
    since: str | datetime | None = None,
    tenant: str | None = None,
    saga: str | None = None,
    max_redrives: int | None = None,
    time_scale: float | None = None,
    on_event: ProgressListener | None = None,
) -> BulkRedriveView:
    """Redrive every technical failure (of ``tenant``/``saga``, started since ``since``, with
    error ``error``) the rule allows, at most ``max_redrives``; flags are checked before
    anything is read or redriven."""
    wanted = check_error(error)
    bound = check_max(max_redrives)
    rows: list[RedriveRow] = []
    asked = 0
    scanned = 0
    truncated = False
    token: str | None = None
    first = True
    while first or token is not None:
        first = False
        page = backend.list_executions(
            saga=saga,
            tenant=tenant,
            outcome=CaseOutcome.FAILED.value,
            since=since,
            limit=_PAGE,
            next_token=token,
        )
        token = page.next_token
        for summary in page.items:
            if asked >= bound or scanned >= MAX_SCANNED:
                truncated = True
                break
            scanned += 1
            view = backend.status(summary.execution_arn)
            if view.outcome is not CaseOutcome.FAILED:
                continue  # it moved on since it was listed
            decision, detail = decide(view, error=wanted, now=now)
            row = RedriveRow(
                execution_arn=view.execution_arn,
                name=view.name,
                tenant_id=view.tenant_id,
                case_id=view.case_id,
                error=view.error,
                stop_date=view.stop_date,
                decision=decision,
                detail=detail,
            )
            if decision is RedriveDecision.REDRIVEN:
                row = _redrive(backend, row, time_scale, on_event)
                asked += 1
            rows.append(row)
        if truncated:
            break
    return BulkRedriveView(
        redriven=sum(r.decision is RedriveDecision.REDRIVEN for r in rows),
        skipped=sum(r.decision.value.startswith("skipped") for r in rows),
        refused=sum(r.decision is RedriveDecision.REFUSED for r in rows),
        truncated=truncated,
        executions=tuple(rows),
    )


def _redrive(
    backend: SagaBackend,
    row: RedriveRow,
    time_scale: float | None,
    on_event: ProgressListener | None,
) -> RedriveRow:
    try:
        after = backend.redrive(row.execution_arn, time_scale=time_scale, on_event=on_event)
    except ExecutionNotRedrivable as exc:
        # The backend's own rule (superseded by a later revision, redriven meanwhile by
        # another process): nothing to do here, not a failure of the bulk redrive.
        return row.model_copy(
            update={"decision": RedriveDecision.SKIPPED_NOT_REDRIVABLE, "detail": exc.message}
        )
    except StepSagaError as exc:
        if exc.data.get("field") == "time_scale":
            raise  # a flag this backend refuses: the whole command is bad input
        return row.model_copy(update={"decision": RedriveDecision.REFUSED, "detail": exc.message})
    return row.model_copy(update={"status": after.status, "outcome": after.outcome})
