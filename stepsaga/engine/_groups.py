"""The interpreter's Parallel and Map states: branches and iterations (part of ``Run``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from stepsaga.engine._definition import INLINE_MAP_CONCURRENCY, Machine, MapState, ParallelState
from stepsaga.engine._errors import QueryEvaluationError, StatesError, describe, runtime_error
from stepsaga.engine._flow import RunFlow
from stepsaga.engine._history import EventType
from stepsaga.engine._models import TokenStatus
from stepsaga.engine._quotas import check_payload
from stepsaga.engine._run import (
    _ABORTED,
    _ABORTED_EVENT,
    _FAILED,
    _SUCCEEDED,
    _WAITING_STATUS,
    SEP,
    Transition,
    _BranchError,
    _CancelledError,
    _Failed,
    _Frame,
    _Mode,
    _Next,
    _Outcome,
    _Succeeded,
    _WaitingForCallback,
    _whole,
)
from stepsaga.engine._services import dumps


class RunGroups(RunFlow):
    """Parallel and Map states: their frames, run together."""

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
