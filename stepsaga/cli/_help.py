"""How ``-h`` renders options: a flag takes no value, so it shows no value type.

typer 0.29's rich help prints every option's type, flags included (``--json <bool>``,
``--help -h <bool>``), which reads as if the flag wanted ``--json true``. Its plain help
already leaves flags bare; :func:`bare_flags` makes the rich one do the same, for our
commands and the project's alike (they share typer's option class). Remove this once
typer renders flags without a type itself (the help tests will say so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer.core import TyperOption

_PATCHED = "_stepsaga_bare_flags"


def bare_flags() -> None:
    """Render flags (and counters) without a value type in rich help. Idempotent."""
    if getattr(TyperOption.display_type_rich, _PATCHED, False):
        return
    original: Callable[[TyperOption, Any], str | None] = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        return original(self, ctx)

    setattr(display_type_rich, _PATCHED, True)
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
