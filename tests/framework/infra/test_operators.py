"""The operators' managed policy: exactly the CLI's calls, on this deployment's ARNs only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from stepsaga._project import deployment
from stepsaga.cdk._access import OPERATOR
from stepsaga.cdk._operators import OperatorRole
from stepsaga.cdk._settings import OperatorRoleSettings, StageSettings
from stepsaga.errors import DeploymentError
from stepsaga.ledger._table import GSIS
from tests.framework.infra.conftest import Synthesized


def _statements(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    (policy,) = synthesized.resources("AWS::IAM::ManagedPolicy").values()
    return {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _joined(resource: Any) -> str:
    """An ``Fn::Join`` ARN with its references written as ``{Ref}``/``{GetAtt}`` text."""
    if isinstance(resource, dict) and "Fn::Join" in resource:
        separator, parts = resource["Fn::Join"]
        return str(separator).join(_joined(p) for p in parts)
    if isinstance(resource, dict) and "Ref" in resource:
        return "{" + str(resource["Ref"]) + "}"
    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
        return "{" + ".".join(resource["Fn::GetAtt"]) + "}"
    return str(resource)


def test_every_statement_is_allow_with_exact_actions(synthesized: Synthesized) -> None:
    statements = _statements(synthesized)
    granted = set().union(*(_actions(s) for s in statements.values()))
    expected = {
        *OPERATOR.stack_actions,
        *OPERATOR.state_machine_actions,
        *OPERATOR.execution_actions,
        *OPERATOR.table_actions,
        *(f"{a}" for a in OPERATOR.index_actions),
        *OPERATOR.budget_actions,
        *OPERATOR.pointer_actions,
        *(action for action, _ in OPERATOR.resolver_actions),
        *OPERATOR.audit_bucket_actions,
        *OPERATOR.audit_copy_actions,
    }
    assert granted == expected
    assert all(s["Effect"] == "Allow" for s in statements.values())
    assert not any("*" in a for a in granted), "no wildcard actions"
    # No raw deletes (DeleteItem only on budget items, below), no writes outside the
    # ledger, no start (the ingress starts cases), no decision but through the resolver.
    deletes = {sid for sid, s in statements.items() if "dynamodb:DeleteItem" in _actions(s)}
    assert deletes == {"ReplaceTenantBudgets"}
    assert not granted & {
        "states:SendTaskSuccess",
        "states:StopExecution",
        "states:RedriveExecution",
    }
    assert not any(a.startswith(("iam:", "kms:")) for a in granted)
    assert "dynamodb:Scan" not in granted, "every listing is an index Query"
    assert "states:StartExecution" not in granted


def test_resources_are_this_deployments_arns(synthesized: Synthesized) -> None:
    statements = _statements(synthesized)
    machine_name = deployment.state_machine_name(synthesized.saga.name, "dev")
    stack_name = deployment.stack_name("dev", synthesized.saga.name)
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    resolver_alias = _resolver_alias(synthesized)
    (bucket_id,) = synthesized.resources("AWS::S3::Bucket")
    prefix = "arn:{AWS::Partition}:"
    where = "{AWS::Region}:{AWS::AccountId}"
    resources = {
        sid: sorted(_joined(r) for r in s["Resource"])
        if isinstance(s["Resource"], list)
        else _joined(s["Resource"])
        for sid, s in statements.items()
    }
    assert resources == {
        "ReadTheStacksOutputs": f"{prefix}cloudformation:{where}:stack/{stack_name}/*",
        "FindCases": f"{prefix}states:{where}:stateMachine:{machine_name}",
        "FollowExecutions": f"{prefix}states:{where}:execution:{machine_name}:*",
        "ReadTheLedger": "{" + f"{table_id}.Arn" + "}",
        # Exactly the lookup indexes (no index/*): recon list, ledger list and sweep Query them.
        "QueryTheLedgerIndexes": sorted(
            "{" + f"{table_id}.Arn" + "}" + f"/index/{index}" for index in GSIS
        ),
        "ReplaceTenantBudgets": "{" + f"{table_id}.Arn" + "}",
        "FindCasesByTheirPointers": "{" + f"{table_id}.Arn" + "}",
        "DecideThroughTheResolverUrl": "{" + f"{resolver_alias}" + "}",
        "InvokeTheResolverOnlyThroughItsUrl": "{" + f"{resolver_alias}" + "}",
        "ListTheAuditCopies": "{" + f"{bucket_id}.Arn" + "}",
        "ReadTheAuditCopies": "{" + f"{bucket_id}.Arn" + "}/audit/*",
    }


def test_operators_direct_writes_to_the_ledger_are_outside_their_policy(
    synthesized: Synthesized,
) -> None:
    """Only reads of the ledger are table-wide; every write names the one item kind it is
    for (budgets, case pointers): nothing lets an operator write a reconciliation item, an
    audit record or an action record (a ``first_approval`` they made up, a decision)."""
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"}
    writes.add("dynamodb:DeleteItem")
    for sid, statement in _statements(synthesized).items():
        written = _actions(statement) & writes
        if not written:
            continue
        keys = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        assert statement["Condition"]["Null"] == {"dynamodb:LeadingKeys": "false"}, sid
        assert set(keys) <= {"BUDGET#*", "CASE#*"}, sid
    assert _actions(_statements(synthesized)["ReadTheLedger"]) == {
        "dynamodb:GetItem",
        "dynamodb:Query",
    }


def test_the_resolver_is_invoked_only_through_its_iam_url(synthesized: Synthesized) -> None:
    """``lambda:InvokeFunction`` only via the URL: a direct invocation's event (its request
    context with it) would be the caller's to write, identity included."""
    statements = _statements(synthesized)
    assert statements["DecideThroughTheResolverUrl"]["Condition"] == {
        "StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}
    }
    assert statements["InvokeTheResolverOnlyThroughItsUrl"]["Condition"] == {
        "Bool": {"lambda:InvokedViaFunctionUrl": "true"}
    }
    (url,) = synthesized.resources("AWS::Lambda::Url").values()
    assert url["Properties"]["AuthType"] == "AWS_IAM"
    assert url["Properties"]["Qualifier"] == "live"


