"""The interpreter: drives one execution from its cursor until it ends or waits.

A :class:`Run` is built from the execution's row each time a process takes the execution
over (start, redrive, callback, timeout, abort). It keeps the cursor (state, that state's raw
input, retry counters) and buffers history events; it commits them (with the cursor and the
owner's heartbeat) *before* every handler invocation and every sleep, and when the execution
ends or starts waiting for a callback. Every commit is conditional on still owning the
execution, so two processes never drive it at once.

Workflow variables (``Assign``) live in each frame's :class:`~stepsaga.engine._variables.Scope`
and are committed with its cursor, so a redrive or a callback continues with them.

``Parallel`` branches and ``Map`` iterations (up to ``MaxConcurrency``) start together, as on
AWS, each a :class:`_Frame` with a cursor of its own (persisted in the ``frames`` table at
every commit, so a redrive re-runs only the branches and iterations that did not succeed,
each from the state it stopped in). The :class:`~stepsaga.engine._scheduler.Scheduler` runs
them (real threads, or one seeded interleaving in tests); it may switch at each checkpoint:
before a state is entered, before a Task is scheduled, after its handler returns, after a
delay. One lock serializes events and commits: handlers run concurrently, the store never
does. The first branch or iteration to fail cancels its siblings and fails the state with
its error; each sibling stops at its next checkpoint — a handler already running finishes
(AWS: "invoked Lambda functions continue to run") and its result is discarded
(``TaskStateAborted``), a state not yet entered never is.
A branch whose ``.waitForTaskToken`` task waits stops there; once no branch runs, the
execution is released, and each answer continues only the branch that waited for it
(:class:`_Mode`), the others keeping their outputs or their wait.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from stepsaga._util.timestamps import iso_z_millis
from stepsaga.engine import _history as history
from stepsaga.engine import _lambda_invoke as lambda_invoke
from stepsaga.engine._definition import (
    INLINE_MAP_CONCURRENCY,
    IO,
    ChoiceState,
    Definition,
    FailState,
    Machine,
    MapState,
    ParallelState,
    PassState,
    State,
    SucceedState,
    TaskState,
    WaitState,
)
from stepsaga.engine._errors import (
    INTERRUPTED,
    STATES_HEARTBEAT_TIMEOUT,
    STATES_NO_CHOICE_MATCHED,
    STATES_RESULT_PATH_MATCH_FAILURE,
    STATES_TIMEOUT,
    QueryEvaluationError,
    StatesError,
    describe,
    runtime_error,
)
from stepsaga.engine._history import EventType
from stepsaga.engine._intrinsics import Call
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
from stepsaga.engine._quotas import check_payload
from stepsaga.engine._retry import decide, error_matches
from stepsaga.engine._services import TOKEN_PREFIX, Services, dumps, role_arn
from stepsaga.engine._store import ExecutionRow, FrameRow, LostOwnershipError, TokenRow
from stepsaga.engine._variables import Assign, Scope, assigned_details

_FLUSH_EVERY = 256
log = logging.getLogger(__name__)


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


class Run:
    """One process driving one execution (see the module docstring)."""

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

    # --- entry points --------------------------------------------------------------

    def start(self) -> None:
        self._guard(
            lambda: self._finish(
                self._drive(self.root, _Next(self.definition.start_at, self.input))
            )
        )

    def redrive(self) -> None:
        """Re-enter the state the execution stopped in, with that state's input (the first
        state with the execution input when it stopped before entering any). A Parallel or
        Map state there keeps its succeeded branches and iterations and re-runs the rest."""

        def go() -> None:
            self._emit(
                self.root, EventType.EXECUTION_REDRIVEN, {"redriveCount": self.redrive_count}
            )
            if self.root.state is None:
                first = _Next(self.definition.start_at, self.input)
            else:
                first = _Next(self.root.state, self.root.input)
            self._finish(self._drive(self.root, first, _Mode.REDRIVE))

        self._guard(go)

    def resume(self, token: TokenRow) -> None:
        """Continue a ``.waitForTaskToken`` task whose token was answered or timed out; one
        inside a branch continues there, the branches still waiting keep waiting."""
        self._guard(lambda: self._finish(self._continue(token)))

    def _continue(self, token: TokenRow) -> Transition:
        frame = self.store.frame_for_token(self.arn, token.token)
        self.answered = ("" if frame is None else frame.path, token)
        root = self.root
        return self._drive(root, _Next(str(root.state), root.input), _Mode.CONTINUE)

    def abort(self, error: str | None, cause: str | None) -> None:
        """Write ``…StateAborted`` + ``ExecutionAborted`` and close as ABORTED."""
        with self.lock:
            self._write_abort(error, cause)
            self._commit(final=True)

    # --- the loop ----------------------------------------------------------------------

    def _guard(self, body: Callable[[], None]) -> None:
        try:
            body()
        except (_StoppedError, LostOwnershipError):
            return
        except BaseException as exc:
            # Ctrl-C, SystemExit or an engine bug: leave the execution visibly interrupted
            # (ABORTED, redrivable) instead of RUNNING with a live owner; then re-raise.
            try:
                self.abort(
                    INTERRUPTED, f"{type(exc).__name__}: {exc} (in state {self.root.state!r})"
                )
            except Exception:  # the store itself may be what failed; liveness checks remain
                log.warning("could not record the interruption of %s", self.arn, exc_info=True)
            raise

    def _finish(self, transition: Transition) -> None:
        """End the execution on the top level's last transition (or leave it waiting)."""
        while isinstance(transition, _WaitingForCallback) and not self.released:
            answered = self._release_unless_answered()  # branches wait for callbacks
            if answered is None:
                return
            transition = self._continue(answered)
        if isinstance(transition, _Succeeded):
            output_json = dumps(transition.output)
            self._emit(
                self.root,
                EventType.EXECUTION_SUCCEEDED,
                {"output": output_json, "outputDetails": {"truncated": False}},
            )
            self._commit(final=True, status=ExecutionStatus.SUCCEEDED, output=output_json)
        elif isinstance(transition, _Failed):
            self._emit(
                self.root,
                EventType.EXECUTION_FAILED,
                {"error": transition.error, "cause": transition.cause},
            )
            self._commit(
                final=True,
                status=ExecutionStatus.FAILED,
                error=transition.error,
                cause=transition.cause,
            )

    def _drive(self, f: _Frame, transition: Transition, mode: _Mode = _Mode.FRESH) -> Transition:
        """Run ``f`` from ``transition`` until it ends or waits; ``mode`` says how its first
        state is entered (see :class:`_Mode`), every later one is entered afresh."""
        first = True
        while isinstance(transition, _Next):
            state = f.machine.states[transition.state]
            if not first:  # the first is entered as the branch starts: AWS starts them together
                self.s.scheduler.checkpoint()
            if mode is _Mode.CONTINUE:  # still inside since before the callback
                f.inside = True
                if len(f.retry_counts) != len(getattr(state, "retriers", ())):
                    f.retry_counts = [0] * len(getattr(state, "retriers", ()))
            else:
                try:
                    self._enter(f, state, transition.data, stoppable=not first)
                except StatesError as exc:  # its input is over the quota: never entered
                    return _Failed(exc.error, exc.cause)
            first = False
            transition = self._execute(f, state, mode)
            mode = _Mode.FRESH
        return transition

    def _enter(
        self, state_frame: _Frame, state: State, data: Any, *, stoppable: bool = True
    ) -> None:
        """Enter ``state``; unless it is where a branch starts (``stoppable`` false), not
        when a sibling failed (the branch stops between states)."""
        f = state_frame
        if len(self.pending) >= _FLUSH_EVERY:
            self._commit()
        data_json = dumps(data)
        check_payload(data_json, f"The state '{state.name}' was given an input")
        with self.lock:
            f.state, f.input, f.input_json = state.name, data, data_json
            if f.assigned is not None:  # the previous state's Assign, with this cursor
                f.scope, f.assigned = f.assigned, None
            f.entered = self._now()
            f.inside = False
            f.retry_counts = [0] * len(getattr(state, "retriers", ()))
            if f.path:
                self.frame_writes[f.path] = f.row(_RUNNING)
            if stoppable and f.cancelled():  # the cursor says where a redrive picks it up
                raise _CancelledError
            f.event = self._emit(
                f, history.entered_type(state.type), history.state_entered(state.name, data_json)
            )
            f.inside = True

    def _execute(self, f: _Frame, state: State, mode: _Mode = _Mode.FRESH) -> Transition:
        try:
            if isinstance(state, TaskState):
                if mode is _Mode.CONTINUE:
                    assert self.answered is not None
                    assert self.answered[0] == f.path
                    outcome = self._callback_outcome(f, state, self.answered[1])
                    f.token = None
                    return self._run_task(f, state, resumed=outcome)
                return self._run_task(f, state)
            if isinstance(state, PassState):
                return self._run_pass(f, state)
            if isinstance(state, ChoiceState):
                return self._run_choice(f, state)
            if isinstance(state, WaitState):
                return self._run_wait(f, state)
            if isinstance(state, ParallelState):
                return self._run_parallel(f, state, mode)
            if isinstance(state, MapState):
                return self._run_map(f, state, mode)
            if isinstance(state, SucceedState):
                if state.output is not None:
                    output = state.output.evaluate(self._env(f, f.input))
                else:
                    output = self._output(state.io, self._input(state.io, f.input))
                self._exit(f, state, output)
                return _Succeeded(output)
            return self._run_fail(f, state)
        except StatesError as exc:  # terminal errors of states without Retry/Catch
            if isinstance(exc, QueryEvaluationError):
                return _Failed(exc.error, self._decorated(f, exc).cause)
            return _Failed(exc.error, self._runtime_cause(f, exc), terminal=exc.terminal)

    def _exit(
        self, f: _Frame, state: State, output: Any, assigned: dict[str, Any] | None = None
    ) -> None:
        """``…StateExited``. The variables ``Assign`` computed take effect with the next
        state's cursor (:meth:`_enter`), so a commit in between never stores them with the
        cursor of the state that assigned them (a redrive would assign them twice)."""
        output_json = dumps(output)
        check_payload(output_json, f"The state/task '{state.name}' returned a result")
        details = history.state_exited(state.name, output_json)
        if assigned:
            scope = f.scope.assigned(assigned)  # refuses an enclosing scope's variable
            check_payload(dumps(assigned), f"The Assign of the state '{state.name}' gave variables")
            details.update(assigned_details(assigned))
        with self.lock:
            self._emit(f, history.exited_type(state.type), details)
            f.inside = False
            if assigned:
                f.assigned = scope

    def _after(
        self,
        f: _Frame,
        state: TaskState | PassState | WaitState | ParallelState | MapState,
        output: Any,
        assigned: dict[str, Any] | None = None,
    ) -> Transition:
        self._exit(f, state, output, assigned)
        return _Next(state.next, output) if state.next is not None else _Succeeded(output)

    def _env(
        self,
        f: _Frame,
        data: Any,
        *,
        token: str | None = None,
        item: tuple[int, Any] | None = None,
        **states: Any,
    ) -> Env:
        """What a template, Assign or Condition of ``f``'s state reads; ``states`` are
        JSONata's ``result``/``error_output``."""
        return Env(data, self._context(f, token, item), self.s.rng, f.scope.visible(), **states)

    @staticmethod
    def _assigned(assign: Assign | None, env: Env) -> dict[str, Any] | None:
        return None if assign is None else assign.evaluate(env)

    def _assign_from(self, assign: Assign | None, f: _Frame, data: Any) -> dict[str, Any] | None:
        """JSONPath ``Assign`` with ``data`` as ``$`` (the context is built only if needed)."""
        return None if assign is None else assign.evaluate(self._env(f, data))

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

    # --- Pass, Choice, Wait, Fail --------------------------------------------------------

    def _run_pass(self, f: _Frame, state: PassState) -> Transition:
        data = f.input
        if state.jsonata:
            env = self._env(f, data)
            output = data if state.output is None else state.output.evaluate(env)
            return self._after(f, state, output, self._assigned(state.assign, env))
        effective = self._input(state.io, data)
        if state.parameters is not None:
            result = state.parameters.evaluate(self._env(f, effective))
        elif state.has_result:
            result = state.result
        else:
            result = effective
        assigned = self._assign_from(state.assign, f, result)
        return self._after(
            f,
            state,
            self._output(state.io, self._result_path(state.result_path, data, result)),
            assigned,
        )

    def _run_choice(self, f: _Frame, state: ChoiceState) -> Transition:
        """The first matching rule's ``Next`` (with that rule's ``Assign``/``Output``), else
        ``Default`` with the state's own ``Assign``/``Output``."""
        effective = self._input(state.io, f.input)
        env = self._env(f, effective)
        matched = next((i for i, (test, _) in enumerate(state.choices) if test(env)), None)
        if matched is None:
            target, assign, template = state.default, state.assign, state.output
        else:
            target = state.choices[matched][1]
            assign, template = state.rule_effects[matched] if state.rule_effects else (None, None)
        if target is None:
            return _Failed(STATES_NO_CHOICE_MATCHED, f"No Matches! (state '{state.name}')")
        if state.jsonata:
            output = effective if template is None else template.evaluate(env)
        else:
            output = self._output(state.io, effective)
        self._exit(f, state, output, self._assigned(assign, env))
        return _Next(target, output)

    def _run_wait(self, f: _Frame, state: WaitState) -> Transition:
        effective = self._input(state.io, f.input)
        env = self._env(f, effective)
        seconds: float
        if state.seconds_expr is not None:
            seconds = _whole(state.seconds_expr, env, minimum=0)
        elif state.timestamp_expr is not None:
            from stepsaga.engine._choice import parse_timestamp

            value = state.timestamp_expr.evaluate(env)
            moment = parse_timestamp(value)
            if moment is None:
                raise state.timestamp_expr.error(f"returned {describe(value)}, not a timestamp")
            seconds = max(0.0, moment.timestamp() - self._now())
        elif state.seconds is not None:
            seconds = state.seconds
        elif state.seconds_path is not None:
            value = self._read_in(f, state.seconds_path, effective, "SecondsPath")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise runtime_error(
                    f"The SecondsPath '{state.seconds_path.text}' must point to a non-negative "
                    f"integer, got {describe(value)}"
                )
            seconds = value
        else:
            from stepsaga.engine._choice import parse_timestamp

            when = state.timestamp
            if state.timestamp_path is not None:
                raw = self._read_in(f, state.timestamp_path, effective, "TimestampPath")
                when = parse_timestamp(raw)
                if when is None:
                    raise runtime_error(
                        f"The TimestampPath '{state.timestamp_path.text}' must point to an "
                        f"RFC 3339 timestamp, got {describe(raw)}"
                    )
            assert when is not None
            seconds = max(0.0, when.timestamp() - self._now())
        self._pause(f, state.name, DelayKind.WAIT, f.event, 0, None, float(seconds))
        if state.jsonata:
            output = effective if state.output is None else state.output.evaluate(env)
        else:
            output = self._output(state.io, effective)
        return self._after(f, state, output, self._assigned(state.assign, env))

    def _run_fail(self, f: _Frame, state: FailState) -> Transition:
        def text(
            value: str | None, source: Path | Call | Expression | None, field: str
        ) -> str | None:
            if source is None:
                return value
            if isinstance(source, Call | Expression):
                result = source.evaluate(self._env(f, f.input))
            else:
                result = self._read_in(f, source, f.input, field)
            if not isinstance(result, str):
                raise runtime_error(f"The {field} must resolve to a string, got {describe(result)}")
            return result

        error = text(state.error, state.error_path, "ErrorPath")
        cause = text(state.cause, state.cause_path, "CausePath")
        return _Failed(error or "", cause or "")

    # --- Retry and Catch (Task, Parallel, Map) ------------------------------------------

    def _retrying(
        self,
        f: _Frame,
        state: TaskState | ParallelState | MapState,
        attempt: Callable[[], _Outcome | None],
        first: _Outcome | None = None,
    ) -> Transition:
        """Attempt ``state`` until it succeeds, its ``Retry`` gives up (then ``Catch``), or it
        waits for a callback (``attempt`` returns ``None``)."""
        data = f.input
        outcome = first
        while True:
            if outcome is None:
                try:
                    made = attempt()
                except StatesError as exc:  # e.g. a JSONata Arguments: Retry/Catch apply
                    if exc.terminal:
                        raise
                    made = _Outcome(error=self._decorated(f, exc))
                if made is None:
                    return _WAITING
                outcome = made
            if outcome.error is None:
                try:
                    return self._succeeded(f, state, data, outcome.result)
                except StatesError as exc:
                    outcome = _Outcome(error=self._decorated(f, exc))
            error = outcome.error
            assert error is not None
            outcome = None
            if error.terminal:
                self._branches_failed(f, state, error)
                return _Failed(error.error, self._runtime_cause(f, error), terminal=True)
            decision = decide(state.retriers, f.retry_counts, error.error, self.s.rng)
            if decision.retry:
                self._pause(
                    f,
                    state.name,
                    DelayKind.RETRY,
                    f.last_event,
                    decision.attempt,
                    error.error,
                    decision.delay,
                )
                continue
            self._branches_failed(f, state, error)
            return self._catch(f, state, data, error)

    def _branches_failed(
        self, f: _Frame, state: TaskState | ParallelState | MapState, error: StatesError
    ) -> None:
        """``ParallelStateFailed``/``MapStateFailed`` when a branch's error ends the state's
        attempts: once, after the last retry, before ``Catch`` (as LocalStack, whose
        histories are snapshot-tested against AWS, writes it); a retried attempt writes none."""
        if isinstance(error, _BranchError):
            is_map = isinstance(state, MapState)
            self._emit(
                f, EventType.MAP_STATE_FAILED if is_map else EventType.PARALLEL_STATE_FAILED, None
            )

    def _decorated(self, f: _Frame, exc: StatesError) -> StatesError:
        """A JSONata evaluation error: ``EvaluationFailed`` in the history, and a cause that
        names the state, as AWS writes both; other errors are returned as they are."""
        if not isinstance(exc, QueryEvaluationError):
            return exc
        cause = self._runtime_cause(f, exc)
        self._emit(
            f,
            EventType.EVALUATION_FAILED,
            {"error": exc.error, "cause": cause, "location": exc.location, "state": f.state},
        )
        return StatesError(exc.error, cause)

    def _succeeded(
        self, f: _Frame, state: TaskState | ParallelState | MapState, data: Any, result: Any
    ) -> Transition:
        """JSONata: ``Output`` and ``Assign`` read ``$states.result``. JSONPath: ``Assign``
        reads the raw result as ``$`` (before ``ResultSelector``, as LocalStack's
        interpreter does), then ``ResultSelector`` → ``ResultPath`` → ``OutputPath``."""
        if state.jsonata:
            env = self._env(f, data, result=result)
            output = result if state.output is None else state.output.evaluate(env)
            return self._after(f, state, output, self._assigned(state.assign, env))
        assigned = self._assign_from(state.assign, f, result)
        if state.result_selector is not None:
            result = state.result_selector.evaluate(self._env(f, result))
        return self._after(
            f,
            state,
            self._output(state.io, self._result_path(state.result_path, data, result)),
            assigned,
        )

    def _catch(
        self, f: _Frame, state: TaskState | ParallelState | MapState, data: Any, error: StatesError
    ) -> Transition:
        for catcher in state.catchers:
            if error_matches(catcher.error_equals, error.error):
                error_output = {"Error": error.error, "Cause": error.cause}
                path = catcher.result_path
                assert path is None or isinstance(path, Path)
                assign = catcher.assign
                assert assign is None or isinstance(assign, Assign)
                try:
                    if state.jsonata:
                        env = self._env(f, data, error_output=error_output)
                        output = error_output
                        if catcher.output is not None:
                            output = catcher.output.evaluate(env)  # type: ignore[attr-defined]
                        assigned = self._assigned(assign, env)
                    else:
                        assigned = self._assign_from(assign, f, error_output)
                        output = self._result_path(path, data, error_output)
                    self._exit(f, state, output, assigned)
                except StatesError as exc:
                    exc = self._decorated(f, exc)
                    return _Failed(exc.error, self._runtime_cause(f, exc), terminal=exc.terminal)
                return _Next(catcher.next, output)
        return _Failed(error.error, error.cause)

    # --- Parallel and Map ----------------------------------------------------------------

    def _run_parallel(self, f: _Frame, state: ParallelState, mode: _Mode) -> Transition:
        def attempt() -> _Outcome | None:
            nonlocal mode
            effective = self._input(state.io, f.input)
            if state.parameters is not None:
                effective = state.parameters.evaluate(self._env(f, effective))
            jobs = [(branch, effective) for branch in state.branches]
            first, mode = mode, _Mode.FRESH  # a Retry runs every branch again
            return self._fan_out(f, state, jobs, len(jobs), first)

        return self._retrying(f, state, attempt)

    def _run_map(self, f: _Frame, state: MapState, mode: _Mode) -> Transition:
        def attempt() -> _Outcome | None:
            nonlocal mode
            effective = self._input(state.io, f.input)
            env = self._env(f, effective)
            if state.jsonata:
                items = effective if state.items is None else state.items.evaluate(env)
                if not isinstance(items, list):
                    raise QueryEvaluationError(
                        f"The field 'Items' must evaluate to a JSON array, got {describe(items)}",
                        "Items",
                    )
            else:
                items = self._read_in(f, state.items_path, effective, "ItemsPath")
                if not isinstance(items, list):
                    raise runtime_error(
                        f"The ItemsPath '{state.items_path.text}' must point to a JSON array, "
                        f"got {describe(items)}"
                    )
            limit = state.max_concurrency
            if state.max_concurrency_expr is not None:
                limit = _whole(state.max_concurrency_expr, env, minimum=0)
            if state.max_concurrency_path is not None:
                value = self._read_in(
                    f, state.max_concurrency_path, effective, "MaxConcurrencyPath"
                )
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise runtime_error(
                        f"The MaxConcurrencyPath '{state.max_concurrency_path.text}' must point "
                        f"to a non-negative integer, got {describe(value)}"
                    )
                limit = value
            selector = state.item_selector
            jobs = [
                (
                    state.processor,
                    item
                    if selector is None
                    else selector.evaluate(self._env(f, effective, item=(index, item))),
                )
                for index, item in enumerate(items)
            ]
            bound = min(limit or INLINE_MAP_CONCURRENCY, INLINE_MAP_CONCURRENCY)
            first, mode = mode, _Mode.FRESH  # a Retry runs every iteration again
            return self._fan_out(f, state, jobs, bound, first)

        return self._retrying(f, state, attempt)

    def _fan_out(
        self,
        f: _Frame,
        state: ParallelState | MapState,
        jobs: list[tuple[Machine, Any]],
        concurrency: int,
        mode: _Mode,
    ) -> _Outcome | None:
        """Run one machine per job on at most ``concurrency`` threads; the outputs in job
        order, the error of the first job to fail (the others are cancelled), or ``None``
        while some wait for callbacks. Unless ``mode`` is FRESH, jobs that succeeded keep
        their recorded output; on REDRIVE the others continue from their cursor, on
        CONTINUE only the one holding the answered callback runs (the others keep waiting)."""
        is_map = isinstance(state, MapState)
        prefix = f"{f.path}{SEP}{state.name}{SEP}"
        with self.lock:
            persisted = self.store.frames(self.arn, prefix) if mode is not _Mode.FRESH else {}
            if mode is _Mode.FRESH:
                self.frame_clears.append(prefix)
                for path in [p for p in self.frame_writes if p.startswith(prefix)]:
                    del self.frame_writes[path]
            if mode is _Mode.CONTINUE:
                started = f.last_event = self.next_event_id - 1
            else:
                started = self._emit(
                    f,
                    EventType.MAP_STATE_STARTED if is_map else EventType.PARALLEL_STATE_STARTED,
                    {"length": len(jobs)} if is_map else None,
                )
        cancel = threading.Event()
        results: list[Any] = [None] * len(jobs)
        failures: list[_Failed] = []
        waiting: list[_Frame] = []
        todo: list[tuple[int, _Frame, _Next, _Mode]] = []
        target = self.answered[0] if self.answered is not None else None
        for index, (machine, data) in enumerate(jobs):
            path = f"{prefix}{index}"
            row = persisted.get(path)
            if row is not None and row.status == _SUCCEEDED:
                results[index] = json.loads(row.output or "null")
                continue
            child = _Frame(
                machine,
                path,
                depth=f.depth + 1,
                last_event=started,
                cancels=(*f.cancels, cancel),
                iteration=(state.name, index) if is_map else None,
            )
            child.scope = f.scope.inner(
                json.loads(row.variables) if row and row.variables else None
            )
            if row is None or row.cursor_state is None:
                todo.append((index, child, _Next(machine.start_at, data), _Mode.FRESH))
                continue
            first = _Next(row.cursor_state, json.loads(row.cursor_input or "null"))
            if mode is _Mode.CONTINUE and row.status == _WAITING_STATUS:
                child.state, child.input, child.input_json = (
                    first.state,
                    first.data,
                    row.cursor_input,
                )
                child.token, child.inside = row.token, True
                child.entered = self._now()
                if target is not None and (target + SEP).startswith(path + SEP):
                    todo.append((index, child, first, _Mode.CONTINUE))
                else:
                    waiting.append(child)  # still waits for its own callback
                continue
            todo.append((index, child, first, _Mode.REDRIVE))

        workers = min(concurrency, len(todo))
        together = {child.path for _, child, _, _ in todo[:workers]}

        def run_one(index: int, child: _Frame, first: _Next, child_mode: _Mode) -> None:
            # AWS starts the first ``workers`` together: a sibling's failure stops them once
            # started; one queued behind MaxConcurrency never starts (a redrive runs it)
            if child.cancelled() and child.path not in together:
                return
            end = self._run_child(child, first, child_mode)
            if isinstance(end, _Succeeded):
                results[index] = end.output
            elif isinstance(end, _Failed):
                with self.lock:
                    if not failures:
                        failures.append(end)
                        cancel.set()
            elif isinstance(end, _WaitingForCallback):
                with self.lock:
                    waiting.append(child)

        if todo:
            self._commit()  # the started branches' rows and events, before handlers run
            self._run_all(run_one, todo, workers, cancel)
        with self.lock:
            f.last_event = self.next_event_id - 1  # the join follows the latest branch event
            if failures or f.cancelled():
                for child in waiting:  # their callbacks will find them no longer waiting
                    self._abort_frame(child)
            if failures:  # …StateFailed once no retry follows (:meth:`_retrying`)
                failed = failures[0]
                return _Outcome(
                    error=_BranchError(failed.error, failed.cause, terminal=failed.terminal)
                )
            if f.cancelled():
                raise _CancelledError
            if waiting:
                return None
            try:
                check_payload(dumps(results), f"The state/task '{state.name}' returned a result")
            except StatesError as exc:  # the branches' outputs together are over the quota
                return _Outcome(error=_BranchError(exc.error, exc.cause))
            self._emit(
                f,
                EventType.MAP_STATE_SUCCEEDED if is_map else EventType.PARALLEL_STATE_SUCCEEDED,
                None,
            )
        return _Outcome(result=results)

    def _run_all(
        self,
        run_one: Callable[[int, _Frame, _Next, _Mode], None],
        todo: list[tuple[int, _Frame, _Next, _Mode]],
        workers: int,
        cancel: threading.Event,
    ) -> None:
        """Run the jobs on the scheduler; an engine-level exception in one (stopped, lost
        ownership, a bug) cancels the rest and is re-raised here once all have returned."""

        def job(args: tuple[int, _Frame, _Next, _Mode]) -> Callable[[], None]:
            def go() -> None:
                try:
                    run_one(*args)
                except BaseException:
                    cancel.set()
                    raise

            return go

        try:
            errors = self.s.scheduler.run_all([job(args) for args in todo], workers)
        except BaseException:  # Ctrl-C while waiting: the branches stop at their checkpoints
            cancel.set()
            raise
        for error in errors:
            if error is not None:
                raise error

    def _run_child(self, child: _Frame, first: _Next, mode: _Mode) -> Transition | None:
        """Drive one branch or iteration to its end or until it waits for a callback;
        ``None`` when it was cancelled.

        A frame stays in :attr:`live` until it has ended, so an abort of the execution
        (a stop request, Ctrl-C, an engine bug surfacing from any thread) reports the state
        each unfinished branch was in and leaves its cursor for a redrive."""
        with self.lock:
            self.live[child.path] = child
        if child.iteration is not None and mode is not _Mode.CONTINUE:
            self._emit(child, EventType.MAP_ITERATION_STARTED, self._iteration(child))
        try:
            end = self._drive(child, first, mode)
        except _CancelledError:
            with self.lock:
                self.live.pop(child.path, None)
                self._abort_frame(child)
            return None
        with self.lock:
            self.live.pop(child.path, None)
            if isinstance(end, _WaitingForCallback):
                self.frame_writes[child.path] = child.row(_WAITING_STATUS)
            elif isinstance(end, _Succeeded):
                kind = EventType.MAP_ITERATION_SUCCEEDED
                self.frame_writes[child.path] = child.row(_SUCCEEDED, dumps(end.output))
            else:
                kind = EventType.MAP_ITERATION_FAILED
                self.frame_writes[child.path] = child.row(_FAILED)
            if child.iteration is not None and not isinstance(end, _WaitingForCallback):
                self._emit(child, kind, self._iteration(child))
        self._commit()
        return end

    @staticmethod
    def _iteration(child: _Frame) -> dict[str, Any]:
        assert child.iteration is not None
        name, index = child.iteration
        return {"name": name, "index": index}

    def _abort_frame(self, f: _Frame) -> None:
        """Under the lock: ``<Type>StateAborted`` for the state ``f`` is in, then
        ``MapIterationAborted`` for an iteration; the frame is kept for a redrive."""
        state = f.machine.states.get(f.state or "")
        if f.inside and state is not None and state.type.value in _ABORTED_EVENT:
            self._emit(f, _ABORTED_EVENT[state.type.value], None)
        f.inside = False
        if f.iteration is not None:
            self._emit(f, EventType.MAP_ITERATION_ABORTED, self._iteration(f))
        if f.token is not None:
            self._close_token(f.token, TokenStatus.CANCELLED)
            f.token = None
        if f.path:
            self.frame_writes[f.path] = f.row(_ABORTED)

    # --- Task ------------------------------------------------------------------------------

    def _run_task(self, f: _Frame, state: TaskState, resumed: _Outcome | None = None) -> Transition:
        return self._retrying(f, state, lambda: self._attempt(f, state, f.input), resumed)

    def _seconds(
        self, f: _Frame, fixed: int | None, path: Path | None, effective: Any, field: str
    ) -> int | None:
        if path is None:
            return fixed
        value = self._read_in(f, path, effective, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise runtime_error(
                f"The {field} '{path.text}' must point to a positive integer, got {describe(value)}"
            )
        return value

    def _attempt(self, f: _Frame, state: TaskState, data: Any) -> _Outcome | None:
        """Schedule and run one attempt; ``None`` when it now waits for a callback."""
        self.s.scheduler.checkpoint()
        if f.cancelled():
            raise _CancelledError
        effective = self._input(state.io, data)
        timeout = self._seconds(
            f, state.timeout_seconds, state.timeout_path, effective, "TimeoutSecondsPath"
        )
        heartbeat = self._seconds(
            f, state.heartbeat_seconds, state.heartbeat_path, effective, "HeartbeatSecondsPath"
        )
        if state.timeout_expr is not None:
            timeout = _whole(state.timeout_expr, self._env(f, effective), minimum=1)
        if state.heartbeat_expr is not None:
            heartbeat = _whole(state.heartbeat_expr, self._env(f, effective), minimum=1)
        token = self._new_token() if state.waits_for_token else None
        parameters = state.parameters.evaluate(self._env(f, effective, token=token))
        if not isinstance(parameters, dict):
            raise QueryEvaluationError(
                f"The field 'Arguments' must evaluate to a JSON object, got {describe(parameters)}",
                "Arguments",
            )
        parameters_json = dumps(parameters)
        check_payload(parameters_json, f"The task '{state.name}' was given parameters")
        function_name = parameters.get("FunctionName")
        if not isinstance(function_name, str):
            raise runtime_error(f"FunctionName must be a string, got {describe(function_name)}")
        scheduled: dict[str, Any] = {
            "resourceType": "lambda",
            "resource": state.resource,
            "region": self.s.region,
            "parameters": parameters_json,
        }
        if timeout is not None:
            scheduled["timeoutInSeconds"] = timeout
        if heartbeat is not None:
            scheduled["heartbeatInSeconds"] = heartbeat
        self._emit(f, EventType.TASK_SCHEDULED, scheduled)
        mocked = None
        if self.test_case is not None and state.name in self.test_case.responses:
            with self.lock:  # one counter per state, shared by a Map's iterations
                number = self.mock_counts.get(state.name, 0)
                self.mock_counts[state.name] = number + 1
            mocked = self.test_case.response(state.name, number)
            if mocked is None:
                defined = len(self.test_case.responses[state.name])
                raise runtime_error(
                    f"mock test case {self.test_case.name!r}: mocked response "
                    f"{self.test_case.response_names[state.name]!r} for state {state.name!r} "
                    "defines "
                    f"invocations 0-{defined - 1}, but invocation {number} was made"
                )
        self._emit(
            f, EventType.TASK_STARTED, {"resourceType": "lambda", "resource": state.resource}
        )
        started = self._now()
        if token is not None and mocked is None:
            self._commit(token=(token, state.name, started, timeout, heartbeat))
        else:
            self._commit()

        if mocked is not None:
            if mocked.returns:
                return self._task_result(f, state, mocked.value)
            return self._task_failed(f, state, StatesError(mocked.error, mocked.cause))

        request_id = self._uuid()
        handler = lambda_invoke.resolve(self.s.registry, function_name)
        if handler is None:
            invocation = lambda_invoke.not_found(function_name, self.s.region, self.s.account)
        else:
            context = lambda_invoke.LambdaContext(
                function_name=function_name,
                aws_request_id=request_id,
                invoked_function_arn=f"arn:aws:lambda:{self.s.region}:{self.s.account}:function:{function_name}",
                remaining_millis=(timeout or 900) * 1000,
                log_group_name=f"/aws/lambda/{function_name}",
            )
            payload = json.loads(
                dumps(parameters.get("Payload", {}))
            )  # the handler gets its own copy
            invocation = lambda_invoke.invoke(handler, payload, context)
        self.s.scheduler.checkpoint()
        if f.cancelled():  # AWS: the function ran, the stopped task's result is discarded
            if token is not None:
                self._close_token(token, TokenStatus.CANCELLED)
            raise _CancelledError
        elapsed = self._now() - started
        if not state.waits_for_token:
            # A synchronous handler cannot be preempted in-process; like AWS, a result that
            # comes too late is discarded and the task fails with the timeout error.
            if heartbeat is not None and elapsed > heartbeat:
                return self._task_timed_out(
                    f,
                    state,
                    STATES_HEARTBEAT_TIMEOUT,
                    f"No heartbeat for {elapsed:.3f} s (HeartbeatSeconds {heartbeat})",
                )
            if timeout is not None and elapsed > timeout:
                return self._task_timed_out(
                    f,
                    state,
                    STATES_TIMEOUT,
                    f"The task ran {elapsed:.3f} s (TimeoutSeconds {timeout})",
                )
        if not invocation.ok:
            if token is not None:
                self._close_token(token, TokenStatus.CANCELLED)
            return self._task_failed(f, state, StatesError(invocation.error, invocation.cause))
        result = lambda_invoke.output(
            invocation.payload_json,
            request_id,
            self.s.clock.now(),
            str(parameters.get("Qualifier") or "$LATEST"),
        )
        if token is None:
            return self._task_result(f, state, result)
        self._emit(
            f,
            EventType.TASK_SUBMITTED,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "output": dumps(result),
                "outputDetails": {"truncated": False},
            },
        )
        return self._await_callback(f, state, token)

    def _task_result(self, f: _Frame, state: TaskState, result: Any) -> _Outcome:
        result_json = dumps(result)
        try:
            check_payload(result_json, "The state/task 'lambda' returned a result")
        except StatesError as exc:  # recorded as the task's failure, the result dropped
            return self._task_failed(f, state, exc)
        self._emit(
            f,
            EventType.TASK_SUCCEEDED,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "output": result_json,
                "outputDetails": {"truncated": False},
            },
        )
        return _Outcome(result=result)

    def _task_failed(self, f: _Frame, state: TaskState, error: StatesError) -> _Outcome:
        self._emit(
            f,
            EventType.TASK_FAILED,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "error": error.error,
                "cause": error.cause,
            },
        )
        return _Outcome(error=error)

    def _task_timed_out(self, f: _Frame, state: TaskState, error: str, cause: str) -> _Outcome:
        self._emit(
            f,
            EventType.TASK_TIMED_OUT,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "error": error,
                "cause": cause,
            },
        )
        return _Outcome(error=StatesError(error, cause))

    # --- callbacks ---------------------------------------------------------------------------

    def _new_token(self) -> str:
        with self.lock:
            return f"{TOKEN_PREFIX}.{self.s.rng.getrandbits(192):048x}"

    def _uuid(self) -> str:
        import uuid

        with self.lock:
            return str(uuid.UUID(int=self.s.rng.getrandbits(128), version=4))

    def _await_callback(self, f: _Frame, state: TaskState, token: str) -> _Outcome | None:
        """Wait for the callback, unless the token was answered meanwhile (e.g. by the
        handler itself). At the top level the execution is released in the same transaction
        as the check, so no answer is lost; a branch only records that it waits (the
        execution is released once no branch runs: :meth:`_release_unless_answered`)."""
        with self.lock:
            if f.path:
                row = self.store.get_token(token)
                assert row is not None
                if row.status == TokenStatus.WAITING:
                    f.token = token
                    return None
                return self._callback_outcome(f, state, row)
            with self.store.transaction():
                row = self.store.get_token(token)
                assert row is not None
                if row.status == TokenStatus.WAITING:
                    stopped = self._write(release=True)
                    row = None
            self._written(stopped if row is None else False)
            self.released = row is None
        if row is None:
            return None
        return self._callback_outcome(f, state, row)

    def _release_unless_answered(self) -> TokenRow | None:
        """Branches wait for callbacks and none runs: release the execution, unless one of
        their tokens was answered while it ran (then that answer, to continue with). Checked
        and released in one transaction, as :meth:`_await_callback` does."""
        with self.lock:
            with self.store.transaction():
                stopped = self._write()
                answered = self.store.answered_waiting_token(self.arn)
                if answered is None and not stopped:
                    self.store.update_execution(
                        self.arn,
                        {
                            "owner": None,
                            "owner_pid": None,
                            "owner_host": None,
                            "owner_started": None,
                        },
                        owner=self.s.owner.id,
                    )
            self._written(stopped)
            if answered is None:
                self.finished = True  # another process drives it from here
        return answered

    def _callback_outcome(self, f: _Frame, state: TaskState, token: TokenRow) -> _Outcome:
        if token.status == TokenStatus.SUCCEEDED:
            return self._task_result(f, state, json.loads(token.output or "null"))
        if token.status == TokenStatus.TIMED_OUT:
            return self._task_timed_out(f, state, token.error or STATES_TIMEOUT, token.cause or "")
        return self._task_failed(f, state, StatesError(token.error or "", token.cause or ""))

    def _close_token(self, token: str, status: TokenStatus) -> None:
        with self.lock, self.store.transaction():  # joins a commit already under way
            self.store.update_token(
                token,
                {"status": status.value, "closed": self._now()},
                expected_status=TokenStatus.WAITING,
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
