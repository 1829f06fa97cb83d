"""The definition deployed equals the compiled ASL, placeholders resolved to the right
functions (the template's ``DefinitionSubstitutions`` point at the function whose
``STEPSAGA_FUNCTION`` is the one the saga names)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepsaga._project import deployment
from stepsaga.cdk import StageSettings
from stepsaga.cdk._saga_deployment import SagaDeployment
from stepsaga.cdk._settings import DEFAULT_EXECUTION_TIMEOUT_SECONDS
from stepsaga.errors import DeploymentError
from stepsaga.workflow import compile as compile_saga
from stepsaga.workflow._substitutions import render
from tests.framework.infra.conftest import Synthesized
from workflows.project import reference_project
from workflows.replacement_order import saga as replacement_order


def test_template_definition_equals_compiled_asl_after_substitution(
    synthesized: Synthesized,
) -> None:
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    properties = machine["Properties"]
    functions = synthesized.resources("AWS::Lambda::Function")
    aliases = synthesized.resources("AWS::Lambda::Alias")
    versions = synthesized.resources("AWS::Lambda::Version")

    def handler_of(substitution: Any) -> str:
        # Each task invokes the function's ``live`` alias (a published version), never
        # $LATEST: alias → version → function.
        alias = aliases[substitution["Ref"]]["Properties"]
        assert alias["Name"] == "live"
        version_id, attribute = alias["FunctionVersion"]["Fn::GetAtt"]
        assert attribute == "Version"
        logical_id = versions[version_id]["Properties"]["FunctionName"]["Ref"]
        assert alias["FunctionName"] == {"Ref": logical_id}
        variables = functions[logical_id]["Properties"]["Environment"]["Variables"]
        name: str = variables[deployment.ENV_FUNCTION]
        return name

    deployed = render(
        json.loads(properties["DefinitionString"]),
        {
            key: f"arn-of:{handler_of(v)}"
            for key, v in properties["DefinitionSubstitutions"].items()
        },
    )
    expected = render(
        compile_saga(replacement_order),
        replacement_order.definition_substitutions(lambda name: f"arn-of:{name}"),
    )
    # Plus the execution's own timeout, from the settings: no case runs forever.
    timeout = synthesized.stack.settings.execution_timeout_seconds
    assert deployed == {**expected, "TimeoutSeconds": timeout}
    assert deployed["TimeoutSeconds"] == DEFAULT_EXECUTION_TIMEOUT_SECONDS


def test_every_saga_function_is_substituted(synthesized: Synthesized) -> None:
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    assert set(machine["Properties"]["DefinitionSubstitutions"]) == {
        f"{name}FunctionArn" for name in synthesized.saga.functions
    }


def test_the_execution_timeout_must_outlast_every_wait_of_the_saga() -> None:
    """A person's decision waits ``TimeoutSeconds`` in its own state; an execution timeout
    no longer than that would end the case before the decision could."""
    deployed = SagaDeployment.of(reference_project(), replacement_order.name)
    longest = max(
        s["TimeoutSeconds"] for s in deployed.definition["States"].values() if "TimeoutSeconds" in s
    )
    with pytest.raises(DeploymentError, match=f"waits up to {longest} s"):
        deployed.with_execution_timeout(longest)
    assert deployed.with_execution_timeout(longest + 1).definition["TimeoutSeconds"] == longest + 1
    assert "TimeoutSeconds" not in deployed.definition  # the saga's own ASL is unchanged


@pytest.mark.parametrize("seconds", [59, 365 * 24 * 3600 + 1])
def test_the_execution_timeout_setting_is_checked(seconds: int) -> None:
    with pytest.raises(DeploymentError, match=r"^execution_timeout_seconds"):
        StageSettings(execution_timeout_seconds=seconds)
