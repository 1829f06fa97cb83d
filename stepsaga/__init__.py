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
    from stepsaga._model.inputs import read_json_file, validate_object
    from stepsaga._model.money import Amount, Currency, Money
    from stepsaga._project.dependencies import (
        AwsContext,
        Dependencies,
        LocalContext,
        NoDependencies,
        SupportsFaults,
    )
    from stepsaga._project.home import StateHome
    from stepsaga._project.project import Project
    from stepsaga._util.clock import Clock, ManualClock, SystemClock
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
    "read_json_file": "stepsaga._model.inputs",
    "validate_object": "stepsaga._model.inputs",
    "CaseId": "stepsaga._model.case",
    "Reference": "stepsaga._model.case",
    "StrictModel": "stepsaga._model.case",
    "TenantId": "stepsaga._model.case",
    "Text": "stepsaga._model.case",
    "load_case": "stepsaga._model.case",
    "parse_case": "stepsaga._model.case",
    "Clock": "stepsaga._util.clock",
    "ManualClock": "stepsaga._util.clock",
    "SystemClock": "stepsaga._util.clock",
    "InvalidActionError": "stepsaga.errors",
    "NotFoundError": "stepsaga.errors",
    "StateHome": "stepsaga._project.home",
    "Amount": "stepsaga._model.money",
    "Currency": "stepsaga._model.money",
    "Money": "stepsaga._model.money",
    "Approval": "stepsaga._model.case",
    "ApprovedCase": "stepsaga._model.case",
    "AwsContext": "stepsaga._project.dependencies",
    "Dependencies": "stepsaga._project.dependencies",
    "LocalContext": "stepsaga._project.dependencies",
    "NoDependencies": "stepsaga._project.dependencies",
    "SupportsFaults": "stepsaga._project.dependencies",
    "ActionConflictError": "stepsaga.errors",
    "BusinessRejectedError": "stepsaga.errors",
    "InvalidInputError": "stepsaga.errors",
    "OutcomeUnknownError": "stepsaga.errors",
    "StepSagaError": "stepsaga.errors",
    "TransientError": "stepsaga.errors",
    "Absent": "stepsaga._handlers.step_handler",
    "Call": "stepsaga._handlers.step_handler",
    "CallContext": "stepsaga._handlers.step_handler",
    "Found": "stepsaga._handlers.step_handler",
    "Lookup": "stepsaga._handlers.step_handler",
    "Outcome": "stepsaga._handlers.step_handler",
    "StepHandler": "stepsaga._handlers.step_handler",
    "Project": "stepsaga._project.project",
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
