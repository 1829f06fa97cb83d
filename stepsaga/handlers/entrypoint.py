"""Lambda entry points: ``handler = lambda_entry("RefundPayment")`` in each task module.

Importing a handler module opens nothing: ``lambda_entry`` only remembers the function
name. The first invocation in a process reads the environment (``settings.py``), builds
``HandlerDeps`` and every handler of the saga once, and later invocations (warm starts)
reuse them. A configuration problem is raised as ``TransientError`` and not cached: the
step fails after its retries and can be redriven once the configuration is fixed — never
compensated for a deployment mistake.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from stepsaga.errors import StepSagaError, TransientError
from stepsaga.handlers.guard import Handler

Builder = Callable[[], dict[str, Handler]]

_lock = threading.Lock()
_handlers: dict[str, Handler] | None = None


def _from_environment() -> dict[str, Handler]:
    from stepsaga.handlers.registry import build_handlers
    from stepsaga.handlers.settings import deps_from_settings, load_settings

    return build_handlers(deps_from_settings(load_settings()))


def shared_handlers(build: Builder = _from_environment) -> dict[str, Handler]:
    """The process's handlers, built on first use."""
    global _handlers
    with _lock:
        if _handlers is None:
            try:
                _handlers = build()
            except StepSagaError as exc:
                raise TransientError(f"handler configuration: {exc.message}", **exc.data) from exc
            except Exception as exc:
                raise TransientError(f"handler configuration: {type(exc).__name__}: {exc}") from exc
        return _handlers


def reset() -> None:
    """Forget the built handlers (tests; a process that changed its environment)."""
    global _handlers
    with _lock:
        _handlers = None


class LambdaEntry:
    """A module-level Lambda handler for one logical function of the saga."""

    def __init__(self, function: str) -> None:
        self.function = function

    def __call__(self, event: Any, context: Any) -> dict[str, Any]:
        handler = shared_handlers().get(self.function)
        if handler is None:
            raise TransientError(f"no handler named {self.function}", function=self.function)
        return handler(event, context)

    def __repr__(self) -> str:
        return f"LambdaEntry({self.function!r})"


def lambda_entry(function: str) -> LambdaEntry:
    return LambdaEntry(function)
