"""How a run's ``Parallel`` branches and ``Map`` iterations share the processor.

AWS starts every branch (every iteration, up to ``MaxConcurrency``) at once and their states
interleave. :class:`ThreadScheduler` (the default) runs them on real threads: handlers run
concurrently and the interleaving is whatever the machine makes of it.

:class:`SeededScheduler` is the deterministic test mode: still one thread per branch (the
interpreter is written as ordinary blocking code), but only one holds the baton at a time,
and at every *checkpoint* (before a state is entered, before and after a Task's handler
runs, before a retry) a ``random.Random(seed)`` picks which runnable branch goes on. The
same seed gives the same interleaving, so a test can find and replay the schedule where
"branch 2 had started its Task when branch 1 failed". New branches are started in order,
each up to its first checkpoint, before any of them goes further: AWS starts them together.

A handler that blocks until another branch does something (a barrier) never returns under
:class:`SeededScheduler`: only one branch runs at a time.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from concurrent.futures import Future

Job = Callable[[], None]


class Scheduler(Protocol):
    def run_all(self, jobs: Sequence[Job], workers: int) -> list[BaseException | None]:
        """Run ``jobs``, at most ``workers`` at once, started in order; each one's exception
        (or ``None``), once all have returned."""

    def checkpoint(self) -> None:
        """A point where another branch may run before this one goes on."""


class ThreadScheduler:
    """Real threads: a pool of ``workers`` per fan-out; checkpoints do nothing."""

    def run_all(self, jobs: Sequence[Job], workers: int) -> list[BaseException | None]:
        from concurrent.futures import ThreadPoolExecutor, wait  # only a fan-out needs them

        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stepsaga-branch")
        futures: list[Future[None]] = []
        try:
            futures = [pool.submit(job) for job in jobs]
            wait(futures)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return [future.exception() for future in futures]

    def checkpoint(self) -> None:
        return None


@dataclass(eq=False)
class _Task:
    """One thread of control under the baton: the one that started the run, or a job."""

    number: int
    parent: _Task | None = None
    job: Job | None = None
    children: int = 0  # its jobs still running or queued: it waits while > 0
    queued: list[_Task] = field(default_factory=list)  # its jobs beyond ``workers``
    started: bool = False
    error: BaseException | None = None


class SeededScheduler:
    """One branch at a time, the next one chosen at each checkpoint by a seeded RNG."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random(seed)  # noqa: S311 (a test schedule, not a secret)
        self._lock = threading.Condition()
        self._tasks: dict[int, _Task] = {}  # by thread id
        self._ready: list[_Task] = []
        self._current: _Task | None = None
        self._starting: _Task | None = None  # a new job running up to its first checkpoint
        self._numbers = 0

    def run_all(self, jobs: Sequence[Job], workers: int) -> list[BaseException | None]:
        with self._lock:
            me = self._me()
            if self._starting is me:  # a job that fans out first: that is its checkpoint
                self._yield(me)
            tasks = [self._task(job, me) for job in jobs]
            me.children = len(tasks)
            me.queued = tasks[workers:]
            for task in tasks[:workers]:  # AWS starts them together: in order, each up to
                self._starting = task  # its first checkpoint, before any goes further
                self._run(task)
                self._lock.wait_for(lambda: self._starting is None)
            if me.children:
                self._switch()
                self._lock.wait_for(lambda: self._current is me)
            self._current = me
        return [task.error for task in tasks]

    def checkpoint(self) -> None:
        with self._lock:
            self._yield(self._me())

    # --- under the lock ------------------------------------------------------------------

    def _yield(self, me: _Task) -> None:
        self._ready.append(me)
        if self._starting is me:  # back to run_all, which starts the next job
            self._starting = self._current = None
            self._lock.notify_all()
        else:
            self._switch()
        self._lock.wait_for(lambda: self._current is me)

    def _me(self) -> _Task:
        task = self._tasks.get(threading.get_ident())
        if task is None:  # a thread that starts a run holds the baton until it fans out
            task = self._tasks[threading.get_ident()] = self._current = self._task(None, None)
            task.started = True
        return task

    def _task(self, job: Job | None, parent: _Task | None) -> _Task:
        self._numbers += 1
        return _Task(self._numbers, parent, job)

    def _run(self, task: _Task) -> None:
        """Give ``task`` the baton, on a thread of its own the first time."""
        self._current = task
        if not task.started:
            task.started = True
            name = f"stepsaga-branch-{task.number}"
            threading.Thread(target=self._body, args=(task,), name=name, daemon=True).start()
        self._lock.notify_all()

    def _body(self, task: _Task) -> None:
        with self._lock:
            self._tasks[threading.get_ident()] = task
            self._lock.wait_for(lambda: self._current is task)
        assert task.job is not None
        try:
            task.job()
        except BaseException as exc:  # handed to run_all's caller
            task.error = exc
        with self._lock:
            del self._tasks[threading.get_ident()]
            parent = task.parent
            assert parent is not None
            parent.children -= 1
            if parent.queued:  # a worker is free: the next queued job may start
                self._ready.append(parent.queued.pop(0))
            if parent.children == 0 and self._starting is None:
                self._ready.append(parent)
            if self._starting is task:  # ended before any checkpoint: back to run_all
                self._starting = self._current = None
                self._lock.notify_all()
            else:
                self._switch()

    def _switch(self) -> None:
        """Hand the baton to a runnable task chosen by the seeded RNG."""
        if self._ready:
            self._run(self._ready.pop(self._rng.randrange(len(self._ready))))
        else:
            self._current = None
            self._lock.notify_all()
