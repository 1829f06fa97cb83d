"""Sagas compiled to validated Amazon States Language.

The saga DSL itself (``Saga``, ``Step``, ``Parallel``, ``ForEach``, ``Compensate``,
``Escalate``, ``EffectClass``, ``RetryPolicy``) is exported by ``stepsaga``. Here: the
events a step's handler receives (:class:`StepEvent`, :class:`CompensationEvent`,
:class:`EscalationEvent`), a retry policy's :class:`JitterStrategy`, a saga's
:class:`QueryLanguage`, and :func:`compile` (a saga to its ASL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.workflow._compiler import compile
    from stepsaga.workflow._events import CompensationEvent, EscalationEvent, StepEvent
    from stepsaga.workflow._names import QueryLanguage
    from stepsaga.workflow._retry import JitterStrategy

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
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
]

__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
