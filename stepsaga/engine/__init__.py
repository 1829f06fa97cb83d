"""The embedded Step Functions engine: ASL (JSONPath or JSONata) on SQLite with AWS semantics.

:class:`LocalEngine` (boto3-flavoured), :func:`load` (parse and check a definition),
:class:`MockConfig` (Step Functions Local mock files), :data:`Handler` (what a Lambda task
calls), and :data:`REFUSED` / :data:`STATE_FIELDS`: the one statement of what the engine
does not / does implement. Its API errors (``ExecutionDoesNotExist``…) are in
``stepsaga.errors``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.engine._definition import REFUSED, STATE_FIELDS, load
    from stepsaga.engine._engine import LocalEngine
    from stepsaga.engine._lambda_invoke import Handler
    from stepsaga.engine._mockconfig import MockConfig

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "REFUSED": "stepsaga.engine._definition",
    "STATE_FIELDS": "stepsaga.engine._definition",
    "load": "stepsaga.engine._definition",
    "LocalEngine": "stepsaga.engine._engine",
    "Handler": "stepsaga.engine._lambda_invoke",
    "MockConfig": "stepsaga.engine._mockconfig",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "REFUSED",
    "STATE_FIELDS",
    "Handler",
    "LocalEngine",
    "MockConfig",
    "load",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
