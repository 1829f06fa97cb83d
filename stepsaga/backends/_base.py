"""What a backend must do for the CLI: the operator's verbs, on the embedded engine or AWS.

The CLI is a thin layer over :class:`SagaBackend`: it validates files (case, faults, mock
config) into values, calls one method and prints the view it gets back (``views.py``). A
backend never prints and never exits; it raises ``stepsaga.errors`` classes, which the
CLI maps to exit codes (``InvalidInputError``/``NotFoundError`` → 2, other
``StepSagaError`` → 1).

Rules every backend keeps:

* **Per saga.** A backend serves the sagas of one ``Project``. An execution remembers its
  saga; a verb aimed at an execution (or an item waiting in one) of a saga the project
  does not declare raises ``InvalidInputError`` naming it, before anything runs.
* **Nothing written on bad input.** Validate everything (test case against the mock
  config, time scale, a conflicting earlier start…) before the first write to any store.
* **One execution per approved case**, named by :func:`~stepsaga.backends._naming.execution_name`.
  Starting again with the same input returns the existing execution (and changes
  nothing); a different input raises ``ExecutionAlreadyExists`` (an ``InvalidInputError``)
  naming the execution.
* **References.** ``ref`` arguments accept an execution ARN, an execution name, or a case
  id; a case id under several tenants needs ``tenant`` (else ``InvalidInputError`` listing
  them); several revisions of one case resolve to the newest.
* **The case outcome** comes from :func:`~stepsaga.backends._outcome.derive_outcome` only.
* **Revisions and stops** (``lifecycle.py``): a revision starts only when every earlier
  one is closed; stopped, compensated and superseded executions are never redriven.
* Flags a backend cannot honour (``faults`` and ``mock_config`` on AWS) raise
  ``InvalidInputError`` naming the flag, before anything is written.
"""

from __future__ import annotations

from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from stepsaga._model.case import ApprovedCase
from stepsaga.backends._views import (
    CancelView,
    ExecutionPage,
    ExecutionSummary,
    ExecutionView,
    ReconFilter,
    ReconItemView,
    ReconPage,
    ResolutionView,
)
from stepsaga.ledger._models import ReconOutcome

if TYPE_CHECKING:  # annotations only: ``status`` loads neither
    from stepsaga.backends._progress import ProgressListener
    from stepsaga.engine._mockconfig import MockConfig


