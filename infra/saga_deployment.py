"""The saga as the stack consumes it: functions, compiled definition, declared access.

The stack never imports handlers or the workflow DSL's internals; it takes this value, so any
saga (the replacement order, a test stand-in) deploys the same way.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from infra.permissions import FunctionAccess

_PLACEHOLDER: Final = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
#: Logical names become CloudFormation logical ids and placeholder names.
_FUNCTION_NAME: Final = re.compile(r"^[A-Z][A-Za-z0-9]{0,47}$")
_SAGA_NAME: Final = re.compile(r"^[a-z][a-z0-9-]{0,50}$")

ArnFor = Callable[[str], str]


def placeholder_key(function_name: str) -> str:
    """``ReserveStock`` → ``ReserveStockFunctionArn`` (``${…}`` in the ASL)."""
    return f"{function_name}FunctionArn"


def lambda_handler(path: str) -> str:
    """``tasks.reserve_stock:handler`` or ``tasks.reserve_stock.handler`` → the Lambda
    handler string ``tasks.reserve_stock.handler``; checked without importing anything."""
    dotted = path.replace(":", ".")
    parts = dotted.split(".")
    if len(parts) < 2 or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise ValueError(f"handler {path!r}: expected 'package.module.function'")
    return dotted


@dataclass(frozen=True)
class SagaDeployment:
    name: str
    #: logical function name → step handler reference (``package.module:attr``); every
    #: function runs ``stepsaga.lambda_handler.handler``, which loads it.
    functions: Mapping[str, str]
    #: Compiled ASL with ``${<Name>FunctionArn}`` placeholders.
    definition: Mapping[str, Any]
    access: Mapping[str, FunctionAccess]
    #: The saga (``package.module:attr``) and the project's ``Dependencies`` the generic
    #: entry point loads (``STEPSAGA_SAGA``, ``STEPSAGA_DEPENDENCIES``).
    saga_ref: str = ""
    dependencies_ref: str | None = None
    #: The saga's own substitutions helper, if it has one; else ``placeholder_key`` naming.
    substitutions_for: Callable[[ArnFor], Mapping[str, str]] | None = field(
        default=None, compare=False
    )

    def __post_init__(self) -> None:
        if not _SAGA_NAME.match(self.name):
            raise ValueError(f"saga name {self.name!r}: lowercase letters, digits and '-'")
        for name, path in self.functions.items():
            if not _FUNCTION_NAME.match(name):
                raise ValueError(f"function name {name!r}: CamelCase letters and digits")
            lambda_handler(path)
        missing = sorted(set(self.functions) - set(self.access))
        if missing:
            raise ValueError(
                f"no declared access for {', '.join(missing)}: add them to infra/permissions.py"
            )
        unused = sorted(set(self.access) - set(self.functions))
        if unused:
            raise ValueError(f"access declared for unknown functions: {', '.join(unused)}")
        placeholders = set(_PLACEHOLDER.findall(self.definition_json()))
        substituted = set(self.definition_substitutions(lambda name: name))
        if placeholders != substituted:
            raise ValueError(
                "definition placeholders and substitutions differ: "
                f"only in the ASL {sorted(placeholders - substituted)}, "
                f"only substituted {sorted(substituted - placeholders)}"
            )

    def definition_json(self) -> str:
        """The ASL as one plain JSON string (CloudFormation substitutes the placeholders)."""
        return json.dumps(self.definition, separators=(",", ":"))

    def definition_substitutions(self, arn_for: ArnFor) -> dict[str, str]:
        """Placeholder key → ARN of the function, for every function of the saga."""
        if self.substitutions_for is not None:
            return dict(self.substitutions_for(arn_for))
        return {placeholder_key(name): arn_for(name) for name in self.functions}
