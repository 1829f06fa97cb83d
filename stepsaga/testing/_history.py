"""Assertions over an execution history in the AWS ``GetExecutionHistory`` shape.

Why over the history and not the output: the path a saga took (which compensations ran,
how often a step was retried, which ``Catch`` fired) is the behaviour under test, and the
history is the one record every backend writes the same way — the embedded engine, Step
Functions Local and AWS. Pass ``{"events": [...]}`` (or a :class:`History`) from any of them.

``Parallel`` branches and ``Map`` iterations interleave their events; each event's
``previousEventId`` says which thread of control it belongs to (a branch's or an
iteration's first event points at ``ParallelStateStarted``/``MapIterationStarted``), so
retries and caught errors are counted per thread, never across them.

Failure messages print the whole path, one state visit per line, with retries, caught
errors and the final outcome, so a failing scenario explains itself.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

#: Events whose followers run in a thread of their own (a branch, an iteration).
_FORKS = frozenset({"ParallelStateStarted", "MapIterationStarted"})
_GROUP_STARTS = frozenset({"ParallelStateStarted", "MapStateStarted"})
#: Events that end a Parallel/Map state: back in the thread that entered it.
_GROUP_ENDS = frozenset(
    f"{group}State{end}"
    for group in ("Parallel", "Map")
    for end in ("Succeeded", "Failed", "Aborted", "Exited")
)
_SCHEDULED = frozenset({"TaskScheduled", "LambdaFunctionScheduled", "ActivityScheduled"})
_SUCCEEDED = frozenset({"TaskSucceeded", "LambdaFunctionSucceeded", "ActivitySucceeded"})
_FAILED = frozenset(
    {
        "TaskFailed",
        "TaskTimedOut",
        "TaskStartFailed",
        "TaskSubmitFailed",
        "LambdaFunctionFailed",
        "LambdaFunctionTimedOut",
        "LambdaFunctionStartFailed",
        "LambdaFunctionScheduleFailed",
        "ActivityFailed",
        "ActivityTimedOut",
        "ActivityScheduleFailed",
    }
)
_TERMINAL = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionAborted": "ABORTED",
    "ExecutionTimedOut": "TIMED_OUT",
}


@dataclass(frozen=True)
class Caught:
    """An error a ``Catch`` handled: in ``state``, routed to ``next_state``."""

    state: str
    error: str
    cause: str
    next_state: str | None


@dataclass(frozen=True)
class ExecutionEnd:
    """How the execution ended: ``status`` as ``DescribeExecution`` (``RUNNING`` while it
    has not ended, e.g. waiting for a task token) and the ``error``/``cause`` it failed with."""

    status: str
    error: str | None = None
    cause: str | None = None

    def __str__(self) -> str:
        return self.status if self.error is None else f"{self.status} ({self.error})"


@dataclass(frozen=True)
class _Visit:
    state: str
    attempts: int
    caught: Caught | None


@dataclass
class _OpenVisit:
    entered: int
    state: str
    attempts: int = 0
    failure: tuple[str, str] | None = None
    exited_with: tuple[str, str] | None = None

    def close(self, next_state: str | None) -> tuple[int, _Visit]:
        caught = None
        if self.exited_with is not None:
            caught = Caught(self.state, self.exited_with[0], self.exited_with[1], next_state)
        return self.entered, _Visit(self.state, self.attempts, caught)


@dataclass(frozen=True)
class History:
    """The events of one execution, read into visits (state entered → state exited)."""

    events: tuple[Mapping[str, Any], ...]

    @classmethod
    def of(cls, history: History | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> History:
        """Accept a ``History``, a ``GetExecutionHistory`` response or its event list."""
        if isinstance(history, History):
            return history
        events = history["events"] if isinstance(history, Mapping) else history
        return cls(tuple(sorted(events, key=lambda e: int(e["id"]))))

    @cached_property
    def _lanes(self) -> dict[int, int]:
        """Event id → the thread of control it belongs to (0: the top level)."""
        lanes: dict[int, int] = {}
        forks: set[int] = set()
        open_groups: list[int] = []
        for event in self.events:
            kind, number = str(event["type"]), int(event["id"])
            previous = int(event.get("previousEventId") or 0)
            if kind in _GROUP_ENDS and open_groups:
                lane = open_groups[-1]
                if kind.endswith("Exited"):
                    open_groups.pop()
            elif previous in forks:
                lane = number
            else:
                lane = lanes.get(previous, 0)
            lanes[number] = lane
            if kind in _GROUP_STARTS:
                open_groups.append(lane)
            if kind in _FORKS:
                forks.add(number)
        return lanes

    @cached_property
    def _visits(self) -> tuple[_Visit, ...]:
        """Every state visit, in the order the states were entered."""
        visits: list[tuple[int, _Visit]] = []
        open_visits: dict[int, _OpenVisit] = {}
        for event in self.events:
            kind, lane = str(event["type"]), self._lanes[int(event["id"])]
            current = open_visits.get(lane)
            if kind.endswith("StateEntered"):
                name = str(_details(event).get("name", "?"))
                if current is not None:
                    visits.append(current.close(name))
                open_visits[lane] = _OpenVisit(int(event["id"]), name)
            elif current is None:
                continue
            elif kind in _SCHEDULED:
                current.attempts += 1
                current.failure = None
            elif kind in _SUCCEEDED:
                current.failure = None
            elif kind in _FAILED:
                details = _details(event)
                current.failure = (str(details.get("error", "")), str(details.get("cause", "")))
            elif kind.endswith("StateExited"):
                current.exited_with = current.failure
        visits += [v.close(None) for v in open_visits.values()]
        return tuple(visit for _, visit in sorted(visits, key=lambda pair: pair[0]))

    @property
    def path(self) -> tuple[str, ...]:
        """The states entered, in order (a state entered twice appears twice)."""
        return tuple(v.state for v in self._visits)

    def attempts(self, state: str) -> int:
        """How many times ``state``'s task was scheduled, over all its visits."""
        return sum(v.attempts for v in self._visits if v.state == state)

    def retries(self, state: str) -> int:
        """Attempts beyond the first of each visit: what ``Retry`` added."""
        return sum(max(v.attempts - 1, 0) for v in self._visits if v.state == state)

    def caught(self, state: str | None = None) -> tuple[Caught, ...]:
        """Errors handled by a ``Catch`` (in ``state``, or anywhere), in order."""
        return tuple(
            v.caught
            for v in self._visits
            if v.caught is not None and (state is None or v.state == state)
        )

    @property
    def outcome(self) -> ExecutionEnd:
        outcome = ExecutionEnd("RUNNING")
        for event in self.events:
            kind = str(event["type"])
            if kind in _TERMINAL:
                details = _details(event)
                error, cause = details.get("error"), details.get("cause")
                outcome = ExecutionEnd(
                    _TERMINAL[kind],
                    None if error is None else str(error),
                    None if cause is None else str(cause),
                )
            elif kind == "ExecutionRedriven":
                outcome = ExecutionEnd("RUNNING")
        return outcome

    def describe(self) -> str:
        """The path, one visit per line, with retries, caught errors and the outcome."""
        lines = []
        for i, visit in enumerate(self._visits, 1):
            line = f"{i:>3}. {visit.state}"
            if visit.attempts > 1:
                line += f"  [{visit.attempts - 1} retr{'y' if visit.attempts == 2 else 'ies'}]"
            if visit.caught is not None:
                line += f"  caught {visit.caught.error} -> {visit.caught.next_state}"
            lines.append(line)
        outcome = self.outcome
        lines.append(f"     outcome: {outcome}")
        if outcome.error is not None:
            where = f" in {self._visits[-1].state}" if self._visits else ""
            cause = " ".join((outcome.cause or "no cause given").split())
            lines.append(f"     failed{where}: {outcome.error}: {_clip(cause)}")
        return "\n".join(lines)


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _details(event: Mapping[str, Any]) -> Mapping[str, Any]:
    for key, value in event.items():
        if key.endswith("EventDetails") and isinstance(value, Mapping):
            return value
    return {}


