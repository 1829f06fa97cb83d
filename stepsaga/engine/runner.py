"""The interpreter: drives one execution from its cursor until it ends or waits.

A :class:`Run` is built from the execution's row each time a process takes the execution
over (start, redrive, callback, timeout, abort). It keeps the cursor (state, that state's raw
input, retry counters) and buffers history events; it commits them (with the cursor and the
owner's heartbeat) *before* every handler invocation and every sleep, and when the execution
ends or starts waiting for a callback. Every commit is conditional on still owning the
execution, so two processes never drive it at once.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stepsaga.clock import Clock
from stepsaga.engine import history, lambda_invoke
from stepsaga.engine.definition import (
    IO,
    ChoiceState,
    Definition,
    FailState,
    PassState,
    State,
    SucceedState,
    TaskState,
    WaitState,
)
from stepsaga.engine.errors import (
    INTERRUPTED,
    STATES_HEARTBEAT_TIMEOUT,
    STATES_NO_CHOICE_MATCHED,
    STATES_RESULT_PATH_MATCH_FAILURE,
    STATES_TIMEOUT,
    StatesError,
    describe,
    runtime_error,
)
from stepsaga.engine.history import EventType
from stepsaga.engine.intrinsics import Call
from stepsaga.engine.liveness import Owner
from stepsaga.engine.mockconfig import MockTestCase
from stepsaga.engine.models import (
    Delay,
    DelayChosen,
    DelayKind,
    EngineEvent,
    ExecutionStatus,
    HistoryRecorded,
    TokenStatus,
)
from stepsaga.engine.paths import Path, PathNotFoundError
from stepsaga.engine.payload import Env
from stepsaga.engine.retry import decide, error_matches
from stepsaga.engine.store import ExecutionRow, LostOwnershipError, Store, TokenRow

TOKEN_PREFIX = "sst1"  # noqa: S105 (a format marker, not a secret)
TOKEN_FORMAT = re.compile(rf"^{TOKEN_PREFIX}\.[0-9a-f]{{48}}$")
_FLUSH_EVERY = 256
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """What a run needs from the engine; injected so tests control time and chance."""

    store: Store
    registry: Mapping[str, lambda_invoke.Handler]
    clock: Clock
    sleeper: Callable[[float], None]
    time_scale: float
    rng: random.Random
    owner: Owner
    region: str
    account: str
    notify: Callable[[EngineEvent], None] | None


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


class _WaitingForCallback:
    pass


_WAITING = _WaitingForCallback()
Transition = _Next | _Succeeded | _Failed | _WaitingForCallback


@dataclass(frozen=True)
class _Outcome:
    """One task attempt's result (the integration output) or its error."""

    result: Any = None
    error: StatesError | None = None


class _StoppedError(Exception):
    """``stop_execution`` asked the owner to abort; the abort is already written."""


