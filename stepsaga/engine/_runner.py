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

``Run`` is assembled from one module per section: ``_run`` (the execution's state, input
and output processing, time, events and commits), ``_task`` (Task, Retry and Catch,
callbacks), ``_flow`` (Pass, Choice, Wait, Fail), ``_groups`` (Parallel and Map); this
module keeps the entry points and the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from stepsaga.engine import _history as history
from stepsaga.engine._definition import (
    ChoiceState,
    MapState,
    ParallelState,
    PassState,
    State,
    SucceedState,
    TaskState,
    WaitState,
)
from stepsaga.engine._errors import INTERRUPTED, QueryEvaluationError, StatesError
from stepsaga.engine._groups import RunGroups
from stepsaga.engine._history import EventType
from stepsaga.engine._models import ExecutionStatus
from stepsaga.engine._payload import Env
from stepsaga.engine._quotas import check_payload
from stepsaga.engine._run import (
    _RUNNING,
    Transition,
    _CancelledError,
    _Failed,
    _Frame,
    _Mode,
    _Next,
    _StoppedError,
    _Succeeded,
    _WaitingForCallback,
)
from stepsaga.engine._services import dumps
from stepsaga.engine._store import LostOwnershipError, TokenRow
from stepsaga.engine._variables import Assign, assigned_details

_FLUSH_EVERY = 256
log = logging.getLogger(__name__)


class Run(RunGroups):
    """One process driving one execution (see the module docstring)."""

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
            self._guarded(body)
        finally:
            shared = self.store.shared
            if shared.pending:  # a ledger outcome no commit of this run carried (it stopped)
                with self.lock:
                    shared.commit()

    def _guarded(self, body: Callable[[], None]) -> None:
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
