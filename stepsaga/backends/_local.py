"""The embedded backend: each saga on ``LocalEngine``, handlers in-process, state in SQLite.

Composition (all under ``$STEPSAGA_HOME``): the ledger (``ledger.sqlite3``), the engine
(``executions.sqlite3``) with one state machine per saga of the project
(``…:stateMachine:<saga name>``), and whatever the project's ``Dependencies.local`` keeps
there (the reference app's simulated services: ``services.sqlite3``). An execution
remembers its saga through its state machine, so ``status``, ``redrive`` and ``recon
resolve`` use that saga's definition and handlers — and refuse, before anything runs, an
execution of a saga the project does not declare.

Reads never create files: asking about a home that has none answers "not found". Writes
happen only after every input was checked (see ``base.py``).
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from stepsaga._model.approval_time import check_approval_window
from stepsaga._model.case import ApprovedCase
from stepsaga._model.person import check_note, check_person
from stepsaga._project.dependencies import LocalContext, SupportsFaults
from stepsaga._project.home import StateHome
from stepsaga._project.project import Project
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.backends._assemble import (
    CaseIdentity,
    case_open_items,
    case_records,
    execution_view,
    item_view,
    listed_summary,
    recon_list,
    recon_page,
)
from stepsaga.backends._lifecycle import (
    Sibling,
    redrive_refusal,
    refuse_ended,
    settle_stopped,
    start_refusal,
    stop_cause,
    stopped,
    superseding,
)
from stepsaga.backends._naming import execution_name
from stepsaga.backends._references import Candidate, choose
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
from stepsaga.engine import Handler, LocalEngine
from stepsaga.engine._engine import check_time_scale, time_scale_from_env
from stepsaga.engine._lambda_invoke import LambdaContext
from stepsaga.engine._models import (
    DelayChosen,
    DelayKind,
    EngineEvent,
    HistoryRecorded,
    TokenStatus,
)
from stepsaga.engine._store import ExecutionPageQuery
from stepsaga.errors import (
    EXECUTION_STOPPED,
    ExecutionAlreadyExists,
    ExecutionDoesNotExist,
    ExecutionNotRedrivable,
    InvalidInputError,
    InvalidToken,
    MockConfigError,
    NotFoundError,
    TaskDoesNotExist,
    TaskTimedOut,
    TransientError,
)
from stepsaga.ledger import Ledger, LedgerPolicy, Record, open_ledger
from stepsaga.ledger._models import ReconOutcome, ReconStatus
from stepsaga.workflow._saga import Saga

if TYPE_CHECKING:  # and what only some verbs use loads in them (#26: status start-up)
    from stepsaga._handlers.deps import HandlerDeps
    from stepsaga.backends._listing import ExecutionQuery, PageToken
    from stepsaga.backends._progress import ProgressListener
    from stepsaga.engine import MockConfig
    from stepsaga.engine._scheduler import Scheduler

#: Builds the in-process handlers: logical function name → ``(event, context) -> result``.
HandlersFactory = Callable[["HandlerDeps", Saga], Mapping[str, Handler]]

_REGION = "us-east-1"
#: How many of the newest executions a search by a case input's value looks at
#: (``find_executions``): a bounded scan, measured in docs/how-to/console.md.
SEARCH_WINDOW = 10_000
_ACCOUNT = "123456789012"


def function_arn(saga: str, function: str) -> str:
    """The Lambda ARN a local definition names (the engine resolves it to the handler)."""
    return f"arn:aws:lambda:{_REGION}:{_ACCOUNT}:function:{saga}-{function}"


def state_machine_arn(saga: str) -> str:
    return f"arn:aws:states:{_REGION}:{_ACCOUNT}:stateMachine:{saga}"


def execution_arn(saga: str, name: str) -> str:
    return f"arn:aws:states:{_REGION}:{_ACCOUNT}:execution:{saga}:{name}"


def saga_of(described: Mapping[str, Any]) -> str:
    """The saga an execution runs: its state machine's name."""
    return str(described["stateMachineArn"]).rsplit(":", 1)[-1]


