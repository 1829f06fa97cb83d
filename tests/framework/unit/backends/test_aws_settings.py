"""``--backend aws`` configuration: a stack's outputs or the environment, never a mix; every
problem one ``InvalidInputError`` naming what to set; AWS errors mapped to ours."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoRegionError
from moto import mock_aws

from stepsaga.backends._aws.errors import aws_call, translate
from stepsaga.backends._aws.settings import (
    DEFAULT_WAIT_SECONDS,
    AwsSettings,
    load_settings,
    settings_from_environment,
    settings_from_stack,
    wait_seconds_from,
)
from stepsaga.errors import (
    AwsCallError,
    ExecutionNotRedrivable,
    InvalidInputError,
    NotFoundError,
    TaskTimedOut,
    TransientError,
)
from tests.framework.functional.aws_support import STACK, TABLE, TOPIC_ARN, create_stack

MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:dev-replacement-order"
ENV = {
    "STEPSAGA_STATE_MACHINE_ARN": MACHINE,
    "STEPSAGA_LEDGER_TABLE_NAME": TABLE,
}


def _no_cloudformation() -> object:
    raise AssertionError("CloudFormation must not be called")


def test_environment_settings() -> None:
    settings = settings_from_environment(ENV)
    assert settings == AwsSettings(MACHINE, TABLE, None, source="environment")
    assert settings.region == "eu-west-1"
    assert settings.state_machine_name == "dev-replacement-order"
    assert settings.execution_arn("acme-CASE-1-r1") == (
        "arn:aws:states:eu-west-1:123456789012:execution:dev-replacement-order:acme-CASE-1-r1"
    )
    assert settings.owns(settings.execution_arn("x"))
    assert not settings.owns(settings.execution_arn(""))
    other = "arn:aws:states:eu-west-1:123456789012:execution:dev-replacement-order-2:x"
    assert not settings.owns(other)
    with_topic = settings_from_environment({**ENV, "STEPSAGA_RECONCILIATION_TOPIC_ARN": TOPIC_ARN})
    assert with_topic.reconciliation_topic_arn == TOPIC_ARN


def test_nothing_configured_names_what_to_set() -> None:
    with pytest.raises(InvalidInputError) as caught:
        load_settings(stack=None, environ={}, cloudformation=_no_cloudformation)  # type: ignore[arg-type]
    assert caught.value.message == (
        "--backend aws is not configured: pass --stack NAME (or set STEPSAGA_STACK), or set "
        "STEPSAGA_STATE_MACHINE_ARN and STEPSAGA_LEDGER_TABLE_NAME"
    )


@pytest.mark.parametrize("missing", ["STEPSAGA_STATE_MACHINE_ARN", "STEPSAGA_LEDGER_TABLE_NAME"])
def test_half_an_environment_names_the_missing_variable(missing: str) -> None:
    environ = {name: value for name, value in ENV.items() if name != missing}
    with pytest.raises(InvalidInputError, match=f"^--backend aws: {missing} is not set"):
        settings_from_environment(environ)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("STEPSAGA_STATE_MACHINE_ARN", "dev-replacement-order", "is not a state machine ARN"),
        (
            "STEPSAGA_STATE_MACHINE_ARN",
            "arn:aws:lambda:eu-west-1:123456789012:function:x",
            "is not a state machine ARN",
        ),
        ("STEPSAGA_LEDGER_TABLE_NAME", "a b", "is not a DynamoDB table name"),
        ("STEPSAGA_RECONCILIATION_TOPIC_ARN", "topic", "is not an SNS topic ARN"),
    ],
)
def test_malformed_values_are_named(variable: str, value: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^{variable}: .*{message}"):
        settings_from_environment({**ENV, variable: value})


def test_stack_outputs_win_over_the_environment() -> None:
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        create_stack(cfn, MACHINE)
        settings = load_settings(stack=STACK, environ={}, cloudformation=lambda: cfn)
        assert settings == AwsSettings(MACHINE, TABLE, TOPIC_ARN, source=f"stack {STACK}")
        # $STEPSAGA_STACK counts as --stack; the other variables are then not read.
        from_env = load_settings(
            stack=None,
            environ={"STEPSAGA_STACK": STACK, "STEPSAGA_LEDGER_TABLE_NAME": "other-table"},
            cloudformation=lambda: cfn,
        )
        assert from_env.ledger_table_name == TABLE


def test_unknown_stack_is_not_found() -> None:
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        with pytest.raises(NotFoundError) as caught:
            settings_from_stack(cfn, "stepsaga-nope")
    assert caught.value.message == (
        "stack stepsaga-nope does not exist in region us-east-1 "
        "(check --stack, AWS_REGION and AWS_PROFILE)"
    )


def test_stack_without_outputs_is_refused() -> None:
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        create_stack(cfn, MACHINE, outputs=False)
        with pytest.raises(InvalidInputError, match=r"has no output StateMachineArn"):
            settings_from_stack(cfn, STACK)


def test_bad_stack_name_is_refused_before_calling() -> None:
    with pytest.raises(InvalidInputError, match=r"^--stack: 'no such\?' is not a stack name$"):
        settings_from_stack(object(), "no such?")  # type: ignore[arg-type]


def test_malformed_output_names_the_output_and_stack() -> None:
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        create_stack(cfn, "not-an-arn")
        with pytest.raises(InvalidInputError) as caught:
            settings_from_stack(cfn, STACK)
    assert caught.value.message.startswith(f"output StateMachineArn of stack {STACK}: ")


@pytest.mark.parametrize(
    ("text", "seconds"), [("", DEFAULT_WAIT_SECONDS), ("0", 0.0), (" 2.5 ", 2.5)]
)
def test_wait_seconds(text: str, seconds: float) -> None:
    assert wait_seconds_from({"STEPSAGA_AWS_WAIT_SECONDS": text}) == seconds


@pytest.mark.parametrize("text", ["-1", "soon", "nan", "inf"])
def test_bad_wait_seconds(text: str) -> None:
    with pytest.raises(InvalidInputError, match=r"^STEPSAGA_AWS_WAIT_SECONDS must be a number"):
        wait_seconds_from({"STEPSAGA_AWS_WAIT_SECONDS": text})


def _client_error(code: str, message: str = "the service says no") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Operation")


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("ExecutionNotRedrivable", ExecutionNotRedrivable),
        ("TaskTimedOut", TaskTimedOut),
        ("ExecutionDoesNotExist", NotFoundError),
        ("InvalidArn", InvalidInputError),
        ("AccessDeniedException", InvalidInputError),
        ("ThrottlingException", TransientError),
        ("SomethingNew", AwsCallError),
    ],
)
def test_translate(code: str, kind: type[Exception]) -> None:
    error = translate(_client_error(code), "states:RedriveExecution")
    assert isinstance(error, kind)
    assert "the service says no" in error.message
    assert "states:RedriveExecution" in error.message


def test_same_name_errors_carry_the_service_message() -> None:
    error = translate(_client_error("ExecutionNotRedrivable", "  it   succeeded "), "x")
    assert error.data["service_message"] == "it succeeded"


def test_missing_region_and_unreachable_endpoint() -> None:
    with pytest.raises(InvalidInputError, match=r"^no AWS region: set AWS_REGION"), aws_call("x"):
        raise NoRegionError()
    with pytest.raises(TransientError, match=r"^x: cannot reach AWS"), aws_call("x"):
        raise EndpointConnectionError(endpoint_url="https://states.example")


def test_the_alias_is_where_cases_start_and_must_qualify_the_machine() -> None:
    alias = f"{MACHINE}:live"
    settings = settings_from_environment({**ENV, "STEPSAGA_STATE_MACHINE_ALIAS_ARN": alias})
    assert (settings.alias_arn, settings.start_target) == (alias, alias)
    # Executions started on the alias are still named under the state machine.
    assert settings.execution_arn("x").endswith(":execution:dev-replacement-order:x")
    assert settings_from_environment(ENV).start_target == MACHINE
    other = "arn:aws:states:eu-west-1:123456789012:stateMachine:other:live"
    for wrong in (other, MACHINE, f"{MACHINE}:", f"{MACHINE}:a:b"):
        with pytest.raises(InvalidInputError) as caught:
            AwsSettings(MACHINE, TABLE, alias_arn=wrong)
        assert caught.value.data["field"] == "alias_arn"
        assert "is not an alias of" in caught.value.message


def test_a_stack_with_the_alias_output_starts_there_one_without_falls_back() -> None:
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="eu-west-1")
        template = {
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {
                "StateMachineArn": {"Value": MACHINE},
                "StateMachineAliasArn": {"Value": f"{MACHINE}:live"},
                "LedgerTableName": {"Value": TABLE},
            },
        }
        cfn.create_stack(StackName="with-alias", TemplateBody=json.dumps(template))
        del template["Outputs"]["StateMachineAliasArn"]
        cfn.create_stack(StackName="before-versions", TemplateBody=json.dumps(template))
        assert settings_from_stack(cfn, "with-alias").start_target == f"{MACHINE}:live"
        assert settings_from_stack(cfn, "before-versions").start_target == MACHINE
