"""stepsaga: sagas on AWS Step Functions whose side effects happen at most once.

What a team writes its own saga with (the names below; every other name lives in a
``_``-prefixed module and is internal):

- the saga: ``Saga``, ``Step``, ``Parallel``, ``ForEach``, ``Compensate``, ``Escalate``,
  ``EffectClass``, ``RetryPolicy``;
- its input: ``ApprovedCase`` (tenant, case id, ``CaseApproval``) to extend, the field
  types stepsaga's own rules use (``TenantId``, ``CaseId``, ``Reference``, ``Text``),
  ``StrictModel`` (the base of its own nested models: unknown fields refused, frozen), money
  (``Money``, ``Amount``, ``Currency``), ``parse_case``/``load_case``;
- its step handlers: ``StepHandler``, ``Call``, ``CallContext``, ``Outcome``, ``Found``,
  ``Absent``, ``Lookup``;
- its clients: ``Dependencies``, ``NoDependencies``, ``LocalContext``, ``AwsContext``;
- its project: ``Project`` (``[tool.stepsaga]`` in ``pyproject.toml``), ``StateHome`` (the
  embedded backend's folder), clocks to inject (``Clock``, ``SystemClock``,
  ``ManualClock``).

Errors are imported from ``stepsaga.errors`` (one family, ``StepSagaError``; the class name
is the error name Step Functions matches). The other public packages: ``stepsaga.workflow``,
``stepsaga.ledger``, ``stepsaga.engine``, ``stepsaga.backends``, ``stepsaga.testing``,
``stepsaga.cdk``, ``stepsaga.agents``, ``stepsaga.console``, ``stepsaga.cli``,
``stepsaga.lambdas``, ``stepsaga.scaffold`` (docs/architecture.md). Names load lazily, so
``import stepsaga`` costs nothing until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga._handlers.step_handler import (
        Absent,
        Call,
        CallContext,
        Found,
        Lookup,
        Outcome,
        StepHandler,
    )
    from stepsaga._model.case import (
        ApprovedCase,
        CaseApproval,
        CaseId,
        Reference,
        StrictModel,
        TenantId,
        Text,
        load_case,
        parse_case,
    )
    from stepsaga._model.money import Amount, Currency, Money
    from stepsaga._project.dependencies import (
        AwsContext,
        Dependencies,
        LocalContext,
        NoDependencies,
    )
    from stepsaga._project.home import StateHome
    from stepsaga._project.project import Project
    from stepsaga._util.clock import Clock, ManualClock, SystemClock
    from stepsaga.workflow._effects import EffectClass
    from stepsaga.workflow._retry import RetryPolicy
    from stepsaga.workflow._saga import Compensate, Escalate, ForEach, Parallel, Saga, Step

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "Absent": "stepsaga._handlers.step_handler",
    "Call": "stepsaga._handlers.step_handler",
    "CallContext": "stepsaga._handlers.step_handler",
    "Found": "stepsaga._handlers.step_handler",
    "Lookup": "stepsaga._handlers.step_handler",
    "Outcome": "stepsaga._handlers.step_handler",
    "StepHandler": "stepsaga._handlers.step_handler",
    "ApprovedCase": "stepsaga._model.case",
    "CaseApproval": "stepsaga._model.case",
    "CaseId": "stepsaga._model.case",
    "Reference": "stepsaga._model.case",
    "StrictModel": "stepsaga._model.case",
    "TenantId": "stepsaga._model.case",
    "Text": "stepsaga._model.case",
    "load_case": "stepsaga._model.case",
    "parse_case": "stepsaga._model.case",
    "Amount": "stepsaga._model.money",
    "Currency": "stepsaga._model.money",
    "Money": "stepsaga._model.money",
    "AwsContext": "stepsaga._project.dependencies",
    "Dependencies": "stepsaga._project.dependencies",
    "LocalContext": "stepsaga._project.dependencies",
    "NoDependencies": "stepsaga._project.dependencies",
    "StateHome": "stepsaga._project.home",
    "Project": "stepsaga._project.project",
    "Clock": "stepsaga._util.clock",
    "ManualClock": "stepsaga._util.clock",
    "SystemClock": "stepsaga._util.clock",
    "EffectClass": "stepsaga.workflow._effects",
    "RetryPolicy": "stepsaga.workflow._retry",
    "Compensate": "stepsaga.workflow._saga",
    "Escalate": "stepsaga.workflow._saga",
    "ForEach": "stepsaga.workflow._saga",
    "Parallel": "stepsaga.workflow._saga",
    "Saga": "stepsaga.workflow._saga",
    "Step": "stepsaga.workflow._saga",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "Absent",
    "Amount",
    "ApprovedCase",
    "AwsContext",
    "Call",
    "CallContext",
    "CaseApproval",
    "CaseId",
    "Clock",
    "Compensate",
    "Currency",
    "Dependencies",
    "EffectClass",
    "Escalate",
    "ForEach",
    "Found",
    "LocalContext",
    "Lookup",
    "ManualClock",
    "Money",
    "NoDependencies",
    "Outcome",
    "Parallel",
    "Project",
    "Reference",
    "RetryPolicy",
    "Saga",
    "StateHome",
    "Step",
    "StepHandler",
    "StrictModel",
    "SystemClock",
    "TenantId",
    "Text",
    "__version__",
    "load_case",
    "parse_case",
]


def _package_version() -> str:
    """The installed distribution's version (``importlib.metadata`` costs ~40 ms to import,
    so only ``--version`` and readers of ``__version__`` pay for it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stepsaga")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


_names = lazy_getattr(__name__, _WHERE)


if TYPE_CHECKING:
    __version__: str
else:  # so mypy sees only the names imported above

    def __getattr__(name: str) -> Any:
        if name == "__version__":
            value = globals()["__version__"] = _package_version()
            return value
        return _names(name)


def __dir__() -> list[str]:
    return __all__