def local_operator() -> str:
    """``user@host`` of this process (the embedded backend has no other identity)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (containers)
        user = f"uid{os.getuid()}"
    return check_person(f"{user}@{socket.gethostname() or 'localhost'}", "operator")


def default_handlers(deps: HandlerDeps, saga: Saga) -> Mapping[str, Handler]:
    """The real handlers (``stepsaga._handlers``)."""
    from stepsaga._handlers.registry import build_handlers

    return build_handlers(deps, saga)


class LocalBackend:
    """:class:`~stepsaga.backends._base.SagaBackend` on the embedded engine, for the sagas
    of ``project``.

    ``clock`` and ``sleeper`` are injectable for tests; ``handlers`` builds the in-process
    handlers (default: the sagas' own); ``log_level`` is the handlers' (JSON on stderr);
    ``engine_synchronous`` is the executions store's durability (``NORMAL`` by default, or
    ``$STEPSAGA_ENGINE_SYNCHRONOUS``; ``FULL`` survives power loss). The ledger's is its
    URL's (``FULL``). ``ledger_url`` puts the ledger elsewhere than the home's SQLite file,
    e.g. ``dynamodb://TABLE?region=…`` to run the engine over the table a deployment uses.
    """

    def __init__(
        self,
        home: StateHome,
        project: Project,
        *,
        clock: Clock | None = None,
        handlers: HandlersFactory | None = None,
        sleeper: Callable[[float], None] = time.sleep,
        log_level: str = "ERROR",
        engine_synchronous: str | None = None,
        ledger_url: str | None = None,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.home = home
        self._scheduler = scheduler  # how the engine interleaves branches (tests: seeded)
        self._ledger_url = ledger_url
        self.project = project
        self.clock: Clock = clock or SystemClock()
        self._handlers = handlers or default_handlers
        self._sleep = sleeper
        self._log_level = log_level
        self._synchronous = engine_synchronous
        self._definitions: dict[str, dict[str, Any]] = {}
        self._texts: dict[str, str] = {}
        self._ledger: Ledger | None = None
        self._reader: LocalEngine | None = None
        self._kept: _Running | None = None

    def definition(self, saga: Saga) -> dict[str, Any]:
        """The saga's ASL with this backend's function ARNs (compiled once)."""
        if saga.name not in self._definitions:
            from stepsaga.workflow import compile
            from stepsaga.workflow._substitutions import render

            self._definitions[saga.name] = render(
                compile(saga),
                saga.definition_substitutions(lambda function: function_arn(saga.name, function)),
            )
        return self._definitions[saga.name]

    def _definition_text(self, saga: Saga) -> str:
        """:meth:`definition` as JSON text, encoded once: the engine knows a text it has
        seen without encoding the definition again on every start."""
        if saga.name not in self._texts:
            self._texts[saga.name] = json.dumps(self.definition(saga))
        return self._texts[saga.name]

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        self._drop_kept()
        if self._reader is not None:
            self._reader.close()
        if self._ledger is not None:
            self._ledger.close()
        self._reader = None
        self._ledger = None

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- the verbs ---------------------------------------------------------------------

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
        chosen = self.project.saga(saga)
        _check_input_model(chosen, case)
        self._check_test_case(chosen, mock_config, test_case)
        scale = self._scale(time_scale)
        supports = self._faults_support() if faults is not None else None
        name = execution_name(case.tenant_id, case.case_id, case.approval.revision)
        execution_input = case.execution_input()
        chosen.check_input(execution_input)
        existing = self._existing(chosen.name, name)
        if existing is not None and json.loads(existing["input"]) != execution_input:
            raise ExecutionAlreadyExists(
                f"execution {name} already exists ({existing['status']}) for case "
                f"{case.case_id} revision {case.approval.revision} with a different input; "
                f"to change the case, approve revision {case.approval.revision + 1} (it "
                "starts once this one is closed, adopts what this one applied unchanged and "
                "sends every changed effect to a person)",
                field="input",
                execution_arn=existing["executionArn"],
            )
        check_approval_window(case.approval.approved_at, self.clock.now(), LedgerPolicy().retention)
        if existing is None:
            identity = CaseIdentity(case.tenant_id, case.case_id, case.approval.revision)
            refusal = start_refusal(identity, self._siblings(identity))
            if refusal is not None:
                raise InvalidInputError(refusal, field="approval.revision")
        # From here on, writing is allowed: every input was checked.
        if existing is None and supports is not None:
            supports.attach_faults(self._context(scale), case.tenant_id, case.case_id, faults)
        with self._running(chosen, scale, on_event, mock_config) as engine:
            arn = engine.ensure_state_machine(chosen.name, self._definition_text(chosen))
            described = engine.start_execution(
                arn, name, execution_input, test_case=test_case if mock_config else None
            )
            return self._view(engine, described)

    def status(self, ref: str, *, tenant: str | None = None) -> ExecutionView:
        reader = self._read_engine()
        arn = self._resolve(reader, ref, tenant)
        return self._view(reader, reader.describe_execution(arn))

    def history(self, ref: str, *, tenant: str | None = None) -> dict[str, Any]:
        reader = self._read_engine()
        return reader.get_execution_history(self._resolve(reader, ref, tenant))

    def retry_delays(self, ref: str, *, tenant: str | None = None) -> dict[int, float]:
        """The retry delays the engine chose (``time_scale`` 0 still records them)."""
        reader = self._read_engine()
        delays = reader.list_delays(self._resolve(reader, ref, tenant))
        return {d.event_id: d.seconds for d in delays if d.kind is DelayKind.RETRY}

    def redrive(
        self,
        ref: str,
        *,
        tenant: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        scale = self._scale(time_scale)
        reader = self._read_engine()
        arn = self._resolve(reader, ref, tenant)
        described = reader.describe_execution(arn)
        saga = self._saga_of(described)
        identity = CaseIdentity.from_input(described["input"])
        refusal = redrive_refusal(described, lambda: self._siblings(identity))
        if refusal is not None:
            raise ExecutionNotRedrivable(
                f"execution {described['name']} ({described['status']}) cannot be redriven: "
                f"{refusal}",
                field="execution_arn",
            )
        with self._running(saga, scale, on_event, None) as engine:
            return self._view(engine, engine.redrive_execution(arn))

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
        from stepsaga.backends._listing import ExecutionQuery, PageToken, empty_page

        query = ExecutionQuery.build(
            now=self.clock.now(),
            saga=saga,
            tenant=tenant,
            status=status,
            outcome=outcome,
            since=since,
            limit=limit,
        )
        token = PageToken.decode(next_token, backend="local", query=query)
        if query.saga is not None:
            self.project.saga(query.saga)  # a saga the project does not declare: exit 2
        if not self.home.executions_path.exists():
            return empty_page()
        reader = self._read_engine()
        page = _page_query(query, token, limit=query.limit + 1)
        waiting: dict[str, list[str]] = {}
        for task in reader.list_waiting_tasks():
            waiting.setdefault(task.execution_arn, []).append(task.state_name)
        found: list[tuple[ExecutionSummary, tuple[float, str]]] = []
        while len(found) <= query.limit:  # one more than asked: is there a next page?
            rows = reader.page_executions(page)
            for row, position in rows:
                states = waiting.get(row["executionArn"], ())
                summary = listed_summary(row, saga_of(row), waiting_for=states)
                if summary is not None and query.outcome in (None, summary.outcome):
                    found.append((summary, position))
                    if len(found) > query.limit:
                        break
            if len(rows) < page.limit or len(found) > query.limit:
                break
            page = replace(page, after=rows[-1][1])
        items = tuple(summary for summary, _ in found[: query.limit])
        following = None
        if len(found) > query.limit:
            following = PageToken(
                backend="local",
                filters=query.filters,
                since=page.since,
                after=found[query.limit - 1][1],
            ).encode()
        return ExecutionPage(items=items, next_token=following)

    def find_executions(self, value: str, *, limit: int = 50) -> list[ExecutionSummary]:
        """Executions among the newest :data:`SEARCH_WINDOW` whose case input has ``value``
        as a top-level string (an order id, a customer reference), case-insensitive,
        newest first: one query over a bounded slice of the start-time index."""
        if not self.home.executions_path.exists():
            return []
        reader = self._read_engine()
        waiting: dict[str, list[str]] = {}
        for task in reader.list_waiting_tasks():
            waiting.setdefault(task.execution_arn, []).append(task.state_name)
        found = []
        for row, _ in reader.find_by_value(value, within=SEARCH_WINDOW, limit=limit):
            states = waiting.get(row["executionArn"], ())
            summary = listed_summary(row, saga_of(row), waiting_for=states)
            if summary is not None:
                found.append(summary)
        return found

    def count_executions(
        self,
        *,
        saga: str | None = None,
        tenant: str | None = None,
        status: str | None = None,
        outcome: str | None = None,
        since: str | datetime | None = None,
    ) -> int | None:
        """How many executions ``list_executions`` pages through with these filters: one
        ``COUNT`` over the index the pages use. ``None`` with ``outcome``: an outcome is
        decided row by row (the ledger's word), which a count query cannot."""
        from stepsaga.backends._listing import ExecutionQuery

        query = ExecutionQuery.build(
            now=self.clock.now(), saga=saga, tenant=tenant, status=status, since=since
        )
        if outcome:
            return None
        if query.saga is not None:
            self.project.saga(query.saga)
        if not self.home.executions_path.exists():
            return 0
        return self._read_engine().count_executions(_page_query(query, None, limit=1))

    def stop(self, ref: str, *, tenant: str | None = None, by: str, note: str) -> ExecutionView:
        by, note = check_person(by, "--by"), check_note(note)
        reader, arn, _, _ = self._stop_settled(ref, tenant, by, note, stop_cause(by, note), "stop")
        return self._view(reader, reader.describe_execution(arn))

    def cancel(self, ref: str, *, tenant: str | None = None, by: str, note: str) -> CancelView:
        from stepsaga.backends._cancel import cancel_cause, undo, undo_plan, undone_view

        by, note = check_person(by, "--by"), check_note(note)
        reason = cancel_cause(by, note)
        reader, arn, saga, case = self._stop_settled(ref, tenant, by, note, reason, "cancel")
        later = superseding(case, self._siblings(case))
        records = case_records(self._open_ledger(), saga, case)
        plan = undo_plan(saga, case, records, superseded=later is not None)
        with self._running(saga, 0.0, None, None):
            assert self._kept is not None  # set by _running
            handlers = self._handlers(self._kept.deps, saga)

            def invoke(function: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
                context = LambdaContext(
                    function_name=function,
                    aws_request_id=f"cancel-{uuid.uuid4()}",
                    invoked_function_arn=function_arn(saga.name, function),
                    remaining_millis=900_000,
                )
                return cast(Mapping[str, Any], handlers[function](dict(event), context))

            name = arn.rsplit(":", 1)[-1]
            done = undo(saga, case, plan, invoke, execution_name=name, reason=reason)
        view = self._view(reader, reader.describe_execution(arn))
        return CancelView(
            execution=view,
            undone=tuple(undone_view(u) for u in done),
            superseded_by=None if later is None else later.name,
        )

    def _stop_settled(
        self, ref: str, tenant: str | None, by: str, note: str, cause: str, verb: str
    ) -> tuple[LocalEngine, str, Saga, CaseIdentity]:
        """``stop``'s and ``cancel``'s first half: the execution stopped with ``cause``
        (an ended one refused), then the ledger settled."""
        reader = self._read_engine()
        arn = self._resolve(reader, ref, tenant)
        described = reader.describe_execution(arn)
        saga = self._saga_of(described)
        if not stopped(described):
            refuse_ended(described, verb)
            described = reader.stop_execution(arn, EXECUTION_STOPPED, cause)
            if not stopped(described):
                raise TransientError(
                    f"execution {described['name']} is being run by another process: it stops "
                    f"at its next step; run the same {verb} again then to settle its ledger",
                    execution_arn=arn,
                )
        identity = CaseIdentity.from_input(described["input"])
        settle_stopped(self._open_ledger(), saga, identity, by, note)
        return reader, arn, saga, identity

    def recon_list(
        self,
        *,
        status: ReconFilter = ReconFilter.OPEN,
        tenant: str | None = None,
        case: str | None = None,
        limit: int | None = None,
    ) -> list[ReconItemView]:
        ledger = self._existing_ledger()
        return recon_list(ledger, status=status, tenant=tenant, case=case, limit=limit)

    def recon_page(
        self,
        *,
        status: ReconFilter = ReconFilter.OPEN,
        tenant: str | None = None,
        case: str | None = None,
        limit: int | None = None,
        next_token: str | None = None,
    ) -> ReconPage:
        ledger = self._existing_ledger()
        return recon_page(
            ledger, status=status, tenant=tenant, case=case, limit=limit, next_token=next_token
        )

    def recon_show(self, item_id: str) -> ReconItemView:
        ledger = self._existing_ledger()
        item = ledger.get_item(item_id) if ledger is not None else None
        if ledger is None or item is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        return item_view(item, ledger.get_audit(item_id))

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
        from stepsaga._reconciliation import resolve, resume_waiting

        if by is None:
            raise InvalidInputError(
                "--by: who decided is required on the local backend", field="--by"
            )
        scale = self._scale(time_scale)
        if self._existing_ledger() is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        ledger = self._open_ledger()
        item = ledger.get_item(item_id)
        if item is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        saga = self._waiting_saga(item.task_token)
        resumed: list[dict[str, Any]] = []
        with self._running(saga, scale, on_event, None) as engine:

            def send(token: str, output: dict[str, Any]) -> object:
                try:
                    described = engine.send_task_success(token, output)
                except TaskTimedOut:
                    # Answered already: an identical resolve delivered the same decision.
                    arn = _answered(engine, token)
                    if arn is None:
                        raise
                    described = engine.describe_execution(arn)
                resumed.append(described)
                return described

            resolution = resolve(ledger, item_id, outcome, by, note, send_task_success=send)
            token = resolution.item.task_token
            waiting = {task.task_token for task in engine.list_waiting_tasks()}
            decided = resolution.item.status is ReconStatus.RESOLVED
            if decided and not resolution.resumed and token is not None and token in waiting:
                # Decided before (or by an identical resolve a moment ago) but not resumed
                # yet: whoever decided may have died before resuming the case.
                resume_waiting(ledger, item_id, send)
            answered = (
                _answered(engine, token) if decided and token is not None and not resumed else None
            )
            if answered is not None:  # the case this decision let continue, as it stands
                resumed.append(engine.describe_execution(answered))
            execution = self._view(engine, resumed[-1]) if resumed else None
        audit = ledger.get_audit(item_id) if decided else None
        return ResolutionView(item=item_view(resolution.item, audit), execution=execution)

    def whoami(self) -> str:
        return local_operator()

    # --- checks before anything is written ---------------------------------------------

    def _check_test_case(
        self, saga: Saga, mock_config: MockConfig | None, test_case: str | None
    ) -> None:
        if (mock_config is None) != (test_case is None):
            raise InvalidInputError("--mock-config and --test-case go together", field="test_case")
        if mock_config is None or test_case is None:
            return
        mocked = mock_config.test_case(saga.name, test_case)
        from stepsaga.engine._definition import load as load_definition  # the ASL parser

        tasks = {state.name for state in load_definition(self.definition(saga)).task_states()}
        for state in mocked.responses:
            if state not in tasks:
                raise MockConfigError(
                    f"test case {test_case!r} mocks {state!r}, which is not a Task state of "
                    f"{saga.name!r}",
                    field="test_case",
                )

    def _faults_support(self) -> SupportsFaults:
        dependencies = self.project.dependencies()
        if not isinstance(dependencies, SupportsFaults):
            raise InvalidInputError(
                "--faults: this project's dependencies simulate no faults (they have no "
                "load_faults/attach_faults)",
                field="faults",
            )
        return dependencies

    def _saga_of(self, described: Mapping[str, Any]) -> Saga:
        """The declared saga an execution runs; exit 2 naming it if it is not declared."""
        name = saga_of(described)
        if not self.project.declares(name):
            raise InvalidInputError(
                f"execution {described['name']} belongs to saga {name!r}, which this project "
                f"does not declare (declared: {', '.join(self.project.saga_names)})",
                field="saga",
            )
        return self.project.saga(name)

    def _waiting_saga(self, token: str | None) -> Saga | None:
        """The saga of the execution waiting on an item's task token, if one waits."""
        if token is None or not self.home.executions_path.exists():
            return None
        reader = self._read_engine()
        for task in reader.list_waiting_tasks():
            if task.task_token == token:
                return self._saga_of(reader.describe_execution(task.execution_arn))
        return None

    def _context(self, scale: float) -> LocalContext:
        return LocalContext(
            home=self.home, clock=self.clock, sleep=lambda seconds: self._sleep(seconds * scale)
        )

    @staticmethod
    def _scale(time_scale: float | None) -> float:
        return time_scale_from_env() if time_scale is None else check_time_scale(time_scale)

    # --- stores --------------------------------------------------------------------------

    def _existing_ledger(self) -> Ledger | None:
        if self._ledger is None and self._ledger_url is None and not self.home.ledger_path.exists():
            return None
        return self._open_ledger()

    def _open_ledger(self) -> Ledger:
        if self._ledger is None:
            self.home.ensure()
            self._ledger = open_ledger(self._ledger_url or self.home.ledger_url, clock=self.clock)
        return self._ledger

    def _read_engine(self) -> LocalEngine:
        """An engine that can describe, list and reap, but runs nothing (no handlers)."""
        if self._reader is None:
            if not self.home.executions_path.exists():
                raise NotFoundError(
                    f"no executions yet in {self.home.root} (start a case first)",
                    home=str(self.home.root),
                )
            self._reader = LocalEngine(
                self.home, {}, clock=self.clock, time_scale=0, synchronous=self._synchronous
            )
        return self._reader

    @contextmanager
    def _running(
        self,
        saga: Saga | None,
        scale: float,
        on_event: ProgressListener | None,
        mock_config: MockConfig | None,
    ) -> Iterator[LocalEngine]:
        """An engine whose handlers (``saga``'s; none for ``None``) run against this home.

        It is kept for the next command with the same saga, time scale and mock config
        (until :meth:`close`), with its ledger and the app's clients: opening and closing
        them on every start cost 9 SQLite connections, each close checkpointing its WAL.
        A command that raised drops it, so the next one starts from fresh connections.
        """
        key = (saga.name if saga is not None else None, scale, id(mock_config))
        kept = self._kept
        if kept is None or kept.key != key or kept.mock_config is not mock_config:
            self._drop_kept()
            kept = self._kept = self._open_running(key, saga, scale, mock_config)
        kept.engine.listen(_translate(on_event) if on_event is not None else None)
        try:
            yield kept.engine
        except BaseException:
            self._drop_kept()
            raise
        if self._kept is not None:
            self._kept.engine.listen(None)

    def _open_running(
        self,
        key: tuple[str | None, float, int],
        saga: Saga | None,
        scale: float,
        mock_config: MockConfig | None,
    ) -> _Running:
        """The reconciler may resume a case itself, so its ``send_task_success`` is bound to
        the engine once it exists; the app's clients sleep scaled like the engine's waits."""
        from stepsaga._handlers.deps import local_deps  # the verbs that run handlers only

        engines: list[LocalEngine] = []

        def send_task_success(token: str, output: dict[str, Any]) -> object:
            return engines[0].send_task_success(token, output)

        ctx = self._context(scale)
        clients = self.project.dependencies().local(ctx) if saga is not None else None
        deps = local_deps(
            self.home,
            clients,
            clock=self.clock,
            send_task_success=send_task_success,
            log_level=self._log_level,
            ledger_url=self._ledger_url,
        )
        try:
            engine = LocalEngine(
                self.home,
                self._registry(deps, saga) if saga is not None else {},
                clock=self.clock,
                time_scale=scale,
                sleeper=self._sleep,
                mock_config=mock_config,
                region=_REGION,
                account_id=_ACCOUNT,
                synchronous=self._synchronous,
                scheduler=self._scheduler,
            )
        except BaseException:
            deps.close()
            raise
        engines.append(engine)
        return _Running(key, mock_config, engine, deps)

    def _drop_kept(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None:
            try:
                kept.engine.close()
            finally:
                kept.deps.close()

    def _registry(self, deps: HandlerDeps, saga: Saga) -> dict[str, Handler]:
        handlers = self._handlers(deps, saga)
        registry: dict[str, Handler] = {}
        for function in saga.functions:
            if function not in handlers:
                raise LookupError(f"no handler built for function {function!r}")
            registry[function_arn(saga.name, function)] = handlers[function]
        return registry

    # --- finding executions ----------------------------------------------------------------

    def _existing(self, saga: str, name: str) -> dict[str, Any] | None:
        if not self.home.executions_path.exists():
            return None
        try:
            return self._read_engine().describe_execution(execution_arn(saga, name))
        except ExecutionDoesNotExist:
            return None

    def _siblings(self, case: CaseIdentity) -> list[Sibling]:
        """The executions of this tenant's case, every revision (indexed by case id)."""
        if not self.home.executions_path.exists():
            return []
        reader = self._read_engine()
        found: list[Sibling] = []
        for arn in reader.executions_of_case(case.case_id):
            try:
                sibling = Sibling.of(reader.describe_execution(arn))
            except InvalidInputError:
                continue  # an input with a case_id that is not a stepsaga case
            mine = (sibling.identity.tenant_id, sibling.identity.case_id)
            if mine == (case.tenant_id, case.case_id):
                found.append(sibling)
        return found

    def _resolve(self, reader: LocalEngine, ref: str, tenant: str | None) -> str:
        """An execution ARN from an ARN, an execution name or a case id, among the
        executions of every state machine in this home (``references.py`` decides)."""
        ref = ref.strip()
        if not ref:
            raise InvalidInputError("execution or case id: must not be empty", field="ref")
        if ref.startswith("arn:"):
            given = self._candidate(reader, ref)
            if given is None or tenant not in (None, given.identity.tenant_id):
                whose = f" of tenant {tenant}" if tenant else ""
                raise NotFoundError(f"no execution {ref}{whose} in {self.home.root}", ref=ref)
            return given.arn
        machines = [m["name"] for m in reader.list_state_machines()["stateMachines"]]
        found = (self._candidate(reader, execution_arn(m, ref)) for m in machines)
        named = [candidate for candidate in found if candidate is not None]
        of_case = [
            candidate
            for arn in reader.executions_of_case(ref)  # indexed: flat in the home's size
            if (candidate := self._candidate(reader, arn)) is not None
        ]
        where = f"in {self.home.root}"
        return choose(ref, tenant, named=named, of_case=of_case, where=where).arn

    @staticmethod
    def _candidate(reader: LocalEngine, arn: str) -> Candidate | None:
        try:
            described = reader.describe_execution(arn)
            return Candidate(arn, described["name"], CaseIdentity.from_input(described["input"]))
        except (ExecutionDoesNotExist, InvalidInputError):
            return None  # no such execution, or its input is not a stepsaga case

    # --- views -----------------------------------------------------------------------------

    def _view(self, engine: LocalEngine, described: Mapping[str, Any]) -> ExecutionView:
        case = CaseIdentity.from_input(described["input"])
        ledger = self._existing_ledger()
        records: dict[str, Record] = {}
        open_items: tuple[str, ...] = ()
        if ledger is not None:
            found = ledger.list(tenant=case.tenant_id, case=case.case_id)
            records = {r.key: r for r in found if r.revision == case.revision}
            open_items = tuple(i.item_id for i in case_open_items(ledger, case))
        waiting = tuple(t.state_name for t in engine.list_waiting_tasks(described["executionArn"]))
        return execution_view(
            described,
            saga=self._saga_of(described),
            records=records,
            waiting_for=waiting,
            open_items=open_items,
        )


def _page_query(
    query: ExecutionQuery, token: PageToken | None, *, limit: int
) -> ExecutionPageQuery:
    """The store's page query for a listing's filters: what ``list_executions`` pages
    through and ``count_executions`` counts, so the two cannot disagree."""
    from stepsaga.backends._listing import first_since

    start = first_since(query, token)
    return ExecutionPageQuery(
        limit=limit,
        state_machine_arn=state_machine_arn(query.saga) if query.saga is not None else None,
        statuses=query.statuses(),
        tenant=query.tenant,
        since=start.timestamp() if start is not None else None,
        after=token.after if token is not None else None,
    )


@dataclass
class _Running:
    """The engine (with its handlers' ledger and clients) kept between commands."""

    key: tuple[str | None, float, int]
    mock_config: MockConfig | None
    engine: LocalEngine
    deps: HandlerDeps


def _answered(engine: LocalEngine, token: str) -> str | None:
    """The execution whose callback ``token`` was answered with a success (a decision
    delivered), if it was; ``None`` if it still waits, timed out or is unknown here."""
    try:
        task = engine.describe_task(token)
    except (TaskDoesNotExist, InvalidToken):
        return None
    return str(task["executionArn"]) if task["status"] == TokenStatus.SUCCEEDED else None


def _check_input_model(saga: Saga, case: ApprovedCase) -> None:
    """A case validated with another saga's model is a programming error, named."""
    model = saga.input_model
    if model is not None and not isinstance(case, model):
        raise InvalidInputError(
            f"saga {saga.name} takes a {model.__name__} case, not a {type(case).__name__}",
            field="case",
        )


def _translate(listener: ProgressListener) -> Callable[[EngineEvent], None]:
    """Engine notices → backend-neutral progress notices."""
    from stepsaga.backends._progress import Progress, ProgressKind, from_history_event

    def on_event(event: EngineEvent) -> None:
        if isinstance(event, HistoryRecorded):
            progress = from_history_event(event.execution_arn, event.event)
            if progress is not None:
                listener(progress)
        elif isinstance(event, DelayChosen) and event.delay.kind is DelayKind.RETRY:
            delay = event.delay
            listener(
                Progress(
                    ProgressKind.RETRY,
                    delay.execution_arn,
                    delay.timestamp.astimezone(UTC),
                    state=delay.state_name,
                    error=delay.error,
                    attempt=delay.attempt,
                    seconds=delay.seconds,
                )
            )

    return on_event