def iso(ts: float) -> str:
    """Context-object timestamps: ISO 8601, milliseconds, ``Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


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
        self.cursor_state = row.cursor_state
        self.cursor_input: Any = (
            json.loads(row.cursor_input) if row.cursor_input is not None else None
        )
        self.cursor_input_json = row.cursor_input
        self.cursor_entered = row.cursor_entered or row.start_date
        self.cursor_event = row.cursor_event or 0
        self.retry_counts: list[int] = json.loads(row.retry_counts) if row.retry_counts else []
        self.redrive_count = row.redrive_count
        self.redrive_date = row.redrive_date
        self.pending: list[tuple[int, str, int, float, str | None]] = []
        self.pending_delays: list[tuple[Any, ...]] = []
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
        self._guard(lambda: self._loop(_Next(self.definition.start_at, self.input)))

    def redrive(self) -> None:
        """Re-enter the state the execution stopped in, with that state's input (the first
        state with the execution input when it stopped before entering any)."""

        def go() -> None:
            self._emit(EventType.EXECUTION_REDRIVEN, {"redriveCount": self.redrive_count})
            if self.cursor_state is None:
                self._loop(_Next(self.definition.start_at, self.input))
            else:
                self._loop(_Next(self.cursor_state, self.cursor_input))

        self._guard(go)

    def resume(self, token: TokenRow) -> None:
        """Continue a ``.waitForTaskToken`` task whose token was answered or timed out."""

        def go() -> None:
            state = self.definition.states[str(self.cursor_state)]
            assert isinstance(state, TaskState)
            self._loop(self._run_task(state, resumed=self._callback_outcome(state, token)))

        self._guard(go)

    def abort(self, error: str | None, cause: str | None) -> None:
        """Write ``…StateAborted`` + ``ExecutionAborted`` and close as ABORTED."""
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
                    INTERRUPTED, f"{type(exc).__name__}: {exc} (in state {self.cursor_state!r})"
                )
            except Exception:  # the store itself may be what failed; liveness checks remain
                log.warning("could not record the interruption of %s", self.arn, exc_info=True)
            raise

    def _loop(self, transition: Transition) -> None:
        while True:
            if isinstance(transition, _Next):
                state = self.definition.states[transition.state]
                self._enter(state, transition.data)
                transition = self._execute(state)
            elif isinstance(transition, _Succeeded):
                output_json = dumps(transition.output)
                self._emit(
                    EventType.EXECUTION_SUCCEEDED,
                    {"output": output_json, "outputDetails": {"truncated": False}},
                )
                self._commit(final=True, status=ExecutionStatus.SUCCEEDED, output=output_json)
                return
            elif isinstance(transition, _Failed):
                self._emit(
                    EventType.EXECUTION_FAILED,
                    {"error": transition.error, "cause": transition.cause},
                )
                self._commit(
                    final=True,
                    status=ExecutionStatus.FAILED,
                    error=transition.error,
                    cause=transition.cause,
                )
                return
            else:
                return

    def _enter(self, state: State, data: Any) -> None:
        if len(self.pending) >= _FLUSH_EVERY:
            self._commit()
        data_json = dumps(data)
        self.cursor_state = state.name
        self.cursor_input = data
        self.cursor_input_json = data_json
        self.cursor_entered = self._now()
        self.retry_counts = [0] * len(state.retriers) if isinstance(state, TaskState) else []
        self.cursor_event = self._emit(
            history.entered_type(state.type), history.state_entered(state.name, data_json)
        )

    def _execute(self, state: State) -> Transition:
        try:
            if isinstance(state, TaskState):
                return self._run_task(state)
            if isinstance(state, PassState):
                return self._run_pass(state)
            if isinstance(state, ChoiceState):
                return self._run_choice(state)
            if isinstance(state, WaitState):
                return self._run_wait(state)
            if isinstance(state, SucceedState):
                output = self._output(state.io, self._input(state.io, self.cursor_input))
                self._exit(state, output)
                return _Succeeded(output)
            return self._run_fail(state)
        except StatesError as exc:  # terminal errors of states without Retry/Catch
            return _Failed(exc.error, self._runtime_cause(exc))

    def _exit(self, state: State, output: Any) -> None:
        self._emit(history.exited_type(state.type), history.state_exited(state.name, dumps(output)))

    def _after(self, state: TaskState | PassState | WaitState, output: Any) -> Transition:
        self._exit(state, output)
        return _Next(state.next, output) if state.next is not None else _Succeeded(output)

    # --- input and output processing ----------------------------------------------------

    def _context(self, token: str | None = None) -> dict[str, Any]:
        context = dict(self._context_base)
        context["State"] = {
            "EnteredTime": iso(self.cursor_entered),
            "Name": self.cursor_state,
            "RetryCount": sum(self.retry_counts),
        }
        if token is not None:
            context["Task"] = {"Token": token}
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

    def _runtime_cause(self, exc: StatesError) -> str:
        if not exc.terminal:
            return exc.cause
        return (
            f"An error occurred while executing the state '{self.cursor_state}' "
            f"(entered at the event id #{self.cursor_event}). {exc.cause}"
        )

    # --- Pass, Choice, Wait, Fail --------------------------------------------------------

    def _run_pass(self, state: PassState) -> Transition:
        data = self.cursor_input
        effective = self._input(state.io, data)
        if state.parameters is not None:
            result = state.parameters.evaluate(Env(effective, self._context(), self.s.rng))
        elif state.has_result:
            result = state.result
        else:
            result = effective
        return self._after(
            state, self._output(state.io, self._result_path(state.result_path, data, result))
        )

    def _run_choice(self, state: ChoiceState) -> Transition:
        effective = self._input(state.io, self.cursor_input)
        context = self._context()
        target = next(
            (nxt for predicate, nxt in state.choices if predicate(effective, context)),
            state.default,
        )
        if target is None:
            return _Failed(STATES_NO_CHOICE_MATCHED, f"No Matches! (state '{state.name}')")
        output = self._output(state.io, effective)
        self._exit(state, output)
        return _Next(target, output)

    def _run_wait(self, state: WaitState) -> Transition:
        effective = self._input(state.io, self.cursor_input)
        seconds: float
        if state.seconds is not None:
            seconds = state.seconds
        elif state.seconds_path is not None:
            value = self._read(state.seconds_path, effective, "SecondsPath")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise runtime_error(
                    f"The SecondsPath '{state.seconds_path.text}' must point to a non-negative "
                    f"integer, got {describe(value)}"
                )
            seconds = value
        else:
            from stepsaga.engine.choice import parse_timestamp

            when = state.timestamp
            if state.timestamp_path is not None:
                raw = self._read(state.timestamp_path, effective, "TimestampPath")
                when = parse_timestamp(raw)
                if when is None:
                    raise runtime_error(
                        f"The TimestampPath '{state.timestamp_path.text}' must point to an "
                        f"RFC 3339 timestamp, got {describe(raw)}"
                    )
            assert when is not None
            seconds = max(0.0, when.timestamp() - self._now())
        self._pause(state.name, DelayKind.WAIT, self.cursor_event, 0, None, float(seconds))
        return self._after(state, self._output(state.io, effective))

    def _run_fail(self, state: FailState) -> Transition:
        def text(value: str | None, source: Path | Call | None, field: str) -> str | None:
            if source is None:
                return value
            if isinstance(source, Call):
                result = source.evaluate(Env(self.cursor_input, self._context(), self.s.rng))
            else:
                document = self._context() if source.context else self.cursor_input
                result = self._read(source, document, field)
            if not isinstance(result, str):
                raise runtime_error(f"The {field} must resolve to a string, got {describe(result)}")
            return result

        error = text(state.error, state.error_path, "ErrorPath")
        cause = text(state.cause, state.cause_path, "CausePath")
        return _Failed(error or "", cause or "")

    # --- Task ------------------------------------------------------------------------------

    def _run_task(self, state: TaskState, resumed: _Outcome | None = None) -> Transition:
        data = self.cursor_input
        outcome = resumed
        while True:
            if outcome is None:
                attempt = self._attempt(state, data)
                if attempt is None:
                    return _WAITING
                outcome = attempt
            if outcome.error is None:
                try:
                    return self._task_succeeded(state, data, outcome.result)
                except StatesError as exc:
                    outcome = _Outcome(error=exc)
            error = outcome.error
            assert error is not None
            outcome = None
            if error.terminal:
                return _Failed(error.error, self._runtime_cause(error))
            decision = decide(state.retriers, self.retry_counts, error.error, self.s.rng)
            if decision.retry:
                self._pause(
                    state.name,
                    DelayKind.RETRY,
                    self.next_event_id - 1,
                    decision.attempt,
                    error.error,
                    decision.delay,
                )
                continue
            return self._catch(state, data, error)

    def _task_succeeded(self, state: TaskState, data: Any, result: Any) -> Transition:
        if state.result_selector is not None:
            result = state.result_selector.evaluate(Env(result, self._context(), self.s.rng))
        return self._after(
            state, self._output(state.io, self._result_path(state.result_path, data, result))
        )

    def _catch(self, state: TaskState, data: Any, error: StatesError) -> Transition:
        for catcher in state.catchers:
            if error_matches(catcher.error_equals, error.error):
                error_output = {"Error": error.error, "Cause": error.cause}
                path = catcher.result_path
                assert path is None or isinstance(path, Path)
                try:
                    output = self._result_path(path, data, error_output)
                except StatesError as exc:
                    return _Failed(exc.error, exc.cause)
                self._exit(state, output)
                return _Next(catcher.next, output)
        return _Failed(error.error, error.cause)

    def _seconds(
        self, fixed: int | None, path: Path | None, effective: Any, field: str
    ) -> int | None:
        if path is None:
            return fixed
        value = self._read(path, effective, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise runtime_error(
                f"The {field} '{path.text}' must point to a positive integer, got {describe(value)}"
            )
        return value

    def _attempt(self, state: TaskState, data: Any) -> _Outcome | None:
        """Schedule and run one attempt; ``None`` when it now waits for a callback."""
        effective = self._input(state.io, data)
        timeout = self._seconds(
            state.timeout_seconds, state.timeout_path, effective, "TimeoutSecondsPath"
        )
        heartbeat = self._seconds(
            state.heartbeat_seconds, state.heartbeat_path, effective, "HeartbeatSecondsPath"
        )
        token = self._new_token() if state.waits_for_token else None
        parameters = state.parameters.evaluate(Env(effective, self._context(token), self.s.rng))
        parameters_json = dumps(parameters)
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
        self._emit(EventType.TASK_SCHEDULED, scheduled)
        mocked = None
        if self.test_case is not None and state.name in self.test_case.responses:
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
        self._emit(EventType.TASK_STARTED, {"resourceType": "lambda", "resource": state.resource})
        started = self._now()
        if token is not None and mocked is None:
            self._commit(token=(token, state.name, started, timeout, heartbeat))
        else:
            self._commit()

        if mocked is not None:
            if mocked.returns:
                return self._task_result(state, mocked.value)
            return self._task_failed(state, StatesError(mocked.error, mocked.cause))

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
        elapsed = self._now() - started
        if not state.waits_for_token:
            # A synchronous handler cannot be preempted in-process; like AWS, a result that
            # comes too late is discarded and the task fails with the timeout error.
            if heartbeat is not None and elapsed > heartbeat:
                return self._task_timed_out(
                    state,
                    STATES_HEARTBEAT_TIMEOUT,
                    f"No heartbeat for {elapsed:.3f} s (HeartbeatSeconds {heartbeat})",
                )
            if timeout is not None and elapsed > timeout:
                return self._task_timed_out(
                    state,
                    STATES_TIMEOUT,
                    f"The task ran {elapsed:.3f} s (TimeoutSeconds {timeout})",
                )
        if not invocation.ok:
            if token is not None:
                self._close_token(token, TokenStatus.CANCELLED)
            return self._task_failed(state, StatesError(invocation.error, invocation.cause))
        result = lambda_invoke.output(
            invocation.payload_json,
            request_id,
            self.s.clock.now(),
            str(parameters.get("Qualifier") or "$LATEST"),
        )
        if token is None:
            return self._task_result(state, result)
        self._emit(
            EventType.TASK_SUBMITTED,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "output": dumps(result),
                "outputDetails": {"truncated": False},
            },
        )
        return self._await_callback(state, token)

    def _task_result(self, state: TaskState, result: Any) -> _Outcome:
        self._emit(
            EventType.TASK_SUCCEEDED,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "output": dumps(result),
                "outputDetails": {"truncated": False},
            },
        )
        return _Outcome(result=result)

    def _task_failed(self, state: TaskState, error: StatesError) -> _Outcome:
        self._emit(
            EventType.TASK_FAILED,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "error": error.error,
                "cause": error.cause,
            },
        )
        return _Outcome(error=error)

    def _task_timed_out(self, state: TaskState, error: str, cause: str) -> _Outcome:
        self._emit(
            EventType.TASK_TIMED_OUT,
            {
                "resourceType": "lambda",
                "resource": state.resource,
                "error": error,
                "cause": cause,
            },
        )
        return _Outcome(error=StatesError(error, cause))

    # --- callbacks -------------------------------------------------------------------------

    def _new_token(self) -> str:
        return f"{TOKEN_PREFIX}.{self.s.rng.getrandbits(192):048x}"

    def _uuid(self) -> str:
        import uuid

        return str(uuid.UUID(int=self.s.rng.getrandbits(128), version=4))

    def _await_callback(self, state: TaskState, token: str) -> _Outcome | None:
        """Release the execution to wait, unless the token was answered meanwhile (e.g. by
        the handler itself); checked and released in one transaction so no answer is lost."""
        with self.store.transaction():
            row = self.store.get_token(token)
            assert row is not None
            if row.status == TokenStatus.WAITING:
                stopped = self._write(release=True)
                row = None
        self._written(stopped if row is None else False)
        if row is None:
            return None
        return self._callback_outcome(state, row)

    def _callback_outcome(self, state: TaskState, token: TokenRow) -> _Outcome:
        if token.status == TokenStatus.SUCCEEDED:
            return self._task_result(state, json.loads(token.output or "null"))
        if token.status == TokenStatus.TIMED_OUT:
            return self._task_timed_out(state, token.error or STATES_TIMEOUT, token.cause or "")
        return self._task_failed(state, StatesError(token.error or "", token.cause or ""))

    def _close_token(self, token: str, status: TokenStatus) -> None:
        with self.store.transaction():
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
        state: str,
        kind: DelayKind,
        event_id: int,
        attempt: int,
        error: str | None,
        seconds: float,
    ) -> None:
        slept = seconds * self.s.time_scale
        now = self._now()
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

    # --- events and commits ----------------------------------------------------------------

    def _emit(self, event_type: EventType, details: dict[str, Any] | None) -> int:
        event_id = self.next_event_id
        self.next_event_id += 1
        now = self._now()
        self.pending.append(
            (
                event_id,
                event_type.value,
                event_id - 1,
                now,
                None if details is None else dumps(details),
            )
        )
        if self.s.notify is not None:
            self.s.notify(
                HistoryRecorded(
                    self.arn, history.build(event_id, event_id - 1, event_type.value, now, details)
                )
            )
        return event_id

    def _write_abort(self, error: str | None, cause: str | None) -> None:
        state = self.definition.states.get(self.cursor_state or "")
        if isinstance(state, TaskState):
            self._emit(EventType.TASK_STATE_ABORTED, None)
        elif isinstance(state, WaitState):
            self._emit(EventType.WAIT_STATE_ABORTED, None)
        details: dict[str, Any] = {}
        if error is not None:
            details["error"] = error
        if cause is not None:
            details["cause"] = cause
        self._emit(EventType.EXECUTION_ABORTED, details)
        self._final_status = (ExecutionStatus.ABORTED, error, cause)

    def _commit(self, **options: Any) -> None:
        """Write buffered events and the cursor in one transaction (see :meth:`_write`)."""
        with self.store.transaction():
            stopped = self._write(**options)
        self._written(stopped)

    def _written(self, stopped: bool) -> None:
        self.pending = []
        self.pending_delays = []
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
        """Inside a transaction: write events, delays, cursor (and a new token), conditional on
        still owning the execution. ``True`` when a pending stop request was honoured."""
        now = self._now()
        stopped = False
        if not final:
            request = self.store.abort_request(self.arn)
            if request is not None:
                self._write_abort(*request)
                final, stopped, token = True, True, None
        values: dict[str, Any] = {
            "next_event_id": self.next_event_id,
            "cursor_state": self.cursor_state,
            "cursor_input": self.cursor_input_json,
            "cursor_entered": self.cursor_entered,
            "cursor_event": self.cursor_event,
            "retry_counts": dumps(self.retry_counts),
            "mock_counts": dumps(self.mock_counts) if self.mock_counts else None,
            "heartbeat": now,
        }
        if final:
            if status is None:
                status, error, cause = self._final_status
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


def role_arn(account: str) -> str:
    return f"arn:aws:iam::{account}:role/stepsaga-local"