def _resolver_alias(synthesized: Synthesized) -> str:
    """The ``live`` alias the resolver's function URL serves (the URL names its function)."""
    (url,) = synthesized.resources("AWS::Lambda::Url").values()
    function = url["Properties"]["TargetFunctionArn"]["Fn::GetAtt"][0]
    (alias,) = (
        logical_id
        for logical_id, alias in synthesized.resources("AWS::Lambda::Alias").items()
        if alias["Properties"]["FunctionName"] == {"Ref": function}
    )
    return alias


def test_deleting_is_limited_to_budget_items(synthesized: Synthesized) -> None:
    """``Ledger.set_budget`` deletes the shards it no longer uses; the grant names exactly
    that action, on the table, for partition keys ``BUDGET#…`` only (every key of the
    request, so a transaction cannot delete a record or an item)."""
    statement = _statements(synthesized)["ReplaceTenantBudgets"]
    assert _actions(statement) == {"dynamodb:PutItem", "dynamodb:DeleteItem"}
    assert statement["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["BUDGET#*"]},
        "Null": {"dynamodb:LeadingKeys": "false"},
    }


def test_case_pointers_are_granted_on_case_items_only(synthesized: Synthesized) -> None:
    pointers = _statements(synthesized)["FindCasesByTheirPointers"]
    assert _actions(pointers) == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"}
    assert pointers["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CASE#*"]},
        "Null": {"dynamodb:LeadingKeys": "false"},
    }


#: The statement both start paths' principals get on the ledger table (Template pattern).
POINTER_STATEMENT = Match.object_like(
    {
        "Effect": "Allow",
        "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"],
        "Condition": {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CASE#*"]},
            "Null": {"dynamodb:LeadingKeys": "false"},
        },
    }
)


def test_the_template_holds_the_pointer_condition(synthesized: Synthesized) -> None:
    document = {"PolicyDocument": {"Statement": Match.array_with([POINTER_STATEMENT])}}
    synthesized.template.has_resource_properties("AWS::IAM::ManagedPolicy", document)


def test_the_policy_is_attached_to_nobody_by_the_stack(synthesized: Synthesized) -> None:
    (policy,) = synthesized.resources("AWS::IAM::ManagedPolicy").values()
    properties = policy["Properties"]
    assert not any(k in properties for k in ("Roles", "Users", "Groups")), json.dumps(properties)


def test_the_operator_role_option_binds_session_names_to_the_person() -> None:
    """``StageSettings.operator_role``: the role's trust policy admits a session only under
    the assuming user's own name, and the role carries the operator policy."""
    stack = Stack(App(), "Operators")
    policy = iam.ManagedPolicy(
        stack, "Policy", statements=[iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"])]
    )
    settings = OperatorRoleSettings(trusted="123456789012")
    OperatorRole(
        stack,
        "OperatorRole",
        policy=policy,
        trusted=settings.trusted,
        session_name=settings.session_name,
    )
    (role,) = Template.from_stack(stack).find_resources("AWS::IAM::Role").values()
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRole"
    assert statement["Condition"] == {"StringEquals": {"sts:RoleSessionName": "${aws:username}"}}
    assert "123456789012" in json.dumps(statement["Principal"])
    (attached,) = role["Properties"]["ManagedPolicyArns"]
    assert attached == {
        "Ref": next(iter(Template.from_stack(stack).find_resources("AWS::IAM::ManagedPolicy")))
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"audit_retention_days": 0}, "audit_retention_days 0"),
        ({"audit_retention_days": 40000}, "audit_retention_days 40000"),
    ],
)
def test_bad_audit_settings_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        StageSettings(**changes)


def test_an_operator_role_names_who_may_assume_it() -> None:
    with pytest.raises(DeploymentError, match=r"operator_role\.trusted 'everyone'"):
        OperatorRoleSettings(trusted="everyone")
    assert StageSettings.for_stage("prod").audit_retention_days == 3653
    assert StageSettings.for_stage("dev").audit_retention_days == 1
