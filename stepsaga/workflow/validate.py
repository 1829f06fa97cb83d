"""The graph check every compiled definition passes (and any hand-written one can).

It finds what would otherwise show up only when a state runs: a ``Next``/``Default``/
``Catch`` target that does not exist, a state nothing reaches, a state from which no
terminal state can be reached, ``States.ALL`` that is not alone and last, a retrier
without ``MaxAttempts`` (or unbounded, uncapped, or naming an error the contract says is
never retried), a resource or state type outside the engine's feature budget, an
intrinsic function, a task-token wait without a token or a timeout.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from stepsaga.workflow.names import LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN
from stepsaga.workflow.retry import MAX_ATTEMPTS, NEVER_RETRIED

RESOURCES = (LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN)
TERMINAL_TYPES = ("Succeed", "Fail")
_COMMON = {"Type", "Comment"}
_IO = {"InputPath", "OutputPath"}
_FLOW = {"Next", "End"}
#: Fields the embedded engine implements, per state type.
FIELDS: dict[str, set[str]] = {
    "Task": _COMMON
    | _IO
    | _FLOW
    | {"Resource", "Parameters", "ResultSelector", "ResultPath"}
    | {"TimeoutSeconds", "HeartbeatSeconds", "Retry", "Catch"},
    "Pass": _COMMON | _IO | _FLOW | {"Parameters", "Result", "ResultPath"},
    "Choice": _COMMON | _IO | {"Choices", "Default"},
    "Wait": _COMMON | _IO | _FLOW | {"Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
    "Succeed": _COMMON | _IO,
    "Fail": _COMMON | {"Error", "Cause"},
}
TOP_LEVEL = {"Comment", "StartAt", "States", "TimeoutSeconds", "Version"}


class DefinitionError(ValueError):
    """The definition fails the graph check; ``problems`` lists every finding."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid state machine definition:\n  " + "\n  ".join(problems))
        self.problems = tuple(problems)


def check_definition(definition: Mapping[str, Any]) -> None:
    """Raise ``DefinitionError`` listing every problem, or return quietly."""
    problems = definition_problems(definition)
    if problems:
        raise DefinitionError(problems)


