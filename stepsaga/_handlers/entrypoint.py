"""The one Lambda entry point of every stepsaga function: ``stepsaga.lambda_handler.handler``.

A function's environment names what it is: ``STEPSAGA_SAGA`` (the saga, ``module:attr``),
``STEPSAGA_FUNCTION`` (which of its logical functions: ``ChargeCard``, ``Reconcile``…) and
``STEPSAGA_DEPENDENCIES`` (the project's ``Dependencies``). Importing opens nothing. The
first invocation in a process reads the environment (``settings.py``), builds the app's
clients (``Dependencies.aws``), ``HandlerDeps`` and the saga's handlers once; warm starts
reuse them. A configuration problem is raised as ``TransientError`` and not cached: the
step fails after its retries and can be redriven once the configuration is fixed — never
compensated for a deployment mistake.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepsaga._handlers.guard import Handler
from stepsaga.errors import StepSagaError, TransientError

Builder = Callable[[], "Entry"]


@dataclass(frozen=True)
class Entry:
    """What one process serves: its function's name and the saga's handlers."""

    function: str
    handlers: Mapping[str, Handler]


_lock = threading.Lock()
_entry: Entry | None = None


def _from_environment() -> Entry:
    from stepsaga._handlers.registry import build_handlers
    from stepsaga._handlers.settings import deps_from_settings, load_settings
    from stepsaga._model.refs import load_ref
    from stepsaga._project.dependencies import AwsContext, NoDependencies
    from stepsaga._util.clock import SystemClock
    from stepsaga.errors import InvalidInputError
    from stepsaga.workflow._loader import load_saga

    settings = load_settings()
    if not settings.saga:
        raise InvalidInputError(
            "environment: STEPSAGA_SAGA must name the saga (package.module:attr)", field="saga"
        )
    saga = load_saga(settings.saga, "STEPSAGA_SAGA")
    factory: Any = (
        load_ref(settings.dependencies, "STEPSAGA_DEPENDENCIES")
        if settings.dependencies
        else NoDependencies()
    )
    if isinstance(factory, type):
        factory = factory()
    clock = SystemClock()
    clients = factory.aws(AwsContext(clock=clock, environ=dict(os.environ)))
    handlers = build_handlers(deps_from_settings(settings, clients, clock=clock), saga)
    if not settings.function:
        raise InvalidInputError(
            "environment: STEPSAGA_FUNCTION must name the function (e.g. ReserveStock)",
            field="function",
        )
    if settings.function not in handlers:
        raise InvalidInputError(
            f"environment: STEPSAGA_FUNCTION={settings.function} is not a function of saga "
            f"{saga.name} ({', '.join(handlers)})",
            field="function",
        )
    return Entry(function=settings.function, handlers=handlers)


def shared_entry(build: Builder = _from_environment) -> Entry:
    """The process's handlers, built on first use."""
    global _entry
    with _lock:
        if _entry is None:
            try:
                _entry = build()
            except StepSagaError as exc:
                raise TransientError(f"handler configuration: {exc.message}", **exc.data) from exc
            except Exception as exc:
                raise TransientError(f"handler configuration: {type(exc).__name__}: {exc}") from exc
        return _entry


def reset() -> None:
    """Forget the built handlers (tests; a process that changed its environment)."""
    global _entry
    with _lock:
        _entry = None


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The Lambda handler: runs the function ``STEPSAGA_FUNCTION`` names."""
    entry = shared_entry()
    return entry.handlers[entry.function](event, context)
