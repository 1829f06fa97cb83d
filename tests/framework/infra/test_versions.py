"""Safe deploys in the template: tasks call published versions through ``live`` aliases;
the state machine publishes a retained version per release behind its own ``live`` alias,
where the ingress starts cases."""

from __future__ import annotations

from stepsaga._aws import ingress
from stepsaga.cdk._ingress import INGRESS_HANDLER
from tests.framework.infra.conftest import Synthesized


def test_every_saga_function_has_a_live_alias_on_a_published_version(
    synthesized: Synthesized,
) -> None:
    versions = synthesized.resources("AWS::Lambda::Version")
    aliases = synthesized.resources("AWS::Lambda::Alias")
    saga_function_ids = {logical_id for logical_id, _ in synthesized.saga_functions().values()}
    aliased = set()
    for alias in aliases.values():
        properties = alias["Properties"]
        assert properties["Name"] == "live"
        version = versions[properties["FunctionVersion"]["Fn::GetAtt"][0]]
        assert version["Properties"]["FunctionName"] == properties["FunctionName"]
        aliased.add(properties["FunctionName"]["Ref"])
    assert saga_function_ids <= aliased


def test_the_definition_names_aliases_not_latest(synthesized: Synthesized) -> None:
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    aliases = synthesized.resources("AWS::Lambda::Alias")
    for key, value in machine["Properties"]["DefinitionSubstitutions"].items():
        assert set(value) == {"Ref"}, key
        assert value["Ref"] in aliases, key


def test_the_state_machine_publishes_a_retained_version_behind_live(
    synthesized: Synthesized,
) -> None:
    (machine_id,) = synthesized.resources("AWS::StepFunctions::StateMachine")
    ((version_id, version),) = synthesized.resources(
        "AWS::StepFunctions::StateMachineVersion"
    ).items()
    assert version["Properties"]["StateMachineArn"] == {"Ref": machine_id}
    # A new revision (a changed definition) replaces the resource: a new version.
    assert version["Properties"]["StateMachineRevisionId"] == {
        "Fn::GetAtt": [machine_id, "StateMachineRevisionId"]
    }
    assert (version["DeletionPolicy"], version["UpdateReplacePolicy"]) == ("Retain", "Retain")
    (alias,) = synthesized.resources("AWS::StepFunctions::StateMachineAlias").values()
    assert alias["Properties"]["Name"] == "live"
    assert alias["Properties"]["RoutingConfiguration"] == [
        {"StateMachineVersionArn": {"Fn::GetAtt": [version_id, "Arn"]}, "Weight": 100}
    ]


def test_the_ingress_starts_cases_on_the_alias(synthesized: Synthesized) -> None:
    (alias_id,) = synthesized.resources("AWS::StepFunctions::StateMachineAlias")
    (starter,) = [
        f
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == INGRESS_HANDLER
    ]
    variables = starter["Properties"]["Environment"]["Variables"]
    assert variables[ingress.ENV_START_ARN] == {"Fn::GetAtt": [alias_id, "Arn"]}


def test_lambda_versions_do_not_accumulate_state_machine_versions_do(
    synthesized: Synthesized,
) -> None:
    """The definition names each function's ``live`` alias, never a version, so an old
    Lambda version serves nobody once the alias moved: CloudFormation deletes it on the
    next deploy (no ``Retain``). A state machine version is what an execution runs on for
    its whole life: retained, and pruned by ``stepsaga versions prune``
    (docs/reference/operating-aws.md)."""
    for logical_id, version in synthesized.resources("AWS::Lambda::Version").items():
        assert version.get("DeletionPolicy", "Delete") == "Delete", logical_id
        assert version.get("UpdateReplacePolicy", "Delete") == "Delete", logical_id
    (machine_version,) = synthesized.resources("AWS::StepFunctions::StateMachineVersion").values()
    assert machine_version["DeletionPolicy"] == "Retain"