def transitions(state: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(kind, target)`` for every way out of ``state``: ``next``, ``choice``,
    ``default`` or ``catch``."""
    if isinstance(state.get("Next"), str):
        yield "next", state["Next"]
    for rule in state.get("Choices") or []:
        if isinstance(rule, Mapping) and isinstance(rule.get("Next"), str):
            yield "choice", rule["Next"]
    if isinstance(state.get("Default"), str):
        yield "default", state["Default"]
    for catcher in state.get("Catch") or []:
        if isinstance(catcher, Mapping) and isinstance(catcher.get("Next"), str):
            yield "catch", catcher["Next"]


def is_terminal(state: Mapping[str, Any]) -> bool:
    return state.get("Type") in TERMINAL_TYPES or state.get("End") is True


def definition_problems(definition: Mapping[str, Any]) -> list[str]:
    if not isinstance(definition, Mapping):
        return ["definition: must be a JSON object"]
    problems = [f"definition: unknown field {f!r}" for f in definition if f not in TOP_LEVEL]
    states = definition.get("States")
    if not isinstance(states, Mapping) or not states:
        return [*problems, "definition: States must be a non-empty object"]
    start = definition.get("StartAt")
    if start not in states:
        problems.append(f"definition: StartAt {start!r} is not a state")
    for name, state in states.items():
        if not isinstance(state, Mapping):
            problems.append(f"{name}: must be an object")
            continue
        problems += [f"{name}: {p}" for p in _state_problems(state, states)]
    if isinstance(start, str) and start in states:
        problems += _graph_problems(start, states)
    return problems


def _state_problems(state: Mapping[str, Any], states: Mapping[str, Any]) -> list[str]:
    kind = state.get("Type")
    if kind not in FIELDS:
        return [f"Type {kind!r} is not supported (one of {', '.join(FIELDS)})"]
    problems = [f"field {f!r} is not allowed in a {kind}" for f in state if f not in FIELDS[kind]]
    for _, target in transitions(state):
        if target not in states:
            problems.append(f"transition to {target!r}, which is not a state")
    if kind in ("Task", "Pass", "Wait"):
        has_next, has_end = "Next" in state, state.get("End") is True
        if has_next == has_end:
            problems.append("needs exactly one of Next or End")
    if kind == "Choice" and not state.get("Choices"):
        problems.append("a Choice needs at least one rule in Choices")
    if kind == "Task":
        problems += _task_problems(state)
    problems += _intrinsic_problems(state)
    return problems


def _task_problems(state: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    resource = state.get("Resource")
    if resource not in RESOURCES:
        problems.append(f"Resource {resource!r} is not supported (one of {', '.join(RESOURCES)})")
    if resource == LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN:
        if "$$.Task.Token" not in _values(state.get("Parameters")):
            problems.append("waits for a task token but does not pass $$.Task.Token")
        if "TimeoutSeconds" not in state:
            problems.append("waits for a task token without TimeoutSeconds (it could wait a year)")
    problems += _error_list_problems("Retry", state.get("Retry"))
    problems += _error_list_problems("Catch", state.get("Catch"))
    for index, retrier in enumerate(state.get("Retry") or []):
        if not isinstance(retrier, Mapping):
            continue
        where = f"Retry[{index}]"
        attempts = retrier.get("MaxAttempts")
        if attempts is None:
            problems.append(f"{where} has no MaxAttempts (the ASL default is 3, say so)")
        elif isinstance(attempts, int) and attempts > MAX_ATTEMPTS:
            problems.append(f"{where} MaxAttempts {attempts} is more than {MAX_ATTEMPTS}")
        if isinstance(attempts, int) and attempts > 1 and "MaxDelaySeconds" not in retrier:
            problems.append(f"{where} retries {attempts} times without MaxDelaySeconds")
        for error in retrier.get("ErrorEquals") or []:
            if error in NEVER_RETRIED:
                problems.append(f"{where} retries {error}, which must never be retried")
    return problems


def _error_list_problems(field: str, entries: Any) -> list[str]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [f"{field} must be a list"]
    problems: list[str] = []
    for index, entry in enumerate(entries):
        errors = entry.get("ErrorEquals") if isinstance(entry, Mapping) else None
        if not isinstance(errors, list) or not errors:
            problems.append(f"{field}[{index}] needs a non-empty ErrorEquals")
            continue
        if "States.ALL" in errors:
            if len(errors) > 1:
                problems.append(f"{field}[{index}]: States.ALL must be alone in ErrorEquals")
            if index != len(entries) - 1:
                problems.append(f"{field}[{index}]: States.ALL must be in the last {field} entry")
    return problems


def _values(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _values(item)
    else:
        yield value


def _intrinsic_problems(state: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if str(key).endswith(".$") and isinstance(item, str) and item.startswith("States."):
                    problems.append(f"uses intrinsic function {item.split('(')[0]} in {key!r}")
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    for field in ("Parameters", "ResultSelector"):
        visit(state.get(field))
    return problems


def _graph_problems(start: str, states: Mapping[str, Any]) -> list[str]:
    edges: dict[str, set[str]] = {name: set() for name in states}
    reverse: dict[str, set[str]] = {name: set() for name in states}
    for name, state in states.items():
        if not isinstance(state, Mapping):
            continue
        for _, target in transitions(state):
            if target in states:
                edges[name].add(target)
                reverse[target].add(name)
    reachable = _closure([start], edges)
    terminals = [n for n, s in states.items() if isinstance(s, Mapping) and is_terminal(s)]
    finishing = _closure(terminals, reverse)
    problems = [f"{name}: unreachable from {start}" for name in states if name not in reachable]
    problems += [
        f"{name}: no terminal state can be reached from it"
        for name in states
        if name in reachable and name not in finishing
    ]
    return problems


def _closure(roots: list[str], edges: Mapping[str, set[str]]) -> set[str]:
    seen = set(roots)
    queue = deque(roots)
    while queue:
        for nxt in edges[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen
