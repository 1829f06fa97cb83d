"""Small builders for ASL in tests (the compiler is tested elsewhere)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stepsaga.engine import LocalEngine
from stepsaga.engine._definition import LAMBDA_INVOKE


def task(function: str, **fields: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {"FunctionName": function, "Payload.$": "$"},
    }
    state.update(fields)
    if "Next" not in state and "End" not in state:
        state["End"] = True
    return state


def machine(states: dict[str, Any], start: str | None = None) -> dict[str, Any]:
    return {"StartAt": start or next(iter(states)), "States": states}


def types(engine: LocalEngine, arn: str) -> list[str]:
    return [e["type"] for e in engine.get_execution_history(arn)["events"]]


def entered(engine: LocalEngine, arn: str) -> list[str]:
    return [
        e["stateEnteredEventDetails"]["name"]
        for e in engine.get_execution_history(arn)["events"]
        if e["type"].endswith("StateEntered")
    ]


def state_of(events: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Each event's state: the ``…StateEntered`` its ``previousEventId`` chain leads back to
    (each branch and iteration chains its own events)."""
    by_id = {e["id"]: e for e in events}
    names: dict[int, str] = {}
    for event in events:
        cursor: Mapping[str, Any] | None = event
        while cursor is not None and "stateEnteredEventDetails" not in cursor:
            cursor = by_id.get(cursor.get("previousEventId", 0))
        if cursor is not None:
            names[event["id"]] = cursor["stateEnteredEventDetails"]["name"]
    return names


def count(engine: LocalEngine, arn: str, event_type: str) -> int:
    return types(engine, arn).count(event_type)


class Script:
    """A handler that plays back outcomes: values are returned, exceptions raised."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.events: list[Any] = []

    def __call__(self, event: Any, context: Any) -> Any:
        self.events.append(event)
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
