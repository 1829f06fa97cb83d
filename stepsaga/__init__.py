"""stepsaga: sagas on AWS Step Functions whose side effects happen at most once.

What a team writes its own saga with (everything here is public and documented; anything
not listed in ``__all__`` of a package is internal):

- the saga: ``Saga``, ``Step``, ``Compensate``, ``Escalate``, ``EffectClass``,
  ``RetryPolicy`` (more in ``stepsaga.workflow``);
- its input: ``ApprovedCase`` (tenant, case id, approval) to extend, ``Approval``, and the
  field types stepsaga's own rules use: ``TenantId``, ``CaseId``, ``Reference``, ``Text``,
  ``StrictModel``, money (``Money``, ``Amount``, ``Currency``), ``parse_case``/``load_case``;
- its step handlers: ``StepHandler``, ``Call``, ``CallContext``, ``Outcome``, ``Found``,
  ``Absent``, ``Lookup``;
- its clients: ``Dependencies``, ``LocalContext``, ``AwsContext``, ``SupportsFaults``;
- its own files: ``read_json_file`` (strict JSON: bounded, regular files only, duplicate
  keys refused) and ``validate_object`` (a pydantic validation as one-line
  ``InvalidInputError``);
- its project: ``Project`` (``[tool.stepsaga]`` in ``pyproject.toml``), ``StateHome`` (the
  embedded backend's folder), clocks to inject (``Clock``, ``SystemClock``,
  ``ManualClock``);
- errors (one family, ``StepSagaError``; the class name is the error name Step Functions
  matches): ``TransientError``, ``OutcomeUnknownError``, ``BusinessRejectedError``,
  ``ActionConflictError``, ``InvalidInputError``, ``InvalidActionError``,
  ``NotFoundError`` (all of them in ``stepsaga.errors``).

``stepsaga.ledger`` (the action ledger), ``stepsaga.testing`` (test helpers) and
``stepsaga.backends`` (the operator's verbs) are the other public packages. Names load
lazily, so ``import stepsaga`` costs nothing until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepsaga._lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.case import (
        Approval,
        ApprovedCase,
        CaseId,
        Reference,
        StrictModel,
        TenantId,
        Text,
        load_case,
        parse_case,
    )
    from stepsaga.clock import Clock, ManualClock, SystemClock
    from stepsaga.dependencies import (
        AwsContext,
        Dependencies,
        LocalContext,
        NoDependencies,
        SupportsFaults,
    )
    from stepsaga.errors import (
        ActionConflictError,
        BusinessRejectedError,
        InvalidActionError,
        InvalidInputError,
        NotFoundError,
        OutcomeUnknownError,
        StepSagaError,
        TransientError,
    )
    from stepsaga.handlers.step_handler import (
        Absent,
        Call,
        CallContext,
        Found,
        Lookup,
        Outcome,
        StepHandler,
    )
    from stepsaga.home import StateHome
    from stepsaga.inputs import read_json_file, validate_object
    from stepsaga.money import Amount, Currency, Money
    from stepsaga.project import Project
    from stepsaga.workflow import (
        Compensate,
        EffectClass,
        Escalate,
        ForEach,
        Parallel,
        RetryPolicy,
        Saga,
        Step,
    )

_WHERE = {
    "read_json_file": "stepsaga.inputs",
    "validate_object": "stepsaga.inputs",
    "CaseId": "stepsaga.case",
    "Reference": "stepsaga.case",
    "StrictModel": "stepsaga.case",
    "TenantId": "stepsaga.case",
    "Text": "stepsaga.case",
    "load_case": "stepsaga.case",
    "parse_case": "stepsaga.case",
    "Clock": "stepsaga.clock",
    "ManualClock": "stepsaga.clock",
    "SystemClock": "stepsaga.clock",
    "InvalidActionError": "stepsaga.errors",
    "NotFoundError": "stepsaga.errors",
    "StateHome": "stepsaga.home",
    "Amount": "stepsaga.money",
    "Currency": "stepsaga.money",
    "Money": "stepsaga.money",
    "Approval": "stepsaga.case",
    "ApprovedCase": "stepsaga.case",
    "AwsContext": "stepsaga.dependencies",
    "Dependencies": "stepsaga.dependencies",
    "LocalContext": "stepsaga.dependencies",
    "NoDependencies": "stepsaga.dependencies",
    "SupportsFaults": "stepsaga.dependencies",
    "ActionConflictError": "stepsaga.errors",
    "BusinessRejectedError": "stepsaga.errors",
    "InvalidInputError": "stepsaga.errors",
    "OutcomeUnknownError": "stepsaga.errors",
    "StepSagaError": "stepsaga.errors",
    "TransientError": "stepsaga.errors",
    "Absent": "stepsaga.handlers.step_handler",
    "Call": "stepsaga.handlers.step_handler",
    "CallContext": "stepsaga.handlers.step_handler",
    "Found": "stepsaga.handlers.step_handler",
    "Lookup": "stepsaga.handlers.step_handler",
    "Outcome": "stepsaga.handlers.step_handler",
    "StepHandler": "stepsaga.handlers.step_handler",
    "Project": "stepsaga.project",
    "Compensate": "stepsaga.workflow",
    "EffectClass": "stepsaga.workflow",
    "Escalate": "stepsaga.workflow",
    "ForEach": "stepsaga.workflow",
    "Parallel": "stepsaga.workflow",
    "RetryPolicy": "stepsaga.workflow",
    "Saga": "stepsaga.workflow",
    "Step": "stepsaga.workflow",
}

__all__ = [
    "Absent",
    "ActionConflictError",
    "Amount",
    "Approval",
    "ApprovedCase",
    "AwsContext",
    "BusinessRejectedError",
    "Call",
    "CallContext",
    "CaseId",
    "Clock",
    "Compensate",
    "Currency",
    "Dependencies",
    "EffectClass",
    "Escalate",
    "ForEach",
    "Found",
    "InvalidActionError",
    "InvalidInputError",
    "LocalContext",
    "Lookup",
    "ManualClock",
    "Money",
    "NoDependencies",
    "NotFoundError",
    "Outcome",
    "OutcomeUnknownError",
    "Parallel",
    "Project",
    "Reference",
    "RetryPolicy",
    "Saga",
    "StateHome",
    "Step",
    "StepHandler",
    "StepSagaError",
    "StrictModel",
    "SupportsFaults",
    "SystemClock",
    "TenantId",
    "Text",
    "TransientError",
    "__version__",
    "load_case",
    "parse_case",
    "read_json_file",
    "validate_object",
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


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _package_version()
        return value
    return _names(name)
