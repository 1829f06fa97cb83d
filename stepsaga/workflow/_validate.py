"""The check every compiled definition passes (and any hand-written one can).

What the embedded engine implements is the engine's to say: the definition must load
(``stepsaga.engine.load``, which refuses what ``stepsaga.engine.REFUSED`` lists and checks
fields, paths, targets and reachability), so nothing here repeats that list. On top, the
team's rules, in the top-level machine and in every ``Parallel`` branch and ``Map`` item
processor: every state can reach a terminal state, ``States.ALL`` is alone and last, a
retrier states ``MaxAttempts`` (bounded, capped, never naming an error the contract says
is never retried), a task-token wait passes the token and has a timeout, and no
intrinsic function is used (the compiler emits none; an engine-supported one would still
be a function the reference interpreters disagree on).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from stepsaga.engine._definition import LAMBDA_INVOKE_WAIT, load
from stepsaga.errors import DefinitionError, InvalidDefinition
from stepsaga.workflow._retry import MAX_ATTEMPTS, NEVER_RETRIED

TERMINAL_TYPES = ("Succeed", "Fail")


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
    try:
        load(definition)
    except InvalidDefinition as exc:
        return [f"the embedded engine refuses it: {exc}"]
    return _machine_problems(definition)


def nested_machines(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The machines a ``Parallel`` (its branches) or ``Map`` (its item processor) runs."""
    if state.get("Type") == "Parallel":
        return [b for b in state.get("Branches") or [] if isinstance(b, Mapping)]
    if state.get("Type") == "Map":
        processor = state.get("ItemProcessor") or state.get("Iterator")
        return [processor] if isinstance(processor, Mapping) else []
    return []


def _machine_problems(machine: Mapping[str, Any]) -> list[str]:
    states: Mapping[str, Any] = machine["States"]
    problems: list[str] = []
    for name, state in states.items():
        problems += [f"{name}: {p}" for p in _state_problems(state)]
        for nested in nested_machines(state):
            problems += _machine_problems(nested)
    problems += _graph_problems(str(machine["StartAt"]), states)
    return problems


def _state_problems(state: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if state.get("Type") == "Task":
        problems += _task_problems(state)
    elif state.get("Type") in ("Parallel", "Map"):
        problems += _error_list_problems("Retry", state.get("Retry"))
        problems += _error_list_problems("Catch", state.get("Catch"))
    problems += _intrinsic_problems(state)
    return problems


def _task_problems(state: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    resource = state.get("Resource")
    if resource == LAMBDA_INVOKE_WAIT:
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

    for field in ("Parameters", "ResultSelector", "ItemSelector"):
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
