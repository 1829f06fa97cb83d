"""Sagas compiled to validated Amazon States Language.

The saga DSL itself (``Saga``, ``Step``, ``Parallel``, ``ForEach``, ``Compensate``,
``Escalate``, ``EffectClass``, ``RetryPolicy``) is exported by ``stepsaga``. Here: the
events a step's handler receives (:class:`StepEvent`, :class:`CompensationEvent`,
:class:`EscalationEvent`), a retry policy's :class:`JitterStrategy`, a saga's
:class:`QueryLanguage`, :func:`compile` (a saga to its ASL), and the rules a saga's input
is read with, for the project's own files too: :func:`read_json_file` (strict JSON:
bounded, regular files only, duplicate keys refused) and :func:`validate_object` (a
pydantic validation as one-line ``InvalidInputError`` naming the field).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga._model.inputs import read_json_file, validate_object
    from stepsaga.workflow._compiler import compile
    from stepsaga.workflow._events import CompensationEvent, EscalationEvent, StepEvent
    from stepsaga.workflow._names import QueryLanguage
    from stepsaga.workflow._retry import JitterStrategy

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "read_json_file": "stepsaga._model.inputs",
    "validate_object": "stepsaga._model.inputs",
    "compile": "stepsaga.workflow._compiler",
    "CompensationEvent": "stepsaga.workflow._events",
    "EscalationEvent": "stepsaga.workflow._events",
    "StepEvent": "stepsaga.workflow._events",
    "QueryLanguage": "stepsaga.workflow._names",
    "JitterStrategy": "stepsaga.workflow._retry",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "CompensationEvent",
    "EscalationEvent",
    "JitterStrategy",
    "QueryLanguage",
    "StepEvent",
    "compile",
    "read_json_file",
    "validate_object",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
