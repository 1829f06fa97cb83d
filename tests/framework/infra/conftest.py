"""Synthesize the stack once per test run (a synth takes seconds) and share the result.

The jsii runtime (Node.js) starts at the first ``aws_cdk`` import and reads its environment
then, so the Node 20 end-of-life banner is silenced here, before any test module imports CDK.
"""

from __future__ import annotations

import os

from stepsaga._project import deployment

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Annotations, Template

from infra.app import build
from stepsaga.cdk import SagaStack
from stepsaga.cdk._access import FunctionAccess
from stepsaga.cdk._saga_deployment import SagaDeployment


@dataclass(frozen=True)
class Synthesized:
    saga: SagaDeployment
    stack: SagaStack
    template: Template
    annotations: Annotations
    outdir: Path

    @property
    def access(self) -> Mapping[str, FunctionAccess]:
        """The framework access of each saga function, as the construct derived it."""
        return self.stack.resources.access

    @property
    def json(self) -> dict[str, Any]:
        return dict(self.template.to_json())

    def resources(self, type_name: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.json["Resources"].items()
            if resource["Type"] == type_name
        }

    def live_alias(self, function_id: str) -> str:
        """The logical id of the ``live`` alias of the function ``function_id``."""
        (alias_id,) = [
            k
            for k, v in self.resources("AWS::Lambda::Alias").items()
            if v["Properties"]["FunctionName"] == {"Ref": function_id}
            and v["Properties"]["Name"] == "live"
        ]
        return alias_id

    def is_live_alias(self, value: Any, function_id: str) -> bool:
        """Whether ``value`` names the ``live`` alias of ``function_id``: its ARN
        (``Ref``), or, as an event source mapping's ``FunctionName``, the qualified name
        CDK writes (the function's name from the alias ARN, then ``:live``)."""
        ref = {"Ref": self.live_alias(function_id)}
        qualified = {"Fn::Join": ["", [{"Fn::Select": [6, {"Fn::Split": [":", ref]}]}, ":live"]]}
        return value in (ref, qualified)

    def saga_functions(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Logical function name (``STEPSAGA_FUNCTION``) → (logical id, resource), for the
        functions the generic entry point serves."""
        found = {}
        for logical_id, resource in self.resources("AWS::Lambda::Function").items():
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            name = variables.get(deployment.ENV_FUNCTION)
            if name is not None:
                found[name] = (logical_id, resource)
        return found


#: The service URLs every synth needs (``-c inventory_url=…`` and so on), as examples.
SERVICE_CONTEXT = {
    "inventory_url": "https://inventory.example.com",
    "payments_url": "https://payments.example.com/v1",
    "shipping_url": "https://shipping.example.com:8443",
}


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    # Sources-only bundling: no pip, no network; test_bundling.py covers the pip path.
    app = App(context={"bundling": "sources", **SERVICE_CONTEXT}, outdir=str(outdir))
    stack = build(app)
    app.synth()
    return Synthesized(
        saga=stack.saga,
        stack=stack,
        template=Template.from_stack(stack),
        annotations=Annotations.from_stack(stack),
        outdir=outdir,
    )
