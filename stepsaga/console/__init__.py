"""``stepsaga console``: a local web app over the backend the CLI uses.

:func:`create_app` builds it from a :class:`ConsoleConfig`; :func:`serve` runs it with
uvicorn. Templates and static files ship in the wheel (``templates/``, ``static/``);
nothing is loaded from anywhere else. Needs the ``console`` extra (Starlette, Jinja2,
uvicorn, python-multipart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.console._app import ConsoleConfig, create_app
    from stepsaga.console._serve import serve

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "ConsoleConfig": "stepsaga.console._app",
    "create_app": "stepsaga.console._app",
    "serve": "stepsaga.console._serve",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "ConsoleConfig",
    "create_app",
    "serve",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
