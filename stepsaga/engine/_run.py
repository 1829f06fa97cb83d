"""What every part of the interpreter's :class:`~stepsaga.engine._runner.Run` shares: the
execution's state, input and output processing, time, events and commits."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from stepsaga._util.timestamps import iso_z_millis
from stepsaga.engine import _history as history
from stepsaga.engine._definition import (
    IO,
    Definition,
    Machine,
    MapState,
    ParallelState,
    PassState,
    State,
    TaskState,
    WaitState,
)
from stepsaga.engine._errors import (
    STATES_RESULT_PATH_MATCH_FAILURE,
    QueryEvaluationError,
    StatesError,
    describe,
    runtime_error,
)
from stepsaga.engine._history import EventType
from stepsaga.engine._jsonata_eval import Expression
from stepsaga.engine._mockconfig import MockTestCase
from stepsaga.engine._models import (
    Delay,
    DelayChosen,
    DelayKind,
    ExecutionStatus,
    HistoryRecorded,
    TokenStatus,
)
from stepsaga.engine._paths import Path, PathNotFoundError
from stepsaga.engine._payload import Env, document
from stepsaga.engine._services import Services, dumps, role_arn
from stepsaga.engine._store import ExecutionRow, FrameRow, TokenRow
from stepsaga.engine._variables import Assign, Scope

# --- transitions -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Next:
    state: str
    data: Any


@dataclass(frozen=True)
class _Succeeded:
    output: Any


@dataclass(frozen=True)
class _Failed:
    error: str
    cause: str
    terminal: bool = False  # States.Runtime: an enclosing state can neither retry nor catch it


class _WaitingForCallback:
    pass


_WAITING = _WaitingForCallback()
Transition = _Next | _Succeeded | _Failed | _WaitingForCallback


@dataclass(frozen=True)
class _Outcome:
    """One attempt's result (the integration output, the branch outputs) or its error."""

    result: Any = None
    error: StatesError | None = None


class _StoppedError(Exception):
    """``stop_execution`` asked the owner to abort; the abort is already written."""


class _CancelledError(Exception):
    """A sibling branch or iteration failed: this one stops at its next checkpoint."""


class _BranchError(StatesError):
    """A branch's error raised by its Parallel/Map state; a terminal one already names the
    state inside the branch where it happened, so its cause is kept as is."""


class _Mode(Enum):
    """How a frame's first state is entered."""

    FRESH = "fresh"  # entered as usual: a Parallel/Map state starts all its branches anew
    REDRIVE = "redrive"  # re-entered: succeeded branches keep their output, others resume
    CONTINUE = "continue"  # not re-entered: a callback answered a task waiting inside it


#: Joins the parts of a frame path: ``<parent path>SEP<state name>SEP<index>``.
SEP = "\x1f"
_SUCCEEDED, _FAILED, _ABORTED, _RUNNING = "SUCCEEDED", "FAILED", "ABORTED", "RUNNING"
_WAITING_STATUS = "WAITING"  # a branch whose task (or whose own branches) wait for callbacks
_ABORTED_EVENT = {
    "Task": EventType.TASK_STATE_ABORTED,
    "Wait": EventType.WAIT_STATE_ABORTED,
    "Parallel": EventType.PARALLEL_STATE_ABORTED,
    "Map": EventType.MAP_STATE_ABORTED,
}


class _Frame:
    """One thread of control: the execution's top level (``path`` ``""``), or one
    ``Parallel`` branch or ``Map`` iteration. Each has its own cursor (the state it is in or
    is about to enter, with that state's input) and its own ``previousEventId`` chain."""

    def __init__(
        self,
        machine: Machine,
        path: str,
        *,
        depth: int = 0,
        last_event: int = 0,
        cancels: tuple[threading.Event, ...] = (),
        iteration: tuple[str, int] | None = None,
    ) -> None:
        self.machine = machine
        self.path = path
        self.depth = depth
        self.last_event = last_event
        self.cancels = cancels  # set when a sibling here or in an enclosing state failed
        self.iteration = iteration  # (Map state name, index) when this is a Map iteration
        self.state: str | None = None
        self.input: Any = None
        self.input_json: str | None = None
        self.entered = 0.0
        self.event = 0
        self.inside = False  # entered and not exited: an abort reports <Type>StateAborted
        self.retry_counts: list[int] = []
        self.token: str | None = None  # the callback its task waits for
        self.scope = Scope.top()  # the variables it sees (Assign)
        self.assigned: Scope | None = None  # its scope once the next state is entered

    def cancelled(self) -> bool:
        return any(cancel.is_set() for cancel in self.cancels)

    def row(self, status: str, output: str | None = None) -> FrameRow:
        return FrameRow(
            self.path,
            status,
            output,
            self.state,
            self.input_json,
            self.token,
            self.scope.own_json(),
        )