HistoryLike = History | Mapping[str, Any] | Sequence[Mapping[str, Any]]


def _fail(message: str, history: History) -> AssertionError:
    return AssertionError(f"{message}\nthe execution went:\n{history.describe()}")


def assert_path(history: HistoryLike, expected: Sequence[str]) -> None:
    """The states entered were exactly ``expected``, in order."""
    h = History.of(history)
    actual = h.path
    if actual == tuple(expected):
        return
    at = next(
        (i for i, (a, e) in enumerate(zip(actual, expected, strict=False)) if a != e),
        min(len(actual), len(expected)),
    )
    got = actual[at] if at < len(actual) else "the end"
    wanted = expected[at] if at < len(expected) else "the end"
    raise _fail(
        f"path differs at state {at + 1}: expected {wanted}, got {got}\n"
        f"expected: {' -> '.join(expected)}\n"
        f"actual:   {' -> '.join(actual)}",
        h,
    )


def assert_visits(history: HistoryLike, expected: Sequence[str]) -> None:
    """The states entered were exactly ``expected``, in any order: for executions whose
    ``Parallel`` branches and ``Map`` iterations interleave as they run."""
    h = History.of(history)
    actual, wanted = Counter(h.path), Counter(expected)
    if actual == wanted:
        return
    missing = ", ".join(f"{n} x {s}" for s, n in sorted((wanted - actual).items())) or "-"
    extra = ", ".join(f"{n} x {s}" for s, n in sorted((actual - wanted).items())) or "-"
    raise _fail(f"visits differ: missing {missing}; not expected {extra}", h)


def assert_retries(history: HistoryLike, state: str, expected: int) -> None:
    """``state`` was retried ``expected`` times (summed over its visits)."""
    h = History.of(history)
    if state not in h.path:
        raise _fail(f"{state} was never entered (expected {expected} retries)", h)
    actual = h.retries(state)
    if actual != expected:
        raise _fail(f"{state} was retried {actual} time(s), expected {expected}", h)


def assert_caught(
    history: HistoryLike, state: str, error: str, *, next_state: str | None = None
) -> None:
    """A ``Catch`` in ``state`` handled ``error`` (and routed it to ``next_state``)."""
    h = History.of(history)
    caught = h.caught(state)
    if not caught:
        raise _fail(f"no Catch handled an error in {state} (expected {error})", h)
    errors = [c.error for c in caught]
    matching = [c for c in caught if c.error == error]
    if not matching:
        raise _fail(f"the Catch in {state} handled {', '.join(errors)}, expected {error}", h)
    if next_state is not None and all(c.next_state != next_state for c in matching):
        targets = ", ".join(str(c.next_state) for c in matching)
        raise _fail(
            f"{error} in {state} was routed to {targets}, expected {next_state}",
            h,
        )


def assert_outcome(
    history: HistoryLike, status: str, *, error: str | None = None, cause: str | None = None
) -> None:
    """The execution ended with ``status`` (and ``error``; ``cause`` as a substring)."""
    h = History.of(history)
    actual = h.outcome
    expected = ExecutionEnd(status, error)
    if actual.status != status or (error is not None and actual.error != error):
        raise _fail(f"outcome {actual}, expected {expected}", h)
    if cause is not None and cause not in (actual.cause or ""):
        raise _fail(f"cause {json.dumps(actual.cause)} does not contain {json.dumps(cause)}", h)
