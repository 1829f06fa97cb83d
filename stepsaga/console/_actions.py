"""Operator actions off the request: one worker thread per console (per home).

A redrive or a case going on after a resolve runs the saga's steps, retry waits included:
seconds to minutes. Run inside a request, it froze the console for every operator. The
POST hands the action to :class:`ActionWorker` and returns at once; the execution page
shows the job and refreshes itself until it settles.

One thread runs the jobs one after another, with a backend of its own opened per job (the
embedded backend's rule: one process thread drives one engine; SQLite connections stay on
the thread that opened them). Pages keep reading the stores meanwhile (SQLite WAL readers
do not wait for the writer).

Each action is one line of :data:`ACTIONS`: a backend operation and what it needs from the
form; what it returns is kept on the job (``cancel``'s undone steps, for the page).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from stepsaga._reconciliation import parse_outcome
from stepsaga._util.clock import Clock
from stepsaga.backends import SagaBackend
from stepsaga.errors import StepSagaError


@dataclass(frozen=True)
class ActionRequest:
    """What the operator asked for: ``target`` is an execution name or an item id."""

    action: str
    target: str
    tenant: str | None = None
    note: str = ""
    outcome: str = ""
    #: Who asked: a person the console's ``--operators-file`` names (their token signed the
    #: request); ``None``: the backend's own operator (``whoami``).
    by: str | None = None


def _by(backend: SagaBackend, request: ActionRequest) -> str:
    return request.by or backend.whoami()


#: The backend operation behind each action, as the person who asked (:func:`_by`).
ACTIONS: dict[str, Callable[[SagaBackend, ActionRequest], object]] = {
    "redrive": lambda b, r: b.redrive(r.target, tenant=r.tenant),
    "stop": lambda b, r: b.stop(r.target, tenant=r.tenant, by=_by(b, r), note=r.note),
    "cancel": lambda b, r: b.cancel(r.target, tenant=r.tenant, by=_by(b, r), note=r.note),
    "resolve": lambda b, r: b.recon_resolve(r.target, parse_outcome(r.outcome), _by(b, r), r.note),
}


#: Settled jobs remembered (what the pages show as the latest action on a target).
KEPT_JOBS = 200


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def settled(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED)


@dataclass(frozen=True)
class Job:
    """One action handed to the worker, and what became of it."""

    id: int
    request: ActionRequest
    state: JobState
    submitted_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    #: Why it failed (the backend's one-line message), for the page.
    error: str | None = None
    #: The HTTP status the failure maps to (400 bad input, 404, 409 refused, 500).
    error_code: int | None = None
    #: What the backend operation returned (a ``CancelView`` for ``cancel``) once done.
    result: object | None = None


class ActionWorker:
    """Runs :data:`ACTIONS` on a thread of its own, one at a time, and remembers the jobs
    (the latest per target is what a page shows)."""

    def __init__(
        self,
        open_backend: Callable[[], SagaBackend],
        clock: Clock,
        classify: Callable[[Exception], int],
    ) -> None:
        self._open_backend = open_backend
        self._clock = clock
        self._classify = classify
        self._jobs: dict[int, Job] = {}
        self._latest: dict[str, int] = {}
        self._settled: dict[int, threading.Event] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._queue: queue.Queue[int | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def submit(self, request: ActionRequest) -> Job:
        """Queue ``request`` (an unknown action is a programming error: ``KeyError``)."""
        if request.action not in ACTIONS:
            raise KeyError(request.action)
        with self._lock:
            self._forget_old()
            job = Job(next(self._ids), request, JobState.QUEUED, self._clock.now())
            self._jobs[job.id] = job
            self._latest[request.target] = job.id
            self._settled[job.id] = threading.Event()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="stepsaga-console-actions", daemon=True
                )
                self._thread.start()
        self._queue.put(job.id)
        return job

    def wait(self, job_id: int, seconds: float) -> Job:
        """The job once settled, or as it stands after ``seconds``."""
        self._settled[job_id].wait(seconds)
        return self._jobs[job_id]

    def latest(self, target: str) -> Job | None:
        """The newest job aimed at ``target`` (an execution name or an item id)."""
        with self._lock:
            found = self._latest.get(target)
            return self._jobs[found] if found is not None else None

    def active(self) -> list[Job]:
        """Jobs queued or running."""
        with self._lock:
            return [j for j in self._jobs.values() if not j.state.settled]

    def stop(self) -> None:
        """Let the thread end after the job it runs (queued jobs are dropped)."""
        self._queue.put(None)

    def _forget_old(self) -> None:
        """Keep the newest :data:`KEPT_JOBS` settled jobs (a console runs for days)."""
        settled = [i for i, j in self._jobs.items() if j.state.settled]
        for job_id in settled[: max(0, len(settled) - KEPT_JOBS)]:
            job = self._jobs.pop(job_id)
            self._settled.pop(job_id, None)
            if self._latest.get(job.request.target) == job_id:
                del self._latest[job.request.target]

    def _update(self, job_id: int, **changes: Any) -> Job:
        with self._lock:
            job = self._jobs[job_id] = replace(self._jobs[job_id], **changes)
            return job

    def _run(self) -> None:
        while (job_id := self._queue.get()) is not None:
            settled = self._settled[job_id]
            job = self._update(job_id, state=JobState.RUNNING, started_at=self._clock.now())
            try:
                with self._open_backend() as backend:
                    result = ACTIONS[job.request.action](backend, job.request)
            except Exception as exc:  # every failure is reported on the page, never lost
                message = exc.message if isinstance(exc, StepSagaError) else str(exc)
                self._update(
                    job_id,
                    state=JobState.FAILED,
                    ended_at=self._clock.now(),
                    error=message or type(exc).__name__,
                    error_code=self._classify(exc),
                )
            else:
                self._update(job_id, state=JobState.DONE, ended_at=self._clock.now(), result=result)
            settled.set()
