"""``stepsaga.testing.moto_deployment`` on a team's own template (no stepsaga saga, no CDK):
handlers imported from the template's ``Handler``, their environment as declared, errors as
Lambda reports them (so Retry/Catch match), ``waitForTaskToken``, and retry delays skipped."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from stepsaga.errors import TemplateError
from stepsaga.testing import moto_deployment
from stepsaga.testing._moto_stack import MotoDeployment

#: Task tokens the ``hold`` handler received (the test sends the callback).
TOKENS: list[str] = []
#: Calls of ``charge`` per case, so a flaky case fails its first ``n``.
CALLS: dict[str, int] = {}


class CardDeclinedError(Exception):
    pass


class FlakyError(Exception):
    pass


def charge(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A team's handler: fails as the event says, else reports what it ran with."""
    CALLS[event["case"]] = CALLS.get(event["case"], 0) + 1
    if event.get("declined"):
        raise CardDeclinedError(f"card of {event['case']} declined")
    if CALLS[event["case"]] <= event.get("flaky", 0):
        raise FlakyError("try again")
    return {
        "table": os.environ["ORDERS_TABLE"],
        "mode": os.environ["MODE"],
        "function": context.function_name,
        "remaining": context.get_remaining_time_in_millis(),
        "request_id": context.aws_request_id,
    }


def hold(event: dict[str, Any], context: Any) -> None:
    TOKENS.append(event["token"])


def _task(function: str, **extra: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "${" + function + "}", "Payload.$": "$"},
        "ResultSelector": {"result.$": "$.Payload"},
        **extra,
    }


CHARGE = {
    "StartAt": "Charge",
    "States": {
        "Charge": _task(
            "ChargeArn",
            # A 10-minute interval: the test would time out if moto slept it.
            Retry=[{"ErrorEquals": ["FlakyError"], "IntervalSeconds": 600, "MaxAttempts": 2}],
            Catch=[
                {"ErrorEquals": ["CardDeclinedError"], "ResultPath": "$.error", "Next": "Declined"}
            ],
            End=True,
        ),
        "Declined": {"Type": "Pass", "End": True},
    },
}
HOLD = {
    "StartAt": "Hold",
    "States": {
        "Hold": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": "${HoldArn}", "Payload": {"token.$": "$$.Task.Token"}},
            "End": True,
        }
    },
}


def _function(handler: str, **variables: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Handler": f"{__name__}.{handler}",
            "Runtime": "python3.12",
            "Timeout": 30,
            "Environment": {"Variables": variables},
        },
    }


def _machine(definition: dict[str, Any], **substitutions: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::StepFunctions::StateMachine",
        "Properties": {
            "DefinitionString": json.dumps(definition),
            "DefinitionSubstitutions": substitutions,
            "RoleArn": {"Fn::GetAtt": ["MachineRole", "Arn"]},
        },
    }


TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Orders": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        },
        "MachineRole": {"Type": "AWS::IAM::Role", "Properties": {}},
        "ChargeFunction": _function("charge", ORDERS_TABLE={"Ref": "Orders"}, MODE="deployed"),
        "ChargeVersion": {
            "Type": "AWS::Lambda::Version",
            "Properties": {"FunctionName": {"Ref": "ChargeFunction"}},
        },
        "ChargeLive": {
            "Type": "AWS::Lambda::Alias",
            "Properties": {
                "FunctionName": {"Ref": "ChargeFunction"},
                "FunctionVersion": {"Fn::GetAtt": ["ChargeVersion", "Version"]},
                "Name": "live",
            },
        },
        "HoldFunction": _function("hold"),
        "MissingFunction": _function("no_such_handler"),
        "Charges": _machine(CHARGE, ChargeArn={"Ref": "ChargeLive"}),
        "Holds": _machine(HOLD, HoldArn={"Fn::GetAtt": ["HoldFunction", "Arn"]}),
        "Broken": _machine(CHARGE, ChargeArn={"Fn::GetAtt": ["MissingFunction", "Arn"]}),
        "ChargesVersion": {
            "Type": "AWS::StepFunctions::StateMachineVersion",
            "Properties": {"StateMachineArn": {"Ref": "Charges"}},
        },
        "ChargesLive": {
            "Type": "AWS::StepFunctions::StateMachineAlias",
            "Properties": {
                "Name": "live",
                "RoutingConfiguration": [
                    {"StateMachineVersionArn": {"Ref": "ChargesVersion"}, "Weight": 100}
                ],
            },
        },
    },
    "Outputs": {
        "OrdersTable": {"Value": {"Ref": "Orders"}},
        "ChargesAlias": {"Value": {"Fn::GetAtt": ["ChargesLive", "Arn"]}},
    },
}


@pytest.fixture
def deployed() -> Iterator[MotoDeployment]:
    TOKENS.clear()
    CALLS.clear()
    with moto_deployment(TEMPLATE, stack_name="shop", environment={"MODE": "test"}) as deployment:
        yield deployment


def run(deployment: MotoDeployment, machine: str, payload: dict[str, Any]) -> dict[str, Any]:
    client = boto3.client("stepfunctions", region_name=deployment.region)
    arn = client.start_execution(
        stateMachineArn=deployment.state_machines[machine], input=json.dumps(payload)
    )["executionArn"]
    return deployment.wait(arn)


