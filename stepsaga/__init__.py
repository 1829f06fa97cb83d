"""stepsaga: sagas on AWS Step Functions whose side effects happen at most once.

What a team writes its own saga with (everything here is public and documented; anything
not listed in ``__all__`` of a package is internal):

- the saga: ``Saga``, ``Step``, ``Compensate``, ``Escalate``, ``EffectClass``,
  ``RetryPolicy`` (more in ``stepsaga.workflow``);
- its input: ``ApprovedCase`` (tenant, case id, approval) to extend, ``Approval``;
- its step handlers: ``StepHandler``, ``Call``, ``CallContext``, ``Outcome``, ``Found``,
  ``Absent``, ``Lookup``;
- its clients: ``Dependencies``, ``LocalContext``, ``AwsContext``, ``SupportsFaults``;
- its project: ``Project`` (``[tool.stepsaga]`` in ``pyproject.toml``);
- errors a handler raises: ``TransientError``, ``OutcomeUnknownError``,
  ``BusinessRejectedError``, ``ActionConflictError``, ``InvalidInputError``.

``stepsaga.ledger`` (the action ledger), ``stepsaga.testing`` (test helpers) and
``stepsaga.backends`` (the operator's verbs) are the other public packages. Names load
lazily, so ``import stepsaga`` costs nothing until one is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepsaga.case import Approval, ApprovedCase
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
        InvalidInputError,
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
    from stepsaga.project import Project
    from stepsaga.workflow import (
        Compensate,
        EffectClass,
        Escalate,
        RetryPolicy,
        Saga,
        Step,
    )

_WHERE = {
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
    "RetryPolicy": "stepsaga.workflow",
    "Saga": "stepsaga.workflow",
    "Step": "stepsaga.workflow",
}

__all__ = [
    "Absent",
    "ActionConflictError",
    "Approval",
    "ApprovedCase",
    "AwsContext",
    "BusinessRejectedError",
    "Call",
    "CallContext",
    "Compensate",
    "Dependencies",
    "EffectClass",
    "Escalate",
    "Found",
    "InvalidInputError",
    "LocalContext",
    "Lookup",
    "NoDependencies",
    "Outcome",
    "OutcomeUnknownError",
    "Project",
    "RetryPolicy",
    "Saga",
    "Step",
    "StepHandler",
    "StepSagaError",
    "SupportsFaults",
    "TransientError",
    "__version__",
]


def _package_version() -> str:
    """The installed distribution's version (``importlib.metadata`` costs ~40 ms to import,
    so only ``--version`` and readers of ``__version__`` pay for it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stepsaga")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = globals()["__version__"] = _package_version()
        return value
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'stepsaga' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
