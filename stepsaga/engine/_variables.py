"""Workflow variables: ``Assign`` in both query languages, and their scopes.

The rules, as AWS documents them:

* ``Assign`` is a JSON object of variable names to values. In a JSONPath state a key ending
  in ``.$`` takes a path or an intrinsic function (``"total.$": "$.Payload.total"``), as in
  ``Parameters``; in a JSONata state any string may be a ``{% … %}`` expression.
* Every value is computed from what the state saw when it was *entered*: the new values take
  effect once the state exits, so ``Output`` (and the other assignments of the same state)
  read the old ones. A variable is read as ``$name`` (JSONPath: ``$name.a.b``).
* The top level is one scope; every ``Parallel`` branch and ``Map`` iteration has a scope of
  its own that reads the enclosing ones but cannot assign their variables, and whose own
  variables vanish when it ends (data leaves a branch through its output only).
* Names start with a letter or ``_``, then letters, digits or ``_``, at most 80 characters;
  ``states`` is reserved for JSONata's ``$states``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepsaga.engine import _jsonata_eval as jsonata_eval
from stepsaga.engine import _payload as payload
from stepsaga.engine._errors import runtime_error
from stepsaga.engine._paths import VARIABLE_NAME
from stepsaga.errors import TemplateError

_MAX_NAME = 80
RESERVED = frozenset({"states"})


class AssignError(ValueError):
    """An ``Assign`` the engine cannot compile; ``field`` is where."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Assign:
    """A compiled ``Assign``: evaluates to the ``{name: value}`` it assigns."""

    evaluate: Callable[[payload.Env], dict[str, Any]]
    names: tuple[str, ...]


def compile_assign(raw: Any, field: str, *, jsonata: bool) -> Assign:
    if not isinstance(raw, dict):
        raise AssignError(field, "Assign must be a JSON object of variable names to values")
    names = []
    for key in raw:
        name = key[:-2] if key.endswith(".$") and not jsonata else key
        check_name(name, f"{field}.{key}")
        names.append(name)
    if len(set(names)) != len(names):
        raise AssignError(field, "a variable is assigned twice (as 'x' and 'x.$')")
    if jsonata:
        try:
            template = jsonata_eval.compile_template(raw, field)
        except TemplateError as exc:
            raise AssignError(exc.field, str(exc)) from None
    else:
        try:
            template = payload.compile_template(raw, field)  # type: ignore[assignment]
        except TemplateError as exc:
            raise AssignError(exc.field, str(exc)) from None
    evaluate = template.evaluate
    return Assign(evaluate=lambda env: dict(evaluate(env)), names=tuple(names))


def check_name(name: str, field: str) -> None:
    if not VARIABLE_NAME.fullmatch(name) or len(name) > _MAX_NAME:
        raise AssignError(
            field,
            f"{name!r} is not a variable name (a letter or '_', then letters, digits or '_', "
            f"at most {_MAX_NAME} characters)",
        )
    if name in RESERVED:
        raise AssignError(field, f"{name!r} is reserved")


@dataclass(frozen=True)
class Scope:
    """The variables one frame sees: ``outer`` (read only) and its ``own``."""

    outer: Mapping[str, Any]
    own: Mapping[str, Any]

    @staticmethod
    def top(own: Mapping[str, Any] | None = None) -> Scope:
        return Scope({}, dict(own or {}))

    def inner(self, own: Mapping[str, Any] | None = None) -> Scope:
        """The scope of a branch or iteration started in this one."""
        return Scope(self.visible(), dict(own or {}))

    def visible(self) -> dict[str, Any]:
        return {**self.outer, **self.own}

    def assigned(self, values: Mapping[str, Any]) -> Scope:
        """This scope after ``values`` were assigned; an outer variable cannot be."""
        for name in values:
            if name in self.outer and name not in self.own:
                raise runtime_error(
                    f"The variable '${name}' belongs to an enclosing scope: a Parallel branch "
                    "or Map iteration can read it but not assign it"
                )
        return Scope(self.outer, {**self.own, **values})

    def own_json(self) -> str | None:
        return json.dumps(self.own, separators=(",", ":"), ensure_ascii=False) if self.own else None


def assigned_details(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``assignedVariables`` of a ``…StateExited`` event: each value as JSON text."""
    return {
        "assignedVariables": {
            name: json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            for name, value in values.items()
        },
        "assignedVariablesDetails": {"truncated": False},
    }
