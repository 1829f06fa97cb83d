"""A tiny evaluator of the ASL subset the compiler emits, for checking payloads in tests.

Only plain reference paths (``$``, ``$.a.b``) and the context object (``$$.X.Y``); no
intrinsics (the compiler uses none). The embedded engine has the real implementation.
"""

from __future__ import annotations

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
    """ResultPath: a copy of ``data`` with ``value`` at ``path`` (parents must exist)."""
    if path == "$":
        assert isinstance(value, dict)
        return value
    import copy

    out = copy.deepcopy(data)
    parts = path[2:].split(".")
    target = out
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = value
    return out
