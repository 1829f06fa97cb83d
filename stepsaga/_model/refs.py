"""``package.module:attr`` references: how a project names its sagas, its dependencies and
its step handlers (in ``pyproject.toml``, in a Lambda function's environment, in a
``Step``). Every failure is one ``InvalidInputError`` line naming the reference."""

from __future__ import annotations

import importlib
import re
from typing import Any

from stepsaga.errors import InvalidInputError

REF = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def load_ref(ref: object, what: str, *, default_attr: str | None = None) -> Any:
    """Import ``module`` and return its ``attr``. ``what`` names the setting in errors."""
    if isinstance(ref, str) and default_attr and ":" not in ref:
        ref = f"{ref}:{default_attr}"
    if not isinstance(ref, str) or not REF.match(ref):
        raise InvalidInputError(f"{what}: expected 'package.module:attr', got {ref!r}", field=what)
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name + ".").startswith(exc.name + "."):
            raise InvalidInputError(
                f"{what} {ref!r}: no module named {exc.name!r}", field=what
            ) from None
        raise
    value = getattr(module, attr, None)
    if value is None:
        raise InvalidInputError(
            f"{what} {ref!r}: module {module_name} has no attribute {attr!r}", field=what
        )
    return value
