"""A tiny evaluator of the ASL subset the compiler emits, for checking payloads in tests.

Only plain reference paths (``$``, ``$.a.b``) and the context object (``$$.X.Y``); no
intrinsics (the compiler uses none). The embedded engine has the real implementation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def get_path(data: Any, path: str) -> Any:
    if path == "$":
        return data
    assert path.startswith("$."), path
    current = data
    for part in path[2:].split("."):
        if not isinstance(current, dict) or part not in current:
            raise KeyError(f"{path}: no {part!r}")
        current = current[part]
    return current


def evaluate(template: Any, state: Any, context: dict[str, Any]) -> Any:
    """Evaluate a Parameters/ResultSelector template against ``state`` and ``context``."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                assert isinstance(value, str)
                source = context if value.startswith("$$") else state
                path = value[1:] if value.startswith("$$") else value
                out[key[:-2]] = get_path(source, path)
            else:
                out[key] = evaluate(value, state, context)
        return out
    if isinstance(template, list):
        return [evaluate(v, state, context) for v in template]
    return template


def set_path(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """ResultPath: a copy of ``data`` with ``value`` at ``path`` (missing parents are
    created, as ASL does)."""
    if path == "$":
        assert isinstance(value, dict)
        return value
    import copy

    out = copy.deepcopy(data)
    parts = path[2:].split(".")
    target = out
    for part in parts[:-1]:
        target = target.setdefault(part, {})
    target[parts[-1]] = value
    return out


class ScriptedError(Exception):
    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.cause = cause


Script = list[Any] | Callable[[Any], Any]


def walk(
    definition: dict[str, Any],
    execution_input: Any,
    tasks: Mapping[str, Script],
    context: dict[str, Any] | None = None,
) -> tuple[list[str], Any, str | None]:
    """Follow the definition with scripted task outcomes, without retries or waits.

    ``tasks[state]`` is a list consumed in order — a dict is the handler's return value, a
    ``ScriptedError`` is raised as that error — or a function of the task's evaluated
    Payload that returns the value or raises ``ScriptedError`` (a stand-in handler with
    state of its own, e.g. a ledger). Every Payload is evaluated (so a path that does not
    exist when the state runs fails the walk). Returns ``(entered states, final state
    data, Fail error or None)``; an uncaught error is returned as ``(path, data, error)``.
    """
    context = context or {"Execution": {"Name": "e"}, "State": {"Name": "", "RetryCount": 0}}
    context = {**context, "Execution": {**context["Execution"], "Input": execution_input}}
    states = definition["States"]
    name = definition["StartAt"]
    data = execution_input
    path: list[str] = []
    for _ in range(200):
        path.append(name)
        state = states[name]
        context = {**context, "State": {"Name": name, "RetryCount": 0}, "Task": {"Token": "t"}}
        kind = state["Type"]
        if kind == "Pass":
            data = set_path(
                data, state.get("ResultPath", "$"), evaluate(state["Parameters"], data, context)
            )
        elif kind == "Choice":
            name = _choose(state, data)
            continue
        elif kind == "Succeed":
            return path, data, None
        elif kind == "Fail":
            return path, data, str(state["Error"])
        elif kind == "Task":
            parameters = evaluate(state["Parameters"], data, context)  # must not fail
            script = tasks[name]
            try:
                outcome = script(parameters["Payload"]) if callable(script) else script.pop(0)
                if isinstance(outcome, ScriptedError):
                    raise outcome
                body = (
                    outcome
                    if state["Resource"].endswith("waitForTaskToken")
                    else {"Payload": outcome}
                )
                result = evaluate(state["ResultSelector"], body, {})
                data = set_path(data, state["ResultPath"], result)
            except ScriptedError as failure:
                catcher = _catcher(state, failure.error)
                if catcher is None:
                    return path, data, failure.error
                caught = {"Error": failure.error, "Cause": failure.cause}
                data = set_path(data, catcher["ResultPath"], caught)
                name = catcher["Next"]
                continue
        if state.get("End"):
            return path, data, None
        name = state["Next"]
    raise AssertionError(f"no end after 200 states: {path[-10:]}")


def _catcher(state: dict[str, Any], error: str) -> dict[str, Any] | None:
    for catcher in state.get("Catch", []):
        if error in catcher["ErrorEquals"] or "States.ALL" in catcher["ErrorEquals"]:
            return dict(catcher)
    return None


def _choose(state: dict[str, Any], data: Any) -> str:
    for rule in state["Choices"]:
        if get_path(data, rule["Variable"]) == rule["StringEquals"]:
            return str(rule["Next"])
    return str(state["Default"])
