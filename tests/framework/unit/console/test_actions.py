"""The action worker: a POST's action runs on the worker's thread, not the caller's; a
refusal comes back with its HTTP status; a done job keeps what the backend returned; the
jobs of a target are remembered."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from stepsaga._util.clock import ManualClock
from stepsaga.console._actions import ActionRequest, ActionWorker, JobState
from stepsaga.console._app import status_code
from stepsaga.errors import IllegalTransitionError


class _Backend:
    """Records which thread each verb ran on; ``redrive`` waits for ``release``."""

    def __init__(self, release: threading.Event, calls: list[tuple[str, str]]) -> None:
        self.release = release
        self.calls = calls

    def __enter__(self) -> _Backend:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        pass

    def whoami(self) -> str:
        return "ops@host"

    def redrive(self, ref: str, *, tenant: str | None = None) -> Any:
        self.calls.append(("redrive", threading.current_thread().name))
        self.release.wait(10)

    def stop(self, ref: str, *, tenant: str | None, by: str, note: str) -> Any:
        raise IllegalTransitionError(f"{ref} ended already")

    def cancel(self, ref: str, *, tenant: str | None, by: str, note: str) -> Any:
        return {"cancelled": ref, "by": by, "note": note}


def test_an_action_runs_on_the_worker_and_a_refusal_keeps_its_status() -> None:
    release, calls = threading.Event(), list[tuple[str, str]]()
    worker = ActionWorker(lambda: _Backend(release, calls), ManualClock(), status_code)  # type: ignore[arg-type,return-value]
    job = worker.submit(ActionRequest("redrive", "acme-CASE-1-r1", tenant="acme"))
    assert worker.wait(job.id, 0.05).state in (JobState.QUEUED, JobState.RUNNING)  # returned
    assert worker.latest("acme-CASE-1-r1") == worker.wait(job.id, 0)
    release.set()
    assert worker.wait(job.id, 10).state is JobState.DONE
    assert calls == [("redrive", "stepsaga-console-actions")]
    refused = worker.submit(ActionRequest("stop", "acme-CASE-1-r1", note="why"))
    settled = worker.wait(refused.id, 10)
    assert (settled.state, settled.error_code, settled.error) == (
        JobState.FAILED,
        409,
        "acme-CASE-1-r1 ended already",
    )
    assert worker.active() == []
    worker.stop()


def test_a_done_job_keeps_what_the_backend_returned_for_the_page() -> None:
    worker = ActionWorker(lambda: _Backend(threading.Event(), []), ManualClock(), status_code)  # type: ignore[arg-type,return-value]
    job = worker.submit(ActionRequest("cancel", "acme-CASE-1-r1", note="customer cancelled"))
    settled = worker.wait(job.id, 10)
    assert settled.state is JobState.DONE
    # the operator is the backend's own identity, never the form's
    assert settled.result == {
        "cancelled": "acme-CASE-1-r1",
        "by": "ops@host",
        "note": "customer cancelled",
    }
    worker.stop()
