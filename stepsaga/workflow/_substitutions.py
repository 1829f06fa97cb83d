"""Fill the compiled ASL's ``${<Function>FunctionArn}`` placeholders.

CDK passes ``Saga.definition_substitutions(arn_for)`` as the state machine's
``DefinitionSubstitutions``; the embedded engine and the tests call ``render`` with the
same mapping to get the definition that actually runs (or that the template must equal).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def placeholders(definition: Any) -> set[str]:
    """Every substitution key the definition still refers to."""
    return {key for text in _strings(definition) for key in _PLACEHOLDER.findall(text)}


def render(definition: dict[str, Any], substitutions: dict[str, str]) -> dict[str, Any]:
    """A copy of ``definition`` with every ``${Key}`` replaced by ``substitutions[Key]``.

    A placeholder without a substitution is refused (``KeyError`` naming it): a
    half-rendered definition would fail only when that state runs.
    """
    missing = sorted(placeholders(definition) - set(substitutions))
    if missing:
        raise KeyError(f"no substitution for {', '.join(missing)}")

    def replace(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: substitutions[m.group(1)], text)

    rendered = _walk(definition, replace)
    assert isinstance(rendered, dict)
    return rendered


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _walk(value: Any, on_string: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return on_string(value)
    if isinstance(value, dict):
        return {_walk(k, on_string): _walk(v, on_string) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, on_string) for v in value]
    return value
