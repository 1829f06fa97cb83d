"""The embedded backend: the saga on ``LocalEngine``, handlers in-process, state in SQLite.

Composition (all under ``$STEPSAGA_HOME``): the ledger (``ledger.sqlite3``), the simulated
services (``services.sqlite3``, with the case's faults attached so a redrive in another
process sees them), the handlers built over both, and the engine (``executions.sqlite3``)
running the compiled ``replacement-order`` definition.

Reads never create files: asking about a home that has none answers "not found". Writes
happen only after every input was checked (see ``base.py``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC
from types import TracebackType
from typing import Any

from stepsaga.approval_time import check_approval_window
from stepsaga.backends.assemble import CaseIdentity, execution_view, item_view
from stepsaga.backends.base import STATE_MACHINE_NAME
from stepsaga.backends.naming import execution_name
from stepsaga.backends.progress import Progress, ProgressKind, ProgressListener, from_history_event
from stepsaga.backends.views import (
    ExecutionView,
    ReconDecision,
    ReconFilter,
    ReconItemView,
    ResolutionView,
)
from stepsaga.case import Case
from stepsaga.clock import Clock, SystemClock
from stepsaga.engine import (
    DelayChosen,
    DelayKind,
    EngineEvent,
    ExecutionAlreadyExists,
    ExecutionDoesNotExist,
    Handler,
    HistoryRecorded,
    LocalEngine,
    MockConfig,
    MockConfigError,
    check_time_scale,
    time_scale_from_env,
)
from stepsaga.engine import load as load_definition
from stepsaga.errors import InvalidInputError, NotFoundError
from stepsaga.handlers.deps import HandlerDeps, local_deps
from stepsaga.home import StateHome
from stepsaga.ledger import Ledger, LedgerPolicy, ReconStatus, Record, open_ledger
from stepsaga.services import Faults, open_simulation
from stepsaga.services.simulated import CrashAction, kill_process
from stepsaga.workflow import compile, render
from stepsaga.workflow.saga import Saga

#: Builds the in-process handlers: logical function name → ``(event, context) -> result``.
HandlersFactory = Callable[[HandlerDeps, Saga], Mapping[str, Handler]]

_REGION = "us-east-1"
_ACCOUNT = "123456789012"
_HASHED_NAME = re.compile(r"-[0-9a-f]{12}$")


def function_arn(function: str) -> str:
    """The Lambda ARN a local definition names (the engine resolves it to the handler)."""
    return f"arn:aws:lambda:{_REGION}:{_ACCOUNT}:function:{STATE_MACHINE_NAME}-{function}"


def default_saga() -> Saga:
    from workflows.replacement_order import saga

    return saga


def default_handlers(deps: HandlerDeps, saga: Saga) -> Mapping[str, Handler]:
    """The real handlers (``stepsaga.handlers``)."""
    from stepsaga.handlers.registry import build_handlers

    return build_handlers(deps, saga)


class LocalBackend:
    """:class:`~stepsaga.backends.base.SagaBackend` on the embedded engine.

    ``clock``, ``sleeper`` and ``crash`` (what ``crash_after_effect`` does: SIGKILL by
    default) are injectable for tests; ``log_level`` is the handlers' (JSON on stderr).
    """

    def __init__(
        self,
        home: StateHome,
        *,
        clock: Clock | None = None,
        saga: Saga | None = None,
        handlers: HandlersFactory | None = None,
        crash: CrashAction = kill_process,
        sleeper: Callable[[float], None] = time.sleep,
        log_level: str = "ERROR",
    ) -> None:
        self.home = home
        self.clock: Clock = clock or SystemClock()
        self.saga = saga or default_saga()
        self._handlers = handlers or default_handlers
        self._crash = crash
        self._sleep = sleeper
        self._log_level = log_level
        self._definition = render(
            compile(self.saga),
            self.saga.definition_substitutions(lambda function: function_arn(function)),
        )
        self._ledger: Ledger | None = None
        self._reader: LocalEngine | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
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
        case: Case,
        *,
        faults: Faults | None = None,
        mock_config: MockConfig | None = None,
        test_case: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        self._check_test_case(mock_config, test_case)
        scale = self._scale(time_scale)
        name = execution_name(case.tenant_id, case.case_id, case.approval.revision)
        execution_input = case.execution_input()
        existing = self._existing(name)
        if existing is not None and json.loads(existing["input"]) != execution_input:
            raise ExecutionAlreadyExists(
                f"execution {name} already exists ({existing['status']}) for case "
                f"{case.case_id} revision {case.approval.revision} with a different input; "
                "approve a new revision to change it",
                field="input",
                execution_arn=existing["executionArn"],
            )
        check_approval_window(case.approval.approved_at, self.clock.now(), LedgerPolicy().retention)
        # From here on, writing is allowed: every input was checked.
        if existing is None and faults is not None:
            open_simulation(self.home, clock=self.clock).attach_faults(
                case.tenant_id, case.case_id, faults
            )
        with self._running(scale, on_event, mock_config) as engine:
            arn = engine.ensure_state_machine(STATE_MACHINE_NAME, self._definition)
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

    def redrive(
        self,
        ref: str,
        *,
        tenant: str | None = None,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ExecutionView:
        scale = self._scale(time_scale)
        arn = self._resolve(self._read_engine(), ref, tenant)
        with self._running(scale, on_event, None) as engine:
            return self._view(engine, engine.redrive_execution(arn))

    def recon_list(
        self, *, status: ReconFilter = ReconFilter.OPEN, tenant: str | None = None
    ) -> list[ReconItemView]:
        ledger = self._existing_ledger()
        if ledger is None:
            return []
        wanted = None if status is ReconFilter.ALL else ReconStatus(status.value.upper())
        items = ledger.list_items(tenant=tenant, status=wanted)
        return [item_view(item) for item in sorted(items, key=lambda i: i.created_at)]

    def recon_show(self, item_id: str) -> ReconItemView:
        ledger = self._existing_ledger()
        item = ledger.get_item(item_id) if ledger is not None else None
        if item is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        return item_view(item)

    def recon_resolve(
        self,
        item_id: str,
        outcome: ReconDecision,
        by: str,
        note: str,
        *,
        time_scale: float | None = None,
        on_event: ProgressListener | None = None,
    ) -> ResolutionView:
        from stepsaga.reconciliation import resolve, resume_waiting

        scale = self._scale(time_scale)
        if self._existing_ledger() is None:
            raise NotFoundError(f"no reconciliation item {item_id!r}", item_id=item_id)
        ledger = self._open_ledger()
        resumed: list[dict[str, Any]] = []
        with self._running(scale, on_event, None) as engine:

            def send(token: str, output: dict[str, Any]) -> object:
                described = engine.send_task_success(token, output)
                resumed.append(described)
                return described

            resolution = resolve(
                ledger, item_id, outcome.ledger_value, by, note, send_task_success=send
            )
            token = resolution.item.task_token
            waiting = {task.task_token for task in engine.list_waiting_tasks()}
            if not resolution.resumed and token is not None and token in waiting:
                # Decided before, but whoever decided died before resuming the case.
                resume_waiting(ledger, item_id, send)
            execution = self._view(engine, resumed[-1]) if resumed else None
        return ResolutionView(item=item_view(resolution.item), execution=execution)

    # --- checks before anything is written ---------------------------------------------

    def _check_test_case(self, mock_config: MockConfig | None, test_case: str | None) -> None:
        if (mock_config is None) != (test_case is None):
            raise InvalidInputError("--mock-config and --test-case go together", field="test_case")
        if mock_config is None or test_case is None:
            return
        mocked = mock_config.test_case(STATE_MACHINE_NAME, test_case)
        tasks = {state.name for state in load_definition(self._definition).task_states()}
        for state in mocked.responses:
            if state not in tasks:
                raise MockConfigError(
                    f"test case {test_case!r} mocks {state!r}, which is not a Task state of "
                    f"{STATE_MACHINE_NAME!r}",
                    field="test_case",
                )

    @staticmethod
    def _scale(time_scale: float | None) -> float:
        return time_scale_from_env() if time_scale is None else check_time_scale(time_scale)

    # --- stores --------------------------------------------------------------------------

    def _existing_ledger(self) -> Ledger | None:
        if self._ledger is None and not self.home.ledger_path.exists():
            return None
        return self._open_ledger()

    def _open_ledger(self) -> Ledger:
        if self._ledger is None:
            self.home.ensure()
            self._ledger = open_ledger(self.home.ledger_url, clock=self.clock)
        return self._ledger

    def _read_engine(self) -> LocalEngine:
        """An engine that can describe, list and reap, but runs nothing (no handlers)."""
        if self._reader is None:
            if not self.home.executions_path.exists():
                raise NotFoundError(
                    f"no executions yet in {self.home.root} (start a case first)",
                    home=str(self.home.root),
                )
            self._reader = LocalEngine(self.home, {}, clock=self.clock, time_scale=0)
        return self._reader

    @contextmanager
    def _running(
        self, scale: float, on_event: ProgressListener | None, mock_config: MockConfig | None
    ) -> Iterator[LocalEngine]:
        """An engine whose handlers run against this home (opened for one command).

        The reconciler may resume a case itself, so its ``send_task_success`` is bound to
        this engine once it exists; ``slow`` faults sleep scaled like the engine's waits.
        """
        engines: list[LocalEngine] = []

        def send_task_success(token: str, output: dict[str, Any]) -> object:
            return engines[0].send_task_success(token, output)

        deps = local_deps(
            self.home,
            clock=self.clock,
            crash=self._crash,
            sleeper=lambda seconds: self._sleep(seconds * scale),
            send_task_success=send_task_success,
            log_level=self._log_level,
        )
        try:
            engine = LocalEngine(
                self.home,
                self._registry(deps),
                clock=self.clock,
                time_scale=scale,
                sleeper=self._sleep,
                on_event=_translate(on_event) if on_event is not None else None,
                mock_config=mock_config,
                region=_REGION,
                account_id=_ACCOUNT,
            )
            engines.append(engine)
            with engine:
                yield engine
        finally:
            deps.close()

    def _registry(self, deps: HandlerDeps) -> dict[str, Handler]:
        handlers = self._handlers(deps, self.saga)
        registry: dict[str, Handler] = {}
        for function in self.saga.functions:
            if function not in handlers:
                raise LookupError(f"no handler built for function {function!r}")
            registry[function_arn(function)] = handlers[function]
        return registry

    # --- finding executions ----------------------------------------------------------------

    def _machine_arn(self) -> str:
        return f"arn:aws:states:{_REGION}:{_ACCOUNT}:stateMachine:{STATE_MACHINE_NAME}"

    def _execution_arn(self, name: str) -> str:
        return f"arn:aws:states:{_REGION}:{_ACCOUNT}:execution:{STATE_MACHINE_NAME}:{name}"

    def _existing(self, name: str) -> dict[str, Any] | None:
        if not self.home.executions_path.exists():
            return None
        try:
            return self._read_engine().describe_execution(self._execution_arn(name))
        except ExecutionDoesNotExist:
            return None

    def _resolve(self, reader: LocalEngine, ref: str, tenant: str | None) -> str:
        """An execution ARN from an ARN, an execution name or a case id (see ``base.py``)."""
        ref = ref.strip()
        if not ref:
            raise InvalidInputError("execution or case id: must not be empty", field="ref")
        direct = ref if ref.startswith("arn:") else self._execution_arn(ref)
        try:
            described = reader.describe_execution(direct)
        except ExecutionDoesNotExist:
            described = None
        if described is not None:
            owner = CaseIdentity.from_input(described["input"])
            if tenant is None or owner.tenant_id == tenant:
                return direct
        return self._resolve_case(reader, ref, tenant)

    def _resolve_case(self, reader: LocalEngine, case_id: str, tenant: str | None) -> str:
        found: list[tuple[CaseIdentity, str]] = []
        marker = f"-{case_id}-r"
        listed = reader.list_executions(self._machine_arn())["executions"]
        for listed_execution in listed:
            name = listed_execution["name"]
            if marker not in name and not _HASHED_NAME.search(name):
                continue
            arn = listed_execution["executionArn"]
            identity = CaseIdentity.from_input(reader.describe_execution(arn)["input"])
            if identity.case_id == case_id and tenant in (None, identity.tenant_id):
                found.append((identity, arn))
        if not found:
            whose = f" of tenant {tenant}" if tenant else ""
            raise NotFoundError(
                f"no execution or case {case_id!r}{whose} in {self.home.root}", ref=case_id
            )
        tenants = sorted({identity.tenant_id for identity, _ in found})
        if len(tenants) > 1:
            raise InvalidInputError(
                f"case {case_id} exists for tenants {', '.join(tenants)}: pass --tenant",
                field="tenant",
            )
        return max(found, key=lambda pair: pair[0].revision)[1]

    # --- views -----------------------------------------------------------------------------

    def _view(self, engine: LocalEngine, described: Mapping[str, Any]) -> ExecutionView:
        case = CaseIdentity.from_input(described["input"])
        ledger = self._existing_ledger()
        records: dict[str, Record] = {}
        open_items: tuple[str, ...] = ()
        if ledger is not None:
            found = ledger.list(tenant=case.tenant_id, case=case.case_id)
            records = {r.key: r for r in found if r.revision == case.revision}
            items = ledger.list_items(tenant=case.tenant_id, status=ReconStatus.OPEN)
            prefix = case.key("")
            open_items = tuple(i.item_id for i in items if i.record_key.startswith(prefix))
        waiting = tuple(t.state_name for t in engine.list_waiting_tasks(described["executionArn"]))
        return execution_view(
            described, saga=self.saga, records=records, waiting_for=waiting, open_items=open_items
        )


def _translate(listener: ProgressListener) -> Callable[[EngineEvent], None]:
    """Engine notices → backend-neutral progress notices."""

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
