"""Least privilege, checked on the synthesized template.

Every statement names its actions (no ``*`` in an action) and its resources; ``Resource: "*"``
appears only for actions AWS offers no resource-level permissions for, listed below with the
reason. Each function's role grants exactly the access its kind needs (``stepsaga.cdk._access``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from stepsaga._aws.resolver import RESOLVER_HANDLER
from stepsaga._project import deployment
from stepsaga.backends._aws.decisions import RESOLVER_TIMEOUT_SECONDS, TIMEOUT_SECONDS
from stepsaga.backends._cancel import undo_functions
from stepsaga.cdk._access import (
    RESOLVER,
    RESOLVER_EXECUTION_ACTIONS,
    FunctionAccess,
    leading_key_conditions,
)
from stepsaga.cdk._stack import OVERDUE_CHECK_HANDLER
from tests.framework.infra.conftest import Synthesized

#: Actions AWS authorizes only with ``Resource: "*"`` (no resource-level permissions).
STAR_RESOURCE_ACTIONS = {
    # X-Ray tracing (Lambda active tracing, Step Functions tracing).
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    # Step Functions logging to CloudWatch Logs (vended log delivery).
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
    # A DynamoDB stream trigger (the audit copier): ListStreams has no resource-level form.
    "dynamodb:ListStreams",
}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _identity_statements(synthesized: Synthesized) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, policy in synthesized.resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            yield logical_id, statement
    for logical_id, role in synthesized.resources("AWS::IAM::Role").items():
        for inline in role["Properties"].get("Policies", []):
            for statement in inline["PolicyDocument"]["Statement"]:
                yield logical_id, statement


def _resource_policy_statements(synthesized: Synthesized) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, key in synthesized.resources("AWS::KMS::Key").items():
        for statement in key["Properties"]["KeyPolicy"]["Statement"]:
            yield logical_id, statement
    for logical_id, policy in synthesized.resources("AWS::SNS::TopicPolicy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            yield logical_id, statement


def _is_key_admin_delegation(statement: dict[str, Any]) -> bool:
    """The AWS default key-policy statement: the account (root) may use IAM policies to
    govern the key. It is what makes IAM grants on the key work at all."""
    principal = json.dumps(statement.get("Principal", {}))
    return statement.get("Action") == "kms:*" and ":root" in principal


def test_no_role_uses_managed_policies(synthesized: Synthesized) -> None:
    for logical_id, role in synthesized.resources("AWS::IAM::Role").items():
        assert "ManagedPolicyArns" not in role["Properties"], logical_id


def test_every_statement_names_explicit_actions(synthesized: Synthesized) -> None:
    statements = [*_identity_statements(synthesized), *_resource_policy_statements(synthesized)]
    assert statements
    for owner, statement in statements:
        assert "NotAction" not in statement, owner
        assert "NotResource" not in statement, owner
        if _is_key_admin_delegation(statement):
            continue
        for action in _as_list(statement["Action"]):
            assert isinstance(action, str), (owner, action)
            assert "*" not in action, (owner, action)


def test_resource_star_only_where_aws_requires_it(synthesized: Synthesized) -> None:
    for owner, statement in _identity_statements(synthesized):
        resources = _as_list(statement["Resource"])
        if "*" in resources:
            assert set(_as_list(statement["Action"])) <= STAR_RESOURCE_ACTIONS, (owner, statement)
            continue
        for resource in resources:
            text = json.dumps(resource)
            if "*" in text:
                if statement["Action"] in (
                    "states:DescribeExecution",
                    ["states:DescribeExecution", "states:RedriveExecution"],
                    list(RESOLVER_EXECUTION_ACTIONS),
                ):
                    # The ingress starter compares a duplicate with this machine's executions;
                    # the redriver redrives them; the resolver stops and redrives them.
                    machine = deployment.state_machine_name(synthesized.saga.name, "dev")
                    assert resource["Fn::Join"][1][-1] == f":execution:{machine}:*", owner
                    continue
                if statement["Action"] == "states:DescribeStateMachine":
                    # The resolver's cancel reads the definition of the version a case ran.
                    machine = deployment.state_machine_name(synthesized.saga.name, "dev")
                    assert resource["Fn::Join"][1][-1] == f":stateMachine:{machine}:*", owner
                    continue
                if statement["Action"] == ["s3:PutObject", "s3:PutObjectRetention"]:
                    # The audit copier: objects under audit/ of the stack's audit bucket.
                    assert resource["Fn::Join"][1][-1] == "/audit/*", owner
                    continue
                # Only "<function ARN>:*" (the function's versions) for lambda:InvokeFunction.
                assert statement["Action"] == "lambda:InvokeFunction", (owner, statement)
                assert resource["Fn::Join"][1][1] == ":*", (owner, resource)


def _role_of_function(synthesized: Synthesized, function_name: str) -> str:
    """The role of a saga function (by logical name) or of the overdue check (by handler)."""
    found = synthesized.saga_functions().get(function_name)
    if found is not None:
        role_id: str = found[1]["Properties"]["Role"]["Fn::GetAtt"][0]
        return role_id
    for function in synthesized.resources("AWS::Lambda::Function").values():
        if function["Properties"]["Handler"] == function_name:
            return str(function["Properties"]["Role"]["Fn::GetAtt"][0])
    raise AssertionError(f"no function {function_name}")


def _grants(synthesized: Synthesized, role_id: str) -> dict[str, set[str]]:
    """action → the resources it is granted on (as JSON text), for one role."""
    grants: dict[str, set[str]] = {}
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            for action in _as_list(statement["Action"]):
                grants.setdefault(action, set()).update(
                    json.dumps(r, sort_keys=True) for r in _as_list(statement["Resource"])
                )
    return grants


def _ref(logical_id: str) -> str:
    return json.dumps({"Ref": logical_id})


def _index(table_id: str, index: str) -> str:
    arn = {"Fn::Join": ["", [{"Fn::GetAtt": [table_id, "Arn"]}, f"/index/{index}"]]}
    return json.dumps(arn, sort_keys=True)


def _arn(logical_id: str) -> str:
    return json.dumps({"Fn::GetAtt": [logical_id, "Arn"]})


def test_each_function_gets_exactly_its_declared_access(synthesized: Synthesized) -> None:
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    (topic_id,) = synthesized.resources("AWS::SNS::Topic")
    (key_id,) = synthesized.resources("AWS::KMS::Key")
    for name in synthesized.saga.functions:
        access: FunctionAccess = synthesized.access[name]
        grants = _grants(synthesized, _role_of_function(synthesized, name))
        granted = {a: r for a, r in grants.items() if not a.startswith(("xray:", "logs:"))}
        expected: dict[str, set[str]] = {
            a: {_arn(table_id)} for a in (*access.table_actions, *access.write_actions)
        }
        for action in access.index_actions:  # exactly the named indexes' ARNs
            expected[action] = expected.get(action, set()) | {
                _index(table_id, index) for index in access.indexes
            }
        if access.publish_reconciliation:
            expected["sns:Publish"] = {_ref(topic_id)}
            expected["kms:GenerateDataKey"] = {_arn(key_id)}
            expected["kms:Decrypt"] = {_arn(key_id)}
        if access.send_task_success:
            (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
            (resource,) = granted["states:SendTaskSuccess"]
            parts = json.loads(resource)["Fn::Join"][1]
            assert parts[-1] == f":stateMachine:{machine['Properties']['StateMachineName']}"
            expected["states:SendTaskSuccess"] = {resource}
        assert granted == expected, name
        # Logs: only the function's own log group.
        assert set(grants["logs:CreateLogStream"]) == set(grants["logs:PutLogEvents"])
        assert len(grants["logs:PutLogEvents"]) == 1


def test_overdue_check_only_scans_the_open_items_index(synthesized: Synthesized) -> None:
    role = _role_of_function(synthesized, OVERDUE_CHECK_HANDLER)
    grants = _grants(synthesized, role)
    (table_id,) = synthesized.resources("AWS::DynamoDB::Table")
    index = {"Fn::Join": ["", [{"Fn::GetAtt": [table_id, "Arn"]}, "/index/open-items-by-tenant"]]}
    assert grants.pop("dynamodb:Scan") == {json.dumps(index, sort_keys=True)}
    assert {a for a in grants if not a.startswith(("xray:", "logs:"))} == set()


def test_state_machine_invokes_only_the_saga_functions(synthesized: Synthesized) -> None:
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    grants = _grants(synthesized, machine["Properties"]["RoleArn"]["Fn::GetAtt"][0])
    function_ids = {logical_id for logical_id, _ in synthesized.saga_functions().values()}
    assert len(function_ids) == len(synthesized.saga.functions)
    expected = {_arn(f) for f in function_ids} | {
        json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [f, "Arn"]}, ":*"]]}, sort_keys=True)
        for f in function_ids
    }
    assert grants.pop("lambda:InvokeFunction") == expected
    assert set(grants) <= STAR_RESOURCE_ACTIONS
    assert not any(a.startswith("states:") for a in grants)


def _statements_of(synthesized: Synthesized, role_id: str) -> dict[str, dict[str, Any]]:
    found = {}
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                found[statement.get("Sid", "")] = statement
    return found


def test_every_functions_ledger_writes_are_limited_to_its_item_kinds(
    synthesized: Synthesized,
) -> None:
    """No role writes the table outside ``dynamodb:LeadingKeys`` of the kinds it owns: a
    step cannot touch a reconciliation item, an audit record or a case pointer."""
    roles = {name: _role_of_function(synthesized, name) for name in synthesized.saga.functions}
    roles["resolver"] = _role_of_function(synthesized, RESOLVER_HANDLER)
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    writes.add("dynamodb:ConditionCheckItem")
    for name, role in roles.items():
        access = RESOLVER if name == "resolver" else synthesized.access[name]
        for sid, statement in _statements_of(synthesized, role).items():
            if not writes & set(_as_list(statement["Action"])):
                continue
            assert sid == "LedgerWritesOfItsItemKinds", (name, sid)
            assert statement["Condition"] == leading_key_conditions(*access.write_prefixes)
    step = synthesized.access["RefundPayment"]
    assert set(step.write_prefixes) == {"ACTION#", "BUDGET#"}
    assert {"RECON#", "AUDIT#"} <= set(RESOLVER.write_prefixes)


def test_the_resolver_may_undo_only_with_the_sagas_compensations(
    synthesized: Synthesized,
) -> None:
    """``cancel`` runs in the resolver: it reads the definition a case ran (the machine and
    its versions) and invokes exactly the ``live`` aliases of the compensations and the
    reconciler that definition names — no step function, no unqualified ARN."""
    grants = _grants(synthesized, _role_of_function(synthesized, RESOLVER_HANDLER))
    functions = synthesized.saga_functions()
    undone = undo_functions(synthesized.saga.definition)
    assert undone == {"ReleaseReservation", "Reconcile"}
    assert grants["lambda:InvokeFunction"] == {
        json.dumps({"Fn::Join": ["", [{"Fn::GetAtt": [functions[name][0], "Arn"]}, ":live"]]})
        for name in undone
    }
    machine = deployment.state_machine_name(synthesized.saga.name, "dev")
    described = {json.loads(r)["Fn::Join"][1][-1] for r in grants["states:DescribeStateMachine"]}
    # The undo runs inside one request: the function may run as long as the client waits.
    (resolver,) = [
        f
        for f in synthesized.resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == RESOLVER_HANDLER
    ]
    assert resolver["Properties"]["Timeout"] == RESOLVER_TIMEOUT_SECONDS < TIMEOUT_SECONDS
    assert described == {f":stateMachine:{machine}", f":stateMachine:{machine}:*"}
