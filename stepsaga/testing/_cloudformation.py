"""Just enough CloudFormation to deploy a synthesized template onto moto: intrinsic functions
resolved against the physical names the deployment chose.

Why not through moto's own CloudFormation: a test needs the resources that run (tables,
topics, queues, functions, state machines) with their values as synthesized, and to know
each function's handler and environment; the rest of a stack (alarms, keys, policies)
configures nothing moto runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from stepsaga.errors import TemplateError

__all__ = ["Resolver", "substitute"]

_SUB: Final = re.compile(r"\$\{([^}!][^}]*)\}")


@dataclass
class Resolver:
    """``Ref``/``Fn::GetAtt`` values by logical id; pseudo parameters from region/account.

    A reference to a resource the deployment did not create resolves to a placeholder that
    names it (``<logical id>`` / ``arn:aws:moto:<region>:<account>:<logical id>``): such
    values (a KMS key on a topic, a log group) configure nothing that runs on moto.
    """

    region: str
    account: str
    stack_name: str
    refs: dict[str, str] = field(default_factory=dict)
    attributes: dict[tuple[str, str], str] = field(default_factory=dict)

    def pseudo(self) -> Mapping[str, str]:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
        }

    def ref(self, logical_id: str) -> str:
        pseudo = self.pseudo()
        if logical_id in pseudo:
            return pseudo[logical_id]
        return self.refs.get(logical_id, logical_id)

    def get_att(self, logical_id: str, attribute: str) -> str:
        found = self.attributes.get((logical_id, attribute))
        if found is not None:
            return found
        return f"arn:aws:moto:{self.region}:{self.account}:{logical_id}"

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its value."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, argument), *_ = value.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::GetAtt":
                logical_id, attribute = (
                    argument.split(".", 1) if isinstance(argument, str) else argument
                )
                return self.get_att(logical_id, attribute)
            if key == "Fn::Join":
                separator, parts = argument
                return separator.join(str(p) for p in self.resolve(parts))
            if key == "Fn::Sub":
                return self._sub(argument)
            if key == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                separator, text = argument
                return str(self.resolve(text)).split(separator)
            if key.startswith("Fn::"):
                raise TemplateError(f"template: intrinsic function {key} is not supported")
        return {k: self.resolve(v) for k, v in value.items()}

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        values = {name: str(self.resolve(v)) for name, v in variables.items()}

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in values:
                return values[name]
            if "." in name:
                logical_id, attribute = name.split(".", 1)
                return self.get_att(logical_id, attribute)
            return self.ref(name)

        return _SUB.sub(one, text)


def substitute(definition: str, substitutions: Mapping[str, str]) -> str:
    """``DefinitionSubstitutions`` applied as Step Functions does: each ``${key}`` replaced."""
    for key, value in substitutions.items():
        definition = definition.replace("${" + key + "}", value)
    return definition
