"""The saga as the construct consumes it: functions, compiled definition, references.

Built from a project (``SagaDeployment.of(project, name)``) or by hand (tests); the construct
never imports handlers, only names them.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from stepsaga._project.project import Project
from stepsaga.errors import DeploymentError
from stepsaga.workflow import compile as compile_saga
from stepsaga.workflow._names import substitution_key

__all__ = ["SagaDeployment", "lambda_handler"]

_PLACEHOLDER: Final = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
#: Logical names become CloudFormation logical ids and placeholder names.
_FUNCTION_NAME: Final = re.compile(r"^[A-Z][A-Za-z0-9]{0,47}$")
#: Part of the stack and state machine names (with the stage, within AWS's limits).
_SAGA_NAME: Final = re.compile(r"^[a-z][a-z0-9-]{0,50}$")

ArnFor = Callable[[str], str]


def lambda_handler(path: str) -> str:
    """``tasks.reserve_stock:handler`` or ``tasks.reserve_stock.handler`` → the dotted form
    ``tasks.reserve_stock.handler``; checked without importing anything."""
    dotted = path.replace(":", ".")
    parts = dotted.split(".")
    if len(parts) < 2 or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise DeploymentError(f"handler {path!r}: expected 'package.module.function'")
    return dotted


def module_of(ref: str) -> str:
    """The module a ``module:attr`` (or dotted ``module.attr``) reference imports."""
    if ":" in ref:
        return ref.partition(":")[0]
    return ref.rpartition(".")[0]


@dataclass(frozen=True)
class SagaDeployment:
    name: str
    #: logical function name → step handler reference (``package.module:attr``); every
    #: function runs ``stepsaga.lambda_handler.handler``, which loads it.
    functions: Mapping[str, str]
    #: Compiled ASL with ``${<Name>FunctionArn}`` placeholders.
    definition: Mapping[str, Any]
    #: The saga (``package.module:attr``) and the project's ``Dependencies`` the generic
    #: entry point loads (``STEPSAGA_SAGA``, ``STEPSAGA_DEPENDENCIES``).
    saga_ref: str
    dependencies_ref: str | None = None
    #: The saga's own substitutions helper, if it has one; else ``<Name>FunctionArn``.
    substitutions_for: Callable[[ArnFor], Mapping[str, str]] | None = field(
        default=None, compare=False
    )

    @classmethod
    def of(cls, project: Project, name: str) -> SagaDeployment:
        """The declared saga ``name`` of ``project``, compiled."""
        saga = project.saga(name)
        return cls(
            name=saga.name,
            functions=saga.functions,
            definition=compile_saga(saga),
            saga_ref=project.saga_refs[name],
            dependencies_ref=project.dependencies_ref,
            substitutions_for=saga.definition_substitutions,
        )

    def __post_init__(self) -> None:
        if not _SAGA_NAME.match(self.name):
            raise DeploymentError(
                f"saga name {self.name!r}: to deploy, lowercase letters, digits and '-' "
                "(at most 51), starting with a letter"
            )
        for name, path in self.functions.items():
            if not _FUNCTION_NAME.match(name):
                raise DeploymentError(f"function name {name!r}: CamelCase letters and digits")
            lambda_handler(path)
        placeholders = set(_PLACEHOLDER.findall(self.definition_json()))
        substituted = set(self.definition_substitutions(lambda name: name))
        if placeholders != substituted:
            raise DeploymentError(
                "definition placeholders and substitutions differ: "
                f"only in the ASL {sorted(placeholders - substituted)}, "
                f"only substituted {sorted(substituted - placeholders)}"
            )

    @property
    def references(self) -> dict[str, str]:
        """What a function loads at run time → the reference (for the asset check)."""
        refs = {"saga": self.saga_ref}
        if self.dependencies_ref:
            refs["dependencies"] = self.dependencies_ref
        refs.update({f"{name} handler": ref for name, ref in self.functions.items()})
        return refs

    def with_execution_timeout(self, seconds: int) -> SagaDeployment:
        """The same saga whose ASL has the top-level ``TimeoutSeconds`` ``seconds``: no case
        runs (or waits) forever. Refused when a state of the saga may wait as long (a
        person's decision would then time the whole case out instead of its own state)."""
        longest = max(_state_timeouts(self.definition), default=0)
        if seconds <= longest:
            raise DeploymentError(
                f"execution_timeout_seconds {seconds}: saga {self.name} has a state that "
                f"waits up to {longest} s; give the execution longer"
            )
        return replace(self, definition={**self.definition, "TimeoutSeconds": seconds})

    def definition_json(self) -> str:
        """The ASL as one plain JSON string (CloudFormation substitutes the placeholders)."""
        return json.dumps(self.definition, separators=(",", ":"))

    def definition_substitutions(self, arn_for: ArnFor) -> dict[str, str]:
        """Placeholder key → ARN of the function, for every function of the saga."""
        if self.substitutions_for is not None:
            return dict(self.substitutions_for(arn_for))
        return {substitution_key(name): arn_for(name) for name in self.functions}


def _state_timeouts(node: Any) -> list[int]:
    """Every state's ``TimeoutSeconds`` in an ASL document, nested branches included."""
    found: list[int] = []
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "TimeoutSeconds" and isinstance(value, int):
                found.append(value)
            else:
                found.extend(_state_timeouts(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_state_timeouts(value))
    return found
