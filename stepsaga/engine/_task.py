"""The interpreter's Task state, its Retry and Catch, and its callbacks (part of ``Run``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stepsaga.engine import _lambda_invoke as lambda_invoke
from stepsaga.engine._definition import MapState, ParallelState, TaskState
from stepsaga.engine._errors import (
    STATES_HEARTBEAT_TIMEOUT,
    STATES_TIMEOUT,
    QueryEvaluationError,
    StatesError,
    describe,
    runtime_error,
)
from stepsaga.engine._history import EventType
from stepsaga.engine._models import DelayKind, TokenStatus
from stepsaga.engine._paths import Path
from stepsaga.engine._quotas import check_payload
from stepsaga.engine._retry import decide, error_matches
from stepsaga.engine._run import (
    _WAITING,
    RunBase,
    Transition,
    _BranchError,
    _CancelledError,
    _Failed,
    _Frame,
    _Next,
    _Outcome,
    _whole,
)
from stepsaga.engine._services import TOKEN_PREFIX, dumps
from stepsaga.engine._store import TokenRow
from stepsaga.engine._variables import Assign


class RunTasks(RunBase):
    """Task states: invoke, retry, catch, wait for a callback."""

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
            if f.path:  # a branch: its siblings' handlers may be writing at the same time
                invocation = lambda_invoke.invoke(handler, payload, context)
            else:  # a ledger in this file joins the commit that records the task's result
                with self.store.lend():
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
