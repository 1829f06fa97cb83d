"""``LocalEngine``: the embedded Step Functions backend, with a boto3-flavoured API.

Calls mirror the ``stepfunctions`` client (snake_case arguments) and return dicts shaped like
its responses, so the CLI treats the local and AWS backends alike. Executions run in-process
and synchronously: ``start_execution``, ``redrive_execution`` and ``send_task_success`` return
once the execution has ended or is waiting for a callback.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from stepsaga._project.home import StateHome
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.engine import _history as history
from stepsaga.engine import _lambda_invoke as lambda_invoke
from stepsaga.engine._errors import INTERRUPTED, STATES_HEARTBEAT_TIMEOUT, STATES_TIMEOUT
from stepsaga.engine._liveness import Owner, owner_alive
from stepsaga.engine._models import (
    Delay,
    DelayKind,
    EngineEvent,
    ExecutionStatus,
    HistoryRecorded,
    TokenStatus,
    WaitingTask,
)
from stepsaga.engine._quotas import (
    PAYLOAD_BYTES,
    REDRIVABLE_PERIOD_EXCEEDED,
    over_payload_limit,
    redrive_period_over,
)
from stepsaga.engine._scheduler import Scheduler, ThreadScheduler
from stepsaga.engine._services import TOKEN_FORMAT, Services, dumps, role_arn
from stepsaga.engine._store import (
    DEFAULT_SYNCHRONOUS,
    ExecutionPageQuery,
    ExecutionRow,
    Store,
    TokenRow,
    check_synchronous,
)
from stepsaga.errors import (
    ExecutionAlreadyExists,
    ExecutionDoesNotExist,
    ExecutionNotRedrivable,
    InvalidExecutionInput,
    InvalidInputError,
    InvalidName,
    InvalidOutput,
    InvalidToken,
    MockConfigError,
    StateMachineAlreadyExists,
    StateMachineDoesNotExist,
    TaskDoesNotExist,
    TaskTimedOut,
)

if TYPE_CHECKING:
    from stepsaga.engine import _definition as asl
    from stepsaga.engine._mockconfig import MockConfig, MockTestCase
    from stepsaga.engine._runner import Run

log = logging.getLogger(__name__)

TIME_SCALE_ENV = "STEPSAGA_TIME_SCALE"
#: ``NORMAL`` (default: survives a killed process, not power loss) or ``FULL`` (an fsync
#: per commit: survives power loss); ``EXTRA`` also syncs the folder on deletes.
SYNCHRONOUS_ENV = "STEPSAGA_ENGINE_SYNCHRONOUS"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"


#: The largest time scale: 1000 stretches a 60 s retry delay to 17 hours, far past any use,
#: while a larger factor can overflow ``sleep`` and abort the execution on its first retry.
MAX_TIME_SCALE = 1000.0
_PLAIN_NUMBER = re.compile(r"\s*[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?\s*", re.ASCII)


def time_scale_from_env(environ: Mapping[str, str] | None = None) -> float:
    """``$STEPSAGA_TIME_SCALE`` checked by :func:`check_time_scale` (default 1: real waits)."""
    raw = (os.environ if environ is None else environ).get(TIME_SCALE_ENV, "")
    if not raw.strip():
        return 1.0
    return check_time_scale(raw, TIME_SCALE_ENV)


def synchronous_from_env(environ: Mapping[str, str] | None = None) -> str:
    """``$STEPSAGA_ENGINE_SYNCHRONOUS`` (default ``NORMAL``), checked."""
    raw = (os.environ if environ is None else environ).get(SYNCHRONOUS_ENV, "")
    if not raw.strip():
        return DEFAULT_SYNCHRONOUS
    try:
        return check_synchronous(raw)
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"{SYNCHRONOUS_ENV}: {exc.message}", field=SYNCHRONOUS_ENV
        ) from None


def check_time_scale(value: object, name: str = "time_scale") -> float:
    """The one rule for a time scale (``--time-scale``, ``$STEPSAGA_TIME_SCALE``, the
    backends): a finite number from 0 to :data:`MAX_TIME_SCALE`; anything else is one
    ``InvalidExecutionInput`` line naming ``name``."""
    plain = isinstance(value, int | float) and not isinstance(value, bool)
    written = isinstance(value, str) and _PLAIN_NUMBER.fullmatch(value) is not None
    number = float(value) if plain or written else None  # type: ignore[arg-type]
    if number is None or not 0 <= number <= MAX_TIME_SCALE:
        shown = repr(value) if isinstance(value, str) else value
        shown = shown if len(str(shown)) <= 40 else f"{str(shown)[:40]}…"
        raise InvalidExecutionInput(
            f"{name} must be a number from 0 to {MAX_TIME_SCALE:g}, got {shown}", field=name
        )
    return number


def check_name(name: str, what: str = "execution") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidName(
            f"invalid {what} name {name!r}: use 1 to 80 characters from A-Z a-z 0-9 _ -",
            field="name",
        )
    return name


def _listed(row: ExecutionRow) -> dict[str, Any]:
    """A ``ListExecutions`` item."""
    item: dict[str, Any] = {
        "executionArn": row.arn,
        "stateMachineArn": row.state_machine_arn,
        "name": row.name,
        "status": row.status,
        "startDate": _dt(row.start_date),
    }
    if row.stop_date is not None and row.status != ExecutionStatus.RUNNING:
        item["stopDate"] = _dt(row.stop_date)
    item["redriveCount"] = row.redrive_count
    if row.redrive_date is not None:
        item["redriveDate"] = _dt(row.redrive_date)
    return item


def _listed_case(row: ExecutionRow) -> tuple[dict[str, Any], tuple[float, str]]:
    """A ``ListExecutions`` item plus its ``input`` and ``error`` (what a listing of cases
    reads), with its keyset position (the next page's ``after``)."""
    item = _listed(row)
    item["input"] = row.input
    if row.error is not None:
        item["error"] = row.error
    return item, (row.start_date, row.arn)


def _dt(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def substitute(value: Any, substitutions: Mapping[str, str]) -> Any:
    """Replace ``${Name}`` in every string, as CloudFormation's ``DefinitionSubstitutions``."""
    if isinstance(value, str):
        for key, arn in substitutions.items():
            value = value.replace("${" + key + "}", arn)
        return value
    if isinstance(value, dict):
        return {k: substitute(v, substitutions) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, substitutions) for v in value]
    return value


def _check_api_payload(text: str, what: str, error: type[InvalidInputError], field: str) -> None:
    """The API refuses a payload over the quota, as AWS's does (its length constraint)."""
    size = over_payload_limit(text)
    if size is not None:
        raise error(f"{what} has {size} bytes, over the {PAYLOAD_BYTES}-byte quota", field=field)


class LocalEngine:
    """Step Functions semantics on SQLite, handlers in-process.

    ``registry`` maps ``FunctionName`` (or the function name inside a Lambda ARN) to a
    handler ``(event, context) -> result``. ``time_scale`` multiplies every wait (retry
    backoff, ``Wait`` states): ``1`` waits for real, ``0`` skips waits but still records the
    delays chosen; ``None`` reads ``$STEPSAGA_TIME_SCALE``. ``on_event`` receives progress
    notices (history events as written, delays as chosen) for a live display; its errors are
    logged, never allowed to break an execution. ``mock_config`` enables Step Functions
    Local's ``<stateMachineArn>#<TestCase>`` convention in ``start_execution``.
    ``synchronous`` is the store's durability (``NORMAL``: survives a killed process, not
    power loss; ``FULL``: survives power loss, one fsync per commit); ``None`` reads
    ``$STEPSAGA_ENGINE_SYNCHRONOUS``. ``scheduler`` interleaves ``Parallel`` branches and
    ``Map`` iterations (real threads by default; a
    :class:`stepsaga.testing.SeededScheduler` replays one interleaving per seed).

    One instance per thread (it holds one SQLite connection); any number of instances and
    processes may share a home. Callback deadlines (``TimeoutSeconds``/``HeartbeatSeconds``
    of ``.waitForTaskToken`` tasks) are clock time, not scaled, and fire when
    :meth:`run_due_timers` (or a late callback) notices them.
    """

    def __init__(
        self,
        home: StateHome,
        registry: Mapping[str, lambda_invoke.Handler],
        *,
        clock: Clock | None = None,
        time_scale: float | None = None,
        rng: random.Random | None = None,
        sleeper: Callable[[float], None] | None = None,
        on_event: Callable[[EngineEvent], None] | None = None,
        mock_config: MockConfig | None = None,
        region: str = DEFAULT_REGION,
        account_id: str = DEFAULT_ACCOUNT,
        stale_after: float = 900.0,
        synchronous: str | None = None,
        scheduler: Scheduler | None = None,
    ) -> None:
        home.ensure()
        self.home = home
        self.store = Store(
            home.executions_path,
            synchronous=synchronous_from_env() if synchronous is None else synchronous,
        )
        self.clock: Clock = clock or SystemClock()
        self.time_scale = (
            time_scale_from_env() if time_scale is None else check_time_scale(time_scale)
        )
        self.mock_config = mock_config
        self.region = region
        self.account_id = account_id
        self.stale_after = stale_after
        self._on_event = on_event
        self.owner = Owner.current()
        self.services = Services(
            store=self.store,
            registry=registry,
            clock=self.clock,
            sleeper=sleeper or time.sleep,
            time_scale=self.time_scale,
            rng=rng or random.Random(),  # noqa: S311 (ids and jitter, not secrets)
            owner=self.owner,
            region=region,
            account=account_id,
            notify=self._notify if on_event is not None else None,
            scheduler=scheduler or ThreadScheduler(),
        )
        self._definitions: dict[str, asl.Definition] = {}
        #: By the definition's JSON text as given: a caller that passes the same text on
        #: every start (``LocalBackend``) skips re-encoding it to find its digest (#26).
        self._texts: dict[str, asl.Definition] = {}

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def listen(self, on_event: Callable[[EngineEvent], None] | None) -> None:
        """Send progress notices to ``on_event`` from now on (``None``: to nobody), so one
        engine can serve many commands, each with its own display."""
        self._on_event = on_event
        self.services = dataclasses.replace(
            self.services, notify=self._notify if on_event is not None else None
        )

    def _notify(self, event: EngineEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:
            log.exception("on_event callback failed; the execution goes on")

    def _now(self) -> float:
        return self.clock.now().timestamp()

    # --- state machines ----------------------------------------------------------------

    def state_machine_arn(self, name: str) -> str:
        return f"arn:aws:states:{self.region}:{self.account_id}:stateMachine:{name}"

    def create_state_machine(
        self,
        name: str,
        definition: Mapping[str, Any] | str,
        *,
        substitutions: Mapping[str, str] | None = None,
    ) -> str:
        """Validate and store ``definition``; the same definition again is a no-op, another
        one raises ``StateMachineAlreadyExists`` (use :meth:`update_state_machine`)."""
        check_name(name, "state machine")
        loaded = self._load(definition, substitutions)
        arn = self.state_machine_arn(name)
        with self.store.transaction():
            existing = self.store.get_state_machine(arn)
            if existing is not None and existing[2] != loaded.digest:
                raise StateMachineAlreadyExists(
                    f"state machine {name!r} exists with another definition; update it instead",
                    field="name",
                )
            if existing is None:
                self.store.put_definition(loaded.digest, loaded.text)
                self.store.upsert_state_machine(arn, name, loaded.digest, self._now())
        return arn

    def update_state_machine(
        self,
        state_machine_arn: str,
        definition: Mapping[str, Any] | str,
        *,
        substitutions: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Replace the definition; running and past executions keep the one they started with."""
        loaded = self._load(definition, substitutions)
        with self.store.transaction():
            existing = self.store.get_state_machine(state_machine_arn)
            if existing is None:
                raise StateMachineDoesNotExist(
                    f"no state machine {state_machine_arn}", field="state_machine_arn"
                )
            self.store.put_definition(loaded.digest, loaded.text)
            self.store.upsert_state_machine(
                state_machine_arn, existing[1], loaded.digest, self._now()
            )
        return {"updateDate": _dt(self._now())}

    def ensure_state_machine(
        self,
        name: str,
        definition: Mapping[str, Any] | str,
        *,
        substitutions: Mapping[str, str] | None = None,
    ) -> str:
        """Create the state machine or bring its definition up to date; returns its ARN."""
        arn = self.state_machine_arn(name)
        existing = self.store.get_state_machine(arn)
        if existing is None:
            return self.create_state_machine(name, definition, substitutions=substitutions)
        if existing[2] != self._load(definition, substitutions).digest:
            self.update_state_machine(arn, definition, substitutions=substitutions)
        return arn  # unchanged: nothing written (a start used to commit an update each time)

    def describe_state_machine(self, state_machine_arn: str) -> dict[str, Any]:
        found = self.store.get_state_machine(state_machine_arn)
        if found is None:
            raise StateMachineDoesNotExist(
                f"no state machine {state_machine_arn}", field="state_machine_arn"
            )
        arn, name, digest, created, _ = found
        return {
            "stateMachineArn": arn,
            "name": name,
            "status": "ACTIVE",
            "definition": self.store.get_definition(digest),
            "roleArn": role_arn(self.account_id),
            "type": "STANDARD",
            "creationDate": _dt(created),
        }

    def list_state_machines(self) -> dict[str, Any]:
        return {
            "stateMachines": [
                {
                    "stateMachineArn": arn,
                    "name": name,
                    "type": "STANDARD",
                    "creationDate": _dt(created),
                }
                for arn, name, _, created, _ in self.store.list_state_machines()
            ]
        }

    def _load(
        self, definition: Mapping[str, Any] | str, substitutions: Mapping[str, str] | None
    ) -> asl.Definition:
        if isinstance(definition, str) and not substitutions:
            known = self._texts.get(definition)  # the same text again: no JSON round-trip
            if known is not None:
                return known
            loaded = self._load_new(definition, None)
            self._texts[definition] = loaded
            return loaded
        return self._load_new(definition, substitutions)

    def _load_new(
        self, definition: Mapping[str, Any] | str, substitutions: Mapping[str, str] | None
    ) -> asl.Definition:
        from stepsaga.engine import _definition as asl

        if substitutions:
            raw = json.loads(definition) if isinstance(definition, str) else definition
            definition = substitute(raw, substitutions)
        try:
            text = asl.canonical_json(definition)
        except ValueError:
            text = None  # not JSON: ``load`` says why
        if text is not None:  # parsed and checked once per engine, not on every start
            known = self._definitions.get(hashlib.sha256(text.encode()).hexdigest())
            if known is not None:
                return known
        loaded = asl.load(definition)
        self._definitions[loaded.digest] = loaded
        return loaded

    def _definition(self, digest: str) -> asl.Definition:
        from stepsaga.engine import _definition as asl

        loaded = self._definitions.get(digest)
        if loaded is None:
            loaded = self._definitions[digest] = asl.load(self.store.get_definition(digest))
        return loaded

    # --- executions ----------------------------------------------------------------------

    def start_execution(
        self,
        state_machine_arn: str,
        name: str | None = None,
        input: str | Mapping[str, Any] | list[Any] | None = None,
        *,
        test_case: str | MockTestCase | None = None,
    ) -> dict[str, Any]:
        """Start and run an execution; returns ``describe_execution`` of it.

        The same name with the same input (and test case) returns the existing execution
        instead of starting another: one execution per approved case. A different input is
        refused with ``ExecutionAlreadyExists``. ``test_case`` (or an ARN ending in
        ``#TestCase``, the Step Functions Local convention) mocks task results from
        ``mock_config``.
        """
        if "#" in state_machine_arn:
            state_machine_arn, suffix = state_machine_arn.split("#", 1)
            test_case = test_case or suffix
        machine = self.store.get_state_machine(state_machine_arn)
        if machine is None:
            raise StateMachineDoesNotExist(
                f"no state machine {state_machine_arn}", field="state_machine_arn"
            )
        _, machine_name, digest, _, _ = machine
        name = check_name(
            name
            if name is not None
            else str(uuid.UUID(int=self.services.rng.getrandbits(128), version=4))
        )
        input_json, input_value = self._input_json(input)
        definition = self._definition(digest)
        case = self._test_case(test_case, machine_name, definition)
        self._check_handlers(definition, case)
        arn = f"arn:aws:states:{self.region}:{self.account_id}:execution:{machine_name}:{name}"
        now = self._now()
        started = {
            "input": input_json,
            "inputDetails": {"truncated": False},
            "roleArn": role_arn(self.account_id),
        }
        with self.store.transaction():  # the row and ExecutionStarted land together
            existing = self.store.get_execution(arn)
            if existing is None:
                self.store.insert_execution(
                    {
                        "arn": arn,
                        "state_machine_arn": state_machine_arn,
                        "name": name,
                        "digest": digest,
                        "status": ExecutionStatus.RUNNING.value,
                        "input": input_json,
                        "start_date": now,
                        "test_case": dumps(case.to_json()) if case is not None else None,
                        "next_event_id": 2,
                        **self._owner_values(now),
                    }
                )
                kind = history.EventType.EXECUTION_STARTED.value
                self.store.insert_events(arn, [(1, kind, 0, now, dumps(started))])
        if existing is not None:
            self._check_same_start(existing, input_value, case)
            self._reap(existing)
            return self.describe_execution(arn)
        if self.services.notify is not None:
            event = history.build(1, 0, history.EventType.EXECUTION_STARTED.value, now, started)
            self.services.notify(HistoryRecorded(arn, event))
        run = self._run(self._row(arn))
        run.start()
        return self.describe_execution(arn)

    def _input_json(self, value: str | Mapping[str, Any] | list[Any] | None) -> tuple[str, Any]:
        if value is None:
            return "{}", {}
        if isinstance(value, str):
            try:
                text, parsed = value, json.loads(value)
            except ValueError as exc:
                raise InvalidExecutionInput(
                    f"execution input is not JSON: {exc}", field="input"
                ) from None
        else:
            text = dumps(value)
            parsed = json.loads(text)
        _check_api_payload(text, "execution input", InvalidExecutionInput, "input")
        return text, parsed

    def _test_case(
        self, test_case: str | MockTestCase | None, machine_name: str, definition: asl.Definition
    ) -> MockTestCase | None:
        if test_case is None:
            return None
        if isinstance(test_case, str):
            if self.mock_config is None:
                raise MockConfigError(
                    f"test case {test_case!r} given but the engine has no mock config",
                    field="test_case",
                )
            test_case = self.mock_config.test_case(machine_name, test_case)
        tasks = {s.name for s in definition.task_states()}
        for state in test_case.responses:
            if state not in tasks:
                raise MockConfigError(
                    f"test case {test_case.name!r} mocks {state!r}, "
                    f"which is not a Task state of {machine_name!r}",
                    field="test_case",
                )
        return test_case

    def _check_handlers(self, definition: asl.Definition, case: MockTestCase | None) -> None:
        for state in definition.task_states():
            if case is not None and state.name in case.responses:
                continue
            name = state.function_name
            if name is not None and lambda_invoke.resolve(self.services.registry, name) is None:
                raise InvalidExecutionInput(
                    f"state {state.name!r}: no handler registered for FunctionName {name!r}",
                    field="registry",
                )

    def _check_same_start(
        self, row: ExecutionRow, input_value: Any, case: MockTestCase | None
    ) -> None:
        stored_case = json.loads(row.test_case)["TestCase"] if row.test_case else None
        new_case = case.name if case is not None else None
        if json.loads(row.input) != input_value:
            raise ExecutionAlreadyExists(
                f"execution {row.name!r} already exists ({row.status}) with a different input",
                field="input",
                execution_arn=row.arn,
            )
        if stored_case != new_case:
            raise ExecutionAlreadyExists(
                f"execution {row.name!r} already exists ({row.status}) "
                f"with test case {stored_case!r}",
                field="test_case",
                execution_arn=row.arn,
            )

    def describe_execution(self, execution_arn: str) -> dict[str, Any]:
        row = self._reap(self._row(execution_arn))
        status = ExecutionStatus(row.status)
        out: dict[str, Any] = {
            "executionArn": row.arn,
            "stateMachineArn": row.state_machine_arn,
            "name": row.name,
            "status": status.value,
            "startDate": _dt(row.start_date),
        }
        if row.stop_date is not None and status is not ExecutionStatus.RUNNING:
            out["stopDate"] = _dt(row.stop_date)
        out["input"] = row.input
        out["inputDetails"] = {"included": True}
        if row.output is not None:
            out["output"] = row.output
            out["outputDetails"] = {"included": True}
        if row.error is not None:
            out["error"] = row.error
        if row.cause is not None:
            out["cause"] = row.cause
        out["redriveCount"] = row.redrive_count
        if row.redrive_date is not None:
            out["redriveDate"] = _dt(row.redrive_date)
        if not status.redrivable:
            out["redriveStatus"] = "NOT_REDRIVABLE"
            out["redriveStatusReason"] = f"Execution is {status.value} and cannot be redriven"
        elif redrive_period_over(row.stop_date, self._now()):
            out["redriveStatus"] = "NOT_REDRIVABLE"
            out["redriveStatusReason"] = REDRIVABLE_PERIOD_EXCEEDED
        else:
            out["redriveStatus"] = "REDRIVABLE"
        return out

    def list_executions(
        self,
        state_machine_arn: str | None = None,
        status: str | ExecutionStatus | None = None,
        *,
        max_results: int | None = None,
    ) -> dict[str, Any]:
        """Newest first, as ``ListExecutions``."""
        status_value = ExecutionStatus(status).value if status is not None else None
        self.recover_interrupted()
        rows = self.store.list_executions(state_machine_arn, status_value, max_results)
        return {"executions": [_listed(row) for row in rows]}

    def page_executions(
        self, page: ExecutionPageQuery
    ) -> list[tuple[dict[str, Any], tuple[float, str]]]:
        """One keyset page of executions (newest first, through an index; see
        :class:`ExecutionPageQuery`): each a ``ListExecutions`` item plus its ``input`` and
        ``error`` (what a listing of cases reads), with its exact keyset position for the
        next page's ``after``. Interrupted ones are reaped first, as ``describe_execution``
        does, so they show as ``ABORTED``."""
        self.recover_interrupted()
        return [_listed_case(row) for row in self.store.page_executions(page)]

    def find_by_value(
        self, value: str, *, within: int, limit: int
    ) -> list[tuple[dict[str, Any], tuple[float, str]]]:
        """:meth:`Store.find_by_value` as :meth:`page_executions` returns rows."""
        self.recover_interrupted()
        rows = self.store.find_by_value(value, within=within, limit=limit)
        return [_listed_case(row) for row in rows]

    def count_executions(self, page: ExecutionPageQuery) -> int:
        """How many executions :meth:`page_executions` pages through (one ``COUNT``)."""
        return self.store.count_executions(page)

    def executions_of_case(self, case_id: str) -> list[str]:
        """ARNs of the executions whose input is a case with this ``case_id`` (any tenant,
        revision or state machine), through an index: one lookup, not a scan of them all."""
        return self.store.executions_of_case(case_id)

    def get_execution_history(
        self, execution_arn: str, reverse_order: bool = False
    ) -> dict[str, Any]:
        self._reap(self._row(execution_arn))
        return {
            "events": [
                history.build(
                    e.id,
                    e.previous_id,
                    e.type,
                    e.timestamp,
                    None if e.details is None else json.loads(e.details),
                )
                for e in self.store.events(execution_arn, reverse=reverse_order)
            ]
        }

    def list_delays(self, execution_arn: str) -> list[Delay]:
        """Retry and Wait delays chosen, oldest first (kept even when ``time_scale`` is 0)."""
        self._row(execution_arn)
        return [
            Delay(
                arn,
                event_id,
                state,
                DelayKind(kind),
                attempt,
                error,
                seconds,
                slept,
                datetime.fromtimestamp(ts, UTC),
            )
            for arn, event_id, kind, state, attempt, error, seconds, slept, ts in self.store.delays(
                execution_arn
            )
        ]

    def redrive_execution(self, execution_arn: str) -> dict[str, Any]:
        """Restart a FAILED/ABORTED/TIMED_OUT execution at the state it stopped in, with that
        state's input; earlier states are not re-run, retry counters start from zero."""
        self._reap(self._row(execution_arn))
        now = self._now()
        with self.store.transaction():
            row = self._row(execution_arn)
            status = ExecutionStatus(row.status)
            if not status.redrivable:
                raise ExecutionNotRedrivable(
                    f"execution {row.name!r} is {status.value} and cannot be redriven",
                    field="execution_arn",
                )
            if redrive_period_over(row.stop_date, now):
                raise ExecutionNotRedrivable(
                    f"execution {row.name!r} stopped more than 14 days ago: "
                    + REDRIVABLE_PERIOD_EXCEEDED,
                    field="execution_arn",
                )
            if not self.store.claim(row.arn, self._owner_values(now), expected_owner=None):
                raise ExecutionNotRedrivable(
                    f"execution {row.name!r} is being redriven by another process",
                    field="execution_arn",
                )
            self.store.update_execution(
                row.arn,
                {
                    "status": ExecutionStatus.RUNNING.value,
                    "redrive_count": row.redrive_count + 1,
                    "redrive_date": now,
                    "stop_date": None,
                    "output": None,
                    "error": None,
                    "cause": None,
                },
            )
        self._run(self._row(execution_arn)).redrive()
        return self.describe_execution(execution_arn)

    def stop_execution(
        self, execution_arn: str, error: str | None = None, cause: str | None = None
    ) -> dict[str, Any]:
        """Abort a running execution. One driven right now by another live thread or process
        stops at its next checkpoint (a handler that is running is not interrupted)."""
        row = self._reap(self._row(execution_arn))
        if row.status == ExecutionStatus.RUNNING:
            with self.store.transaction():
                claimed = self.store.claim(
                    row.arn, self._owner_values(self._now()), expected_owner=None
                )
                if not claimed:
                    self.store.update_execution(
                        row.arn, {"abort_requested": 1, "abort_error": error, "abort_cause": cause}
                    )
            if claimed:
                self._run(self._row(execution_arn)).abort(error, cause)
        return self.describe_execution(execution_arn)

    # --- callbacks ---------------------------------------------------------------------

    def send_task_success(self, task_token: str, output: str | Any) -> dict[str, Any]:
        """Complete a ``.waitForTaskToken`` task and run the execution on from it."""
        if isinstance(output, str):
            try:
                json.loads(output)
            except ValueError as exc:
                raise InvalidOutput(f"task output is not JSON: {exc}", field="output") from None
            output_json = output
        else:
            output_json = dumps(output)
        _check_api_payload(output_json, "task output", InvalidOutput, "output")
        return self._answer(
            task_token, {"status": TokenStatus.SUCCEEDED.value, "output": output_json}
        )

    def send_task_failure(
        self, task_token: str, error: str | None = None, cause: str | None = None
    ) -> dict[str, Any]:
        """Fail a ``.waitForTaskToken`` task with ``error`` (matched by Retry/Catch)."""
        return self._answer(
            task_token,
            {"status": TokenStatus.FAILED.value, "error": error or "", "cause": cause or ""},
        )

    def send_task_heartbeat(self, task_token: str) -> dict[str, Any]:
        token = self._token(task_token)
        self._fire_timeouts([token])
        with self.store.transaction():
            token = self._token(task_token)
            if token.status != TokenStatus.WAITING:
                raise TaskTimedOut(
                    f"task {token.state!r} no longer waits ({token.status})", field="task_token"
                )
            if token.heartbeat_seconds is not None:
                self.store.update_token(
                    task_token,
                    {"heartbeat_deadline": self._now() + token.heartbeat_seconds},
                    expected_status=TokenStatus.WAITING,
                )
        return {}

    def list_waiting_tasks(self, execution_arn: str | None = None) -> list[WaitingTask]:
        """Tasks waiting for a callback (e.g. reconciliation waiting for an operator)."""
        return [
            WaitingTask(
                t.token,
                t.execution_arn,
                t.state,
                datetime.fromtimestamp(t.created, UTC),
                _dt(t.deadline),
                _dt(t.heartbeat_deadline),
            )
            for t in self.store.tokens(
                execution_arn=execution_arn, status=TokenStatus.WAITING.value
            )
        ]

    def describe_task(self, task_token: str) -> dict[str, Any]:
        """A callback task's token, whatever it became: ``executionArn``, ``stateName``,
        ``status`` (``WAITING``, ``SUCCEEDED``…). Lets a caller whose callback arrived
        second tell "answered already" from "timed out"."""
        token = self._token(task_token)
        return {
            "taskToken": token.token,
            "executionArn": token.execution_arn,
            "stateName": token.state,
            "status": token.status,
        }

    def run_due_timers(self) -> list[str]:
        """Fail callback tasks whose ``TimeoutSeconds``/``HeartbeatSeconds`` passed (with
        ``States.Timeout``/``States.HeartbeatTimeout``) and run their executions on. Returns
        the affected execution ARNs. AWS fires these on its own; here a caller (the CLI, a
        loop) decides when."""
        return self._fire_timeouts(self.store.tokens(status=TokenStatus.WAITING.value))

    def _token(self, task_token: str) -> TokenRow:
        if not isinstance(task_token, str) or not TOKEN_FORMAT.match(task_token):
            raise InvalidToken("invalid task token", field="task_token")
        token = self.store.get_token(task_token)
        if token is None:
            raise TaskDoesNotExist("no task with this token", field="task_token")
        return token

    def _answer(self, task_token: str, values: dict[str, Any]) -> dict[str, Any]:
        token = self._token(task_token)
        if self._fire_timeouts([token]):
            raise TaskTimedOut(
                f"task {token.state!r} timed out before the callback", field="task_token"
            )
        now = self._now()
        with self.store.transaction():
            token = self._token(task_token)
            if token.status != TokenStatus.WAITING:
                raise TaskTimedOut(
                    f"task {token.state!r} no longer waits ({token.status})", field="task_token"
                )
            self.store.update_token(
                task_token, {**values, "closed": now}, expected_status=TokenStatus.WAITING
            )
            claimed = self.store.claim(
                token.execution_arn, self._owner_values(now), expected_owner=None
            )
        if claimed:
            answered = self.store.get_token(task_token)
            assert answered is not None
            self._run(self._row(token.execution_arn)).resume(answered)
        return self.describe_execution(token.execution_arn)

    def _fire_timeouts(self, tokens: list[TokenRow]) -> list[str]:
        fired = []
        now = self._now()
        for token in tokens:
            if token.status != TokenStatus.WAITING:
                continue
            if token.heartbeat_deadline is not None and now > token.heartbeat_deadline:
                error, cause = (
                    STATES_HEARTBEAT_TIMEOUT,
                    f"No heartbeat within {token.heartbeat_seconds} s",
                )
            elif token.deadline is not None and now > token.deadline:
                error, cause = (
                    STATES_TIMEOUT,
                    f"No callback within {token.deadline - token.created:g} s",
                )
            else:
                continue
            with self.store.transaction():
                changed = self.store.update_token(
                    token.token,
                    {
                        "status": TokenStatus.TIMED_OUT.value,
                        "error": error,
                        "cause": cause,
                        "closed": now,
                    },
                    expected_status=TokenStatus.WAITING,
                )
                claimed = changed and self.store.claim(
                    token.execution_arn, self._owner_values(now), expected_owner=None
                )
            if changed:
                fired.append(token.execution_arn)
            if claimed:
                answered = self.store.get_token(token.token)
                assert answered is not None
                self._run(self._row(token.execution_arn)).resume(answered)
        return fired

    # --- interruption ------------------------------------------------------------------

    def recover_interrupted(self) -> list[str]:
        """Mark RUNNING executions whose owning process died as ABORTED (error
        ``Stepsaga.Interrupted``), so they can be redriven. Returns their ARNs."""
        recovered = []
        for row in self.store.running_with_owner():
            if self._reap(row).status != row.status:
                recovered.append(row.arn)
        return recovered

    def _reap(self, row: ExecutionRow) -> ExecutionRow:
        if row.status != ExecutionStatus.RUNNING or row.owner is None or row.owner == self.owner.id:
            return row
        now = self._now()
        if owner_alive(
            pid=row.owner_pid,
            host=row.owner_host,
            started=row.owner_started,
            heartbeat=row.heartbeat,
            now=now,
            stale_after=self.stale_after,
        ):
            return row
        with self.store.transaction():
            claimed = self.store.claim(row.arn, self._owner_values(now), expected_owner=row.owner)
        if claimed:
            last = _dt(row.heartbeat)
            self._run(self._row(row.arn)).abort(
                INTERRUPTED,
                f"the process that ran this execution (pid {row.owner_pid} on {row.owner_host}) "
                f"stopped while in state {row.cursor_state!r}; last heartbeat "
                f"{last.isoformat() if last else 'never'}. "
                "Redrive it to continue from that state.",
            )
        return self._row(row.arn)

    # --- helpers ---------------------------------------------------------------------------

    def _owner_values(self, now: float) -> dict[str, Any]:
        return {
            "owner": self.owner.id,
            "owner_pid": self.owner.pid,
            "owner_host": self.owner.host,
            "owner_started": self.owner.started,
            "heartbeat": now,
        }

    def _row(self, execution_arn: str) -> ExecutionRow:
        row = self.store.get_execution(execution_arn)
        if row is None:
            raise ExecutionDoesNotExist(f"no execution {execution_arn}", field="execution_arn")
        return row

    def _run(self, row: ExecutionRow) -> Run:
        from stepsaga.engine._runner import Run  # the interpreter: only for what runs

        machine = self.store.get_state_machine(row.state_machine_arn)
        machine_name = (
            machine[1] if machine is not None else row.state_machine_arn.rsplit(":", 1)[-1]
        )
        return Run(self.services, row, self._definition(row.digest), machine_name)