def iso(ts: float) -> str:
    """Context-object timestamps: ISO 8601, milliseconds, ``Z``."""
    return iso_z_millis(datetime.fromtimestamp(ts, UTC))


class RunBase:
    """One execution's state, read and written by every part of ``Run``."""

    if TYPE_CHECKING:  # what the lower parts call back into (Run and RunGroups define them)

        def _drive(
            self, f: _Frame, transition: Transition, mode: _Mode = _Mode.FRESH
        ) -> Transition: ...

        def _exit(
            self, f: _Frame, state: State, output: Any, assigned: dict[str, Any] | None = None
        ) -> None: ...

        def _after(
            self,
            f: _Frame,
            state: TaskState | PassState | WaitState | ParallelState | MapState,
            output: Any,
            assigned: dict[str, Any] | None = None,
        ) -> Transition: ...

        def _env(
            self,
            f: _Frame,
            data: Any,
            *,
            token: str | None = None,
            item: tuple[int, Any] | None = None,
            **states: Any,
        ) -> Env: ...

        @staticmethod
        def _assigned(assign: Assign | None, env: Env) -> dict[str, Any] | None: ...

        def _assign_from(
            self, assign: Assign | None, f: _Frame, data: Any
        ) -> dict[str, Any] | None: ...

        def _abort_frame(self, f: _Frame) -> None: ...

    def __init__(
        self, services: Services, row: ExecutionRow, definition: Definition, state_machine_name: str
    ) -> None:
        self.s = services
        self.store = services.store
        self.arn = row.arn
        self.row = row
        self.definition = definition
        self.state_machine_name = state_machine_name
        self.input = json.loads(row.input)
        self.next_event_id = row.next_event_id
        self.test_case = (
            MockTestCase.from_json(json.loads(row.test_case)) if row.test_case else None
        )
        self.mock_counts: dict[str, int] = json.loads(row.mock_counts) if row.mock_counts else {}
        root = _Frame(definition.machine, "", last_event=row.next_event_id - 1)
        root.state = row.cursor_state
        root.input = json.loads(row.cursor_input) if row.cursor_input is not None else None
        root.input_json = row.cursor_input
        root.entered = row.cursor_entered or row.start_date
        root.event = row.cursor_event or 0
        root.retry_counts = json.loads(row.retry_counts) if row.retry_counts else []
        root.inside = row.cursor_state is not None
        root.scope = Scope.top(json.loads(row.variables) if row.variables else None)
        self.root = root
        self.redrive_count = row.redrive_count
        self.redrive_date = row.redrive_date
        self.lock = threading.RLock()  # events, cursors and the store, across branch threads
        self.live: dict[str, _Frame] = {"": root}
        self.finished = False
        self.released = False  # a top-level task released the execution to wait
        self.answered: tuple[str, TokenRow] | None = None  # (frame path, token) to continue
        self.pending: list[tuple[int, str, int, float, str | None]] = []
        self.pending_delays: list[tuple[Any, ...]] = []
        self.frame_clears: list[str] = []
        self.frame_writes: dict[str, FrameRow] = {}
        self._context_base = {
            "Execution": {
                "Id": row.arn,
                "Input": self.input,
                "Name": row.name,
                "RoleArn": role_arn(services.account),
                "StartTime": iso(row.start_date),
                "RedriveCount": row.redrive_count,
            },
            "StateMachine": {"Id": row.state_machine_arn, "Name": state_machine_name},
        }
        if row.redrive_date is not None:
            self._context_base["Execution"]["RedriveTime"] = iso(row.redrive_date)

    # --- input and output processing ----------------------------------------------------

    def _context(
        self, f: _Frame, token: str | None = None, item: tuple[int, Any] | None = None
    ) -> dict[str, Any]:
        context = dict(self._context_base)
        context["State"] = {
            "EnteredTime": iso(f.entered),
            "Name": f.state,
            "RetryCount": sum(f.retry_counts),
        }
        if token is not None:
            context["Task"] = {"Token": token}
        if item is not None:  # ItemSelector (and the legacy Parameters) of a Map state
            context["Map"] = {"Item": {"Index": item[0], "Value": item[1]}}
        return context

    def _input(self, io: IO, data: Any) -> Any:
        return {} if io.input_path is None else self._read(io.input_path, data, "InputPath")

    def _output(self, io: IO, data: Any) -> Any:
        return {} if io.output_path is None else self._read(io.output_path, data, "OutputPath")

    def _read(self, path: Path, data: Any, field: str) -> Any:
        try:
            return path.get(data)
        except PathNotFoundError:
            raise runtime_error(
                f"Invalid path '{path.text}' : The {field} could not be found in the input "
                f"'{describe(data)}'"
            ) from None

    def _read_in(self, f: _Frame, path: Path, data: Any, field: str) -> Any:
        """``_read`` from the document ``path`` names: ``data``, ``$$`` or a variable."""
        source = document(path, data, self._context(f) if path.context else None, f.scope.visible())
        return self._read(path, source, field)

    def _result_path(self, path: Path | None, data: Any, result: Any) -> Any:
        if path is None:
            return data
        try:
            return path.set(data, result)
        except PathNotFoundError:
            raise StatesError(
                STATES_RESULT_PATH_MATCH_FAILURE,
                f'Unable to apply ResultPath "{path.text}" to input "{describe(data)}"',
            ) from None

    def _runtime_cause(self, f: _Frame, exc: StatesError) -> str:
        if isinstance(exc, _BranchError):
            return exc.cause
        if not exc.terminal and not isinstance(exc, QueryEvaluationError):
            return exc.cause
        return (
            f"An error occurred while executing the state '{f.state}' "
            f"(entered at the event id #{f.event}). {exc.cause}"
        )

    # --- time ------------------------------------------------------------------------------

    def _now(self) -> float:
        return self.s.clock.now().timestamp()

    def _pause(
        self,
        f: _Frame,
        state: str,
        kind: DelayKind,
        event_id: int,
        attempt: int,
        error: str | None,
        seconds: float,
    ) -> None:
        slept = seconds * self.s.time_scale
        now = self._now()
        with self.lock:
            self.pending_delays.append(
                (self.arn, event_id, kind.value, state, attempt, error, seconds, slept, now)
            )
            if self.s.notify is not None:
                delay = Delay(
                    self.arn,
                    event_id,
                    state,
                    kind,
                    attempt,
                    error,
                    seconds,
                    slept,
                    datetime.fromtimestamp(now, UTC),
                )
                self.s.notify(DelayChosen(delay))
        if slept > 0:
            self._commit()
            self.s.sleeper(slept)
        self.s.scheduler.checkpoint()
        if f.cancelled():  # a sibling failed while this branch waited
            raise _CancelledError

    # --- events and commits ----------------------------------------------------------------

    def _emit(self, f: _Frame, event_type: EventType, details: dict[str, Any] | None) -> int:
        """Buffer one event, chained to ``f``'s previous one."""
        with self.lock:
            if self.finished:  # another branch ended the execution (stopped, lost it)
                raise _StoppedError
            event_id = self.next_event_id
            self.next_event_id += 1
            previous, f.last_event = f.last_event, event_id
            now = self._now()
            self.pending.append(
                (
                    event_id,
                    event_type.value,
                    previous,
                    now,
                    None if details is None else dumps(details),
                )
            )
            if self.s.notify is not None:
                self.s.notify(
                    HistoryRecorded(
                        self.arn,
                        history.build(event_id, previous, event_type.value, now, details),
                    )
                )
        return event_id

    def _write_abort(self, error: str | None, cause: str | None) -> None:
        """Under the lock: abort events for every live branch (innermost first), the top
        level's state, then ``ExecutionAborted``."""
        for frame in sorted(self.live.values(), key=lambda fr: -fr.depth):
            self._abort_frame(frame)
        details: dict[str, Any] = {}
        if error is not None:
            details["error"] = error
        if cause is not None:
            details["cause"] = cause
        self._emit(self.root, EventType.EXECUTION_ABORTED, details)
        self._final_status = (ExecutionStatus.ABORTED, error, cause)

    def _commit(self, **options: Any) -> None:
        """Write buffered events and the cursor in one transaction (see :meth:`_write`)."""
        with self.lock:
            if self.finished:
                raise _StoppedError
            with self.store.transaction():
                stopped = self._write(**options)
            self._written(stopped, final=bool(options.get("final")))

    def _written(self, stopped: bool, *, final: bool = False) -> None:
        self.pending = []
        self.pending_delays = []
        self.frame_clears = []
        self.frame_writes = {}
        if final or stopped:
            self.finished = True
        if stopped:
            raise _StoppedError

    def _write(
        self,
        *,
        final: bool = False,
        status: ExecutionStatus | None = None,
        output: str | None = None,
        error: str | None = None,
        cause: str | None = None,
        release: bool = False,
        token: tuple[str, str, float, int | None, int | None] | None = None,
    ) -> bool:
        """Inside a transaction: write events, delays, cursors (and a new token), conditional
        on still owning the execution. ``True`` when a pending stop request was honoured."""
        now = self._now()
        stopped = False
        if not final:
            request = self.store.abort_request(self.arn)
            if request is not None:
                self._write_abort(*request)
                final, stopped, token = True, True, None
        root = self.root
        values: dict[str, Any] = {
            "next_event_id": self.next_event_id,
            "cursor_state": root.state,
            "cursor_input": root.input_json,
            "cursor_entered": root.entered,
            "cursor_event": root.event,
            "retry_counts": dumps(root.retry_counts),
            "variables": root.scope.own_json(),
            "mock_counts": dumps(self.mock_counts) if self.mock_counts else None,
            "heartbeat": now,
        }
        if final:
            if status is None:
                status, error, cause = self._final_status
            if status is ExecutionStatus.SUCCEEDED:
                values["cursor_input"] = None  # only a redrive reads it; none follows success
            values.update(
                status=status.value,
                output=output,
                error=error,
                cause=cause,
                stop_date=now,
                abort_requested=0,
                abort_error=None,
                abort_cause=None,
            )
        if final or release:
            values.update(owner=None, owner_pid=None, owner_host=None, owner_started=None)
        self.store.update_execution(self.arn, values, owner=self.s.owner.id)
        if self.pending:
            self.store.insert_events(self.arn, self.pending)
        if self.pending_delays:
            self.store.insert_delays(self.pending_delays)
        for prefix in self.frame_clears:
            self.store.delete_frames(self.arn, prefix)
        if self.frame_writes:
            self.store.put_frames(self.arn, self.frame_writes.values())
        if token is not None:
            value, state, created, timeout, heartbeat = token
            self.store.insert_token(
                {
                    "token": value,
                    "execution_arn": self.arn,
                    "state": state,
                    "status": TokenStatus.WAITING.value,
                    "created": created,
                    "deadline": created + timeout if timeout is not None else None,
                    "heartbeat_seconds": heartbeat,
                    "heartbeat_deadline": created + heartbeat if heartbeat is not None else None,
                }
            )
        if final:
            self.store.close_tokens(self.arn, TokenStatus.CANCELLED.value, now)
        return stopped

    _final_status: tuple[ExecutionStatus, str | None, str | None] = (
        ExecutionStatus.ABORTED,
        None,
        None,
    )


def _whole(expression: Expression, env: Env, *, minimum: int) -> int:
    """A JSONata field that must give a whole number (``Seconds``, ``TimeoutSeconds``…)."""
    value = expression.evaluate(env)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise expression.error(f"returned {describe(value)}, not an integer >= {minimum}")
    return value