def test_the_handler_runs_with_its_environment_and_a_lambda_context(
    deployed: MotoDeployment,
) -> None:
    done = run(deployed, "Charges", {"case": "c1"})

    assert done["status"] == "SUCCEEDED"
    result = json.loads(done["output"])["result"]
    assert result["table"] == deployed.tables["Orders"] == deployed.outputs["OrdersTable"]
    assert result["mode"] == "test"  # the override wins over the template's value
    assert result["function"] == deployed.functions["ChargeFunction"].name
    assert 0 < result["remaining"] <= 30_000
    assert result["request_id"]
    assert "ORDERS_TABLE" not in os.environ  # set for the call only


def test_an_exception_is_a_lambda_function_error_named_by_its_class(
    deployed: MotoDeployment,
) -> None:
    done = run(deployed, "Charges", {"case": "c2", "declined": True})

    assert done["status"] == "SUCCEEDED"  # caught by its class name, routed to Declined
    error = json.loads(done["output"])["error"]
    assert error["Error"] == "CardDeclinedError"
    cause = json.loads(error["Cause"])
    assert (cause["errorType"], cause["errorMessage"]) == (
        "CardDeclinedError",
        "card of c2 declined",
    )
    assert [call.error for call in deployed.calls("ChargeFunction")] == ["CardDeclinedError"]


def test_retries_match_the_error_name_and_their_delays_are_skipped(
    deployed: MotoDeployment,
) -> None:
    done = run(deployed, "Charges", {"case": "c3", "flaky": 2})

    assert done["status"] == "SUCCEEDED"
    assert [call.error for call in deployed.calls("ChargeFunction")] == [
        "FlakyError",
        "FlakyError",
        None,
    ]


def test_wait_for_task_token_invokes_the_handler_and_resumes_on_the_callback(
    deployed: MotoDeployment,
) -> None:
    client = boto3.client("stepfunctions", region_name=deployed.region)
    arn = client.start_execution(stateMachineArn=deployed.state_machines["Holds"], input="{}")[
        "executionArn"
    ]
    assert deployed.wait(arn, until=lambda _: bool(TOKENS))["status"] == "RUNNING"

    client.send_task_success(taskToken=TOKENS[0], output=json.dumps({"decided": "yes"}))

    done = deployed.wait(arn)
    assert (done["status"], json.loads(done["output"])) == ("SUCCEEDED", {"decided": "yes"})


def test_a_handler_that_is_not_there_fails_as_lambdas_runtime_says(
    deployed: MotoDeployment,
) -> None:
    done = run(deployed, "Broken", {"case": "c4"})

    assert (done["status"], done["error"]) == ("FAILED", "Runtime.HandlerNotFound")
    cause = json.loads(done["cause"])
    assert cause["errorMessage"] == f"Handler 'no_such_handler' missing on module '{__name__}'"


def test_several_state_machines_have_no_single_arn(deployed: MotoDeployment) -> None:
    with pytest.raises(TemplateError, match="3 state machines"):
        _ = deployed.state_machine_arn


def test_the_stack_outputs_are_on_moto_cloudformation(deployed: MotoDeployment) -> None:
    cfn = boto3.client("cloudformation", region_name=deployed.region)
    (stack,) = cfn.describe_stacks(StackName="shop")["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    assert outputs["OrdersTable"] == "shop-Orders"


def test_executions_start_on_the_state_machine_alias(deployed: MotoDeployment) -> None:
    alias = deployed.outputs["ChargesAlias"]
    assert alias == f"{deployed.state_machines['Charges']}:live"
    client = boto3.client("stepfunctions", region_name=deployed.region)
    routing = client.describe_state_machine_alias(stateMachineAliasArn=alias)[
        "routingConfiguration"
    ]
    assert routing == [
        {"stateMachineVersionArn": f"{deployed.state_machines['Charges']}:1", "weight": 100}
    ]

    started = client.start_execution(stateMachineArn=alias, input=json.dumps({"case": "c5"}))

    assert deployed.wait(started["executionArn"])["status"] == "SUCCEEDED"


def test_a_function_the_template_does_not_declare_keeps_motos_answer(
    deployed: MotoDeployment,
) -> None:
    lam = boto3.client("lambda", region_name=deployed.region)
    role = boto3.client("iam").create_role(RoleName="other", AssumeRolePolicyDocument="{}")
    lam.create_function(
        FunctionName="other",
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler="index.handler",
        Code={"ZipFile": deployed_zip()},
    )

    reply = lam.invoke(FunctionName="other", Payload=b'{"echo": 1}')

    assert "FunctionError" not in reply
    assert json.loads(reply["Payload"].read()) == {"echo": 1}  # moto's simple Lambda echoes
    assert deployed.invocations == []


def deployed_zip() -> bytes:
    """A real function of its own (moto keeps the code; its simple Lambda runs none)."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context): return event\n")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("resource", "message"),
    [
        ({"Type": "AWS::Lambda::Function", "Properties": {}}, "Bad: Handler is missing"),
        (
            {"Type": "AWS::StepFunctions::StateMachine", "Properties": {}},
            "Bad: DefinitionString is missing",
        ),
    ],
)
def test_a_template_without_what_runs_is_refused_naming_the_resource(
    resource: dict[str, Any], message: str
) -> None:
    with (
        pytest.raises(TemplateError, match=f"^template: {message}$"),
        moto_deployment({"Resources": {"Bad": resource}}),
    ):
        pass
