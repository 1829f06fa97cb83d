"""Build ASL ``Parameters``/``Payload`` templates from the event models.

The compiler never writes a payload by hand: ``template(Model, field=…)`` refuses a
template whose field names differ from ``Model``'s, so the state machine and the handlers'
models cannot drift apart. ``Path`` values become ``"field.$": "<path>"`` (JSONPath into the
state, or ``$$.…`` into the context object); everything else is a constant.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True)
class Path:
    """A JSONPath evaluated at run time (``$$.Execution.Input.reserve``, ``$.item``)."""

    path: str

    def __post_init__(self) -> None:
        if not self.path.startswith("$"):
            raise ValueError(f"not a path: {self.path!r}")


def template(model: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """The payload template for ``model``: every required model field, nothing else (a
    field with a default may be left out: the handler then sees its default)."""
    expected = set(model.model_fields)
    required = {n for n, f in model.model_fields.items() if f.is_required()}
    given = set(fields)
    if not required <= given <= expected:
        missing = ", ".join(sorted(required - given)) or "-"
        extra = ", ".join(sorted(given - expected)) or "-"
        raise TypeError(
            f"payload template for {model.__name__} differs from the model "
            f"(missing: {missing}; unknown: {extra})"
        )
    out: dict[str, Any] = {}
    for name in model.model_fields:  # the model's order, for stable output
        if name not in fields:
            continue
        value = fields[name]
        if isinstance(value, Path):
            out[f"{name}.$"] = value.path
        elif isinstance(value, Enum):
            out[name] = value.value
        else:
            out[name] = value
    return out


def selector(model: type[BaseModel], source: str) -> dict[str, Any]:
    """A ``ResultSelector`` that keeps exactly ``model``'s fields from ``source``
    (``$.Payload`` for a Lambda response, ``$`` for a task-token callback's output)."""
    prefix = source.rstrip(".")
    return {f"{name}.$": f"{prefix}.{name}" for name in model.model_fields}