class SagaBackend(Protocol):
    """The operator's verbs. Executions run synchronously on the local backend (a call
    returns once the execution ended or waits for a person); on AWS ``start``, ``redrive``
    and ``recon_resolve`` return as soon as the service accepted the request, unless the
    backend chooses to poll until then (reporting progress through ``on_event``)."""

    def start(
        self,
        case: ApprovedCase,
        *,
        saga: str | None = None,
        faults: object | None = None,
        mock_config: MockConfig | None = None,
        test_case: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        """Run ``case`` as the project's saga ``saga`` (optional when it declares one);
        ``case.execution_input()`` is the execution input.

        ``faults`` (what the project's ``Dependencies.load_faults`` read; local only)
        attach to the case (they survive redrives in other processes). ``mock_config`` +
        ``test_case`` mock task results (Step Functions Local format; unmocked states run
        their real handlers). ``time_scale``
        multiplies waits (``None``: ``$STEPSAGA_TIME_SCALE``, default 1).
        """
        ...

    def status(self, ref: str, *, tenant: str | None = None) -> ExecutionView:
        """The execution of ``ref`` now (an interrupted one shows as ``ABORTED``/failed)."""
        ...

    def history(self, ref: str, *, tenant: str | None = None) -> dict[str, Any]:
        """``{"events": [...]}`` exactly as ``GetExecutionHistory`` (all pages, oldest
        first; timestamps as ``datetime``)."""
        ...

    def redrive(
        self,
        ref: str,
        *,
        tenant: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        """Redrive a FAILED/ABORTED/TIMED_OUT execution from the state it stopped in; any
        other status raises ``ExecutionNotRedrivable`` (an ``InvalidInputError``) with
        the reason."""
        ...

    def list_executions(
        self,
        *,
        saga: str | None = None,
        tenant: str | None = None,
        status: str | None = None,
        outcome: str | None = None,
        since: str | datetime | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> ExecutionPage:
        """Executions newest first, one page of at most ``limit`` (default 100, at most
        1000): of the project's saga ``saga``, of ``tenant``, with execution ``status``
        (``RUNNING``, ``SUCCEEDED``…) and case ``outcome`` (``completed``…), started at or
        after ``since`` (ISO-8601, a date, or an age such as ``6h``; ``listing.py``).
        ``next_token`` is the previous page's, with the same filters; anything else raises
        ``InvalidInputError``. Reads only: a home without executions lists none."""
        ...

    def stop(self, ref: str, *, tenant: str | None = None, by: str, note: str) -> ExecutionView:
        """Stop a running execution (``StopExecution`` with ``Stepsaga.Stopped`` and a cause
        naming ``by`` and ``note``) and settle the ledger (``lifecycle.settle_stopped``):
        its in-flight claims become reconciliation items, its waits are closed, the case
        outcome is ``stopped``, and it can never be redriven. Stopping a stopped execution
        settles the ledger again and changes nothing else; one that ended otherwise raises
        ``InvalidInputError``."""
        ...

    def cancel(self, ref: str, *, tenant: str | None = None, by: str, note: str) -> CancelView:
        """Stop the execution as :meth:`stop` does, then undo what it applied with the
        saga's own compensations, last step first (``stepsaga.backends._cancel``): an
        uncertain step becomes an open item, an irreversible one (``Escalate``) an
        escalation item. Cancelling a stopped execution undoes what is left (each undo
        replays by key); one that ended otherwise raises ``InvalidInputError``."""
        ...

    def recon_list(
        self,
        *,
        status: ReconFilter = ReconFilter.OPEN,
        tenant: str | None = None,
        case: str | None = None,
        limit: int | None = None,
    ) -> list[ReconItemView]:
        """Reconciliation items (of ``tenant``, of ``case``), oldest first, at most
        ``limit``."""
        ...

    def recon_page(
        self,
        *,
        status: ReconFilter = ReconFilter.OPEN,
        tenant: str | None = None,
        case: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> ReconPage:
        """One page of ``recon_list`` (``limit`` 1 to 1000, default 100), read from the
        ledger's indexes; ``next_token`` is the previous page's, with the same filters
        (else ``InvalidInputError``)."""
        ...

    def recon_show(self, item_id: str) -> ReconItemView:
        """One item; ``NotFoundError`` if there is none."""
        ...

    def recon_resolve(
        self,
        item_id: str,
        outcome: ReconOutcome,
        by: str | None,
        note: str,
        *,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ResolutionView:
        """Record the operator's finding (ledger record and item in one transaction) and,
        if an execution waits on the item, let it continue (``SendTaskSuccess`` with an
        ``OperatorDecision``) to its next waiting point or its end.

        ``by`` is who decided: required locally; on AWS it is ignored and the caller's IAM
        identity is recorded instead (with an audit record)."""
        ...

    def whoami(self) -> str:
        """Who is operating: the identity a resolution made through this backend records
        (``recon_resolve``'s ``by``). Local: the OS user at this host; AWS: the caller's
        IAM identity (``sts:GetCallerIdentity``'s ARN). Never typed in by the person, so a
        console cannot decide under someone else's name."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> SagaBackend: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class SupportsRetryDelays(Protocol):
    """A backend that knows the retry delays it chose (the local engine records them; AWS
    histories do not carry them)."""

    def retry_delays(self, ref: str, *, tenant: str | None = None) -> dict[int, float]:
        """``{id of the failure event: seconds chosen before the retry}``."""
        ...


@runtime_checkable
class SupportsCount(Protocol):
    """A backend that can count what ``list_executions`` pages through (the local store's
    ``COUNT``; ``ListExecutions`` cannot count, so the AWS backend does not offer it)."""

    def count_executions(
        self,
        *,
        saga: str | None = None,
        tenant: str | None = None,
        status: str | None = None,
        outcome: str | None = None,
        since: str | datetime | None = None,
    ) -> int | None:
        """The total, or ``None`` for filters it cannot count (an outcome)."""
        ...


@runtime_checkable
class SupportsValueSearch(Protocol):
    """A backend that can find executions by a value of their case input (the local store
    reads its executions' inputs; ``ListExecutions`` returns none, so AWS does not)."""

    def find_executions(self, value: str, *, limit: int = 50) -> list[ExecutionSummary]:
        """Executions whose case input has ``value`` as a top-level string, newest first."""
        ...
