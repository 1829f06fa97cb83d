"""An execution's history as a person reads it: states entered, retries with their delays,
errors caught (and where they went), waits for a person, redrives, the end.

Read from ``GetExecutionHistory`` events only (what both backends return), so the console
shows the same on AWS and locally. AWS histories carry no retry delay: the delay shown is
the time between the failure and the next attempt (what was waited; 0 when the local
engine runs with ``--time-scale 0``), unless the backend knows the delay it chose
(``chosen``: the local engine's, by the id of the failure event).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class EntryKind(StrEnum):
    STARTED = "started"
    ENTERED = "entered"
    RETRIED = "retried"
    CAUGHT = "caught"
    FAILED = "failed"
    #: Failed, and nothing after it yet: a retry (or a Catch) is still to come.
    PENDING = "pending"
    WAITING = "waiting"
    REDRIVEN = "redriven"
    ENDED = "ended"


@dataclass(frozen=True)
class Entry:
    kind: EntryKind
    when: datetime
    state: str | None = None
    error: str | None = None
    #: A short cause (a Lambda error's ``errorMessage``), or what happened.
    text: str = ""
    #: ``RETRIED``: the retry's number (1 = first retry) and the seconds waited before it.
    attempt: int | None = None
    seconds: float | None = None
    #: ``RETRIED``: ``seconds`` is the delay the engine chose (else the time waited).
    chosen: bool = False
    #: ``CAUGHT``: the state the Catch sent the execution to.
    next_state: str | None = None


_FAILURES = {"TaskFailed": "taskFailedEventDetails", "TaskTimedOut": "taskTimedOutEventDetails"}
_ENDINGS = {
    "ExecutionSucceeded": "succeeded",
    "ExecutionFailed": "failed",
    "ExecutionAborted": "stopped",
    "ExecutionTimedOut": "timed out",
}


def short_cause(cause: object, limit: int = 200) -> str:
    """A Lambda-style cause is JSON with ``errorMessage``: show the message, on one line."""
    text = "" if cause is None else str(cause)
    try:
        data = json.loads(text)
        if isinstance(data, dict) and "errorMessage" in data:
            text = str(data["errorMessage"])
    except ValueError:
        pass
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: States that hold others (their branches or item iterations): they run no task.
CONTAINERS = frozenset({"Map", "Parallel"})


def event_id(event: Mapping[str, Any], index: int) -> int:
    return int(event.get("id", index + 1))


def branches(events: Sequence[Mapping[str, Any]]) -> dict[int, int | None]:
    """Event id -> id of the ``…StateEntered`` event of the state it belongs to.

    Branches and map iterations interleave in a history; each event's ``previousEventId``
    chain leads back to the state it belongs to (a history without them is read in order).
    A state entered inside a ``Map``/``Parallel`` belongs to itself; when it exits, its
    branch belongs to the group again."""
    run_of: dict[int, int | None] = {}
    parent: dict[int, int | None] = {}
    types: dict[int, str] = {}
    exits: set[int] = set()
    for index, event in enumerate(events):
        kind = str(event.get("type", ""))
        this = event_id(event, index)
        previous = int(event.get("previousEventId", this - 1))
        key = run_of.get(previous)
        if previous in exits and key is not None:  # after a state, its group's branch
            key = parent.get(key)
        if kind.endswith("StateExited"):
            exits.add(this)
        if kind.endswith("StateEntered"):
            types[this] = kind.removesuffix("StateEntered")
            parent[this] = key if key is not None and types.get(key) in CONTAINERS else None
            run_of[this] = this
        else:
            run_of[this] = key
    return run_of


def timeline(
    events: Sequence[Mapping[str, Any]], chosen: Mapping[int, float] | None = None
) -> list[Entry]:
    """The entries of ``events`` (oldest first); ``chosen`` maps a failure event's id to
    the retry delay chosen after it, where the backend knows it."""
    entries: list[Entry] = []
    run_of = branches(events)
    names = {
        event_id(e, i): str(e.get("stateEnteredEventDetails", {}).get("name"))
        for i, e in enumerate(events)
        if str(e.get("type", "")).endswith("StateEntered")
    }
    retries: dict[str, int] = {}
    for index, event in enumerate(events):
        kind, when = str(event.get("type", "")), event["timestamp"]
        run = run_of.get(event_id(event, index))
        state = names.get(run) if run is not None else None
        if kind == "ExecutionStarted":
            entries.append(Entry(EntryKind.STARTED, when, text="execution started"))
        elif kind.endswith("StateEntered"):
            entries.append(Entry(EntryKind.ENTERED, when, state=state))
        elif kind in _FAILURES:
            details = event.get(_FAILURES[kind], {})
            found = _failure(events, index, run_of, names, details, retries, chosen or {})
            entries.append(found)
        elif kind == "TaskSubmitted":
            entries.append(Entry(EntryKind.WAITING, when, state=state, text="waits for a person"))
        elif kind == "ExecutionRedriven":
            count = event.get("executionRedrivenEventDetails", {}).get("redriveCount")
            entries.append(Entry(EntryKind.REDRIVEN, when, text=f"redrive {count}"))
        elif kind in _ENDINGS:
            details = event.get(kind[0].lower() + kind[1:] + "EventDetails", {})
            entries.append(
                Entry(
                    EntryKind.ENDED,
                    when,
                    error=details.get("error"),
                    text=f"execution {_ENDINGS[kind]}"
                    + (f": {short_cause(details.get('cause'))}" if details.get("cause") else ""),
                )
            )
    return entries


def _failure(
    events: Sequence[Mapping[str, Any]],
    index: int,
    run_of: Mapping[int, int | None],
    names: Mapping[int, str],
    details: Mapping[str, Any],
    retries: dict[str, int],
    chosen: Mapping[int, float],
) -> Entry:
    """A failed task is retried (its state schedules it again), caught (its state is left
    for another), or fails the execution; only events of the failed state's own branch
    count."""
    failed = events[index]
    run = run_of.get(event_id(failed, index))
    state = names.get(run) if run is not None else None
    error, cause = details.get("error"), short_cause(details.get("cause"))
    for later_index in range(index + 1, len(events)):
        later = events[later_index]
        kind = str(later.get("type", ""))
        later_id = event_id(later, later_index)
        if kind.startswith("Execution"):
            break
        if run_of.get(later_id) != run:
            continue
        if kind == "TaskScheduled":
            key = state or "?"
            retries[key] = retries.get(key, 0) + 1
            waited = (later["timestamp"] - failed["timestamp"]).total_seconds()
            known = chosen.get(int(failed.get("id", -1)))
            return Entry(
                EntryKind.RETRIED,
                failed["timestamp"],
                state=state,
                error=error,
                text=cause,
                attempt=retries[key],
                seconds=known if known is not None else max(0.0, waited),
                chosen=known is not None,
            )
        if kind.endswith("StateExited"):
            target = next(
                (
                    str(e.get("stateEnteredEventDetails", {}).get("name"))
                    for i, e in enumerate(events[later_index + 1 :], later_index + 1)
                    if str(e.get("type", "")).endswith("StateEntered")
                    and int(e.get("previousEventId", event_id(e, i) - 1)) == later_id
                ),
                None,
            )
            return Entry(
                EntryKind.CAUGHT,
                failed["timestamp"],
                state=state,
                error=error,
                text=cause,
                next_state=target,
            )
    else:  # the history ends here: the execution is still deciding (a retry's wait)
        return Entry(EntryKind.PENDING, failed["timestamp"], state=state, error=error, text=cause)
    return Entry(EntryKind.FAILED, failed["timestamp"], state=state, error=error, text=cause)
