"""Every DynamoDB call an operator's commands make is granted by the operator policy, and
every write they cause is the resolver's, within its item kinds.

The operator commands run on moto through the real CLI (``--backend aws`` with the stack's
resolver URL: decisions are signed requests to the resolver, served in process by
``resolver_support.FunctionUrl``) and ``Ledger.set_budget`` (the budget API an operator
runs); ``grants_support`` records each DynamoDB request under the role making it.
``tests/framework/infra/test_operators.py`` proves the synthesized policy grants exactly
``access.OPERATOR``; this proves ``OPERATOR`` covers what the commands call and that the
operator writes nothing but budgets (and the pointers of cases they start).

``cancel`` runs on the synthesized stack on moto (``test_moto_end_to_end``: the resolver
behind its function URL invokes the deployed compensations), each function's requests
recorded under its own role: the operator reads, the resolver stops, reads the definition
and invokes exactly the compensations' and the reconciler's ``live`` aliases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from stepsaga._aws.resolver import RESOLVER_HANDLER
from stepsaga._project.home import StateHome
from stepsaga.cdk._access import (
    OPERATOR,
    RESOLVER,
    RESOLVER_DEFINITION_ACTIONS,
    RESOLVER_EXECUTION_ACTIONS,
    RESOLVER_STATE_MACHINE_ACTIONS,
    RESOLVER_UNDO_ACTIONS,
)
from stepsaga.ledger import Ledger
from stepsaga.ledger._dynamodb import DynamoDBStore
from stepsaga.ledger._models import ReconStatus
from stepsaga.testing import _moto_stack as moto_stack
from stepsaga.testing._moto_stack import DeployedFunction, MotoDeployment
from tests.framework.functional import test_moto_end_to_end as e2e
from tests.framework.functional.aws_support import REGION, TABLE, FakeAws, fake_aws, run_locally
from tests.framework.functional.cli_support import EXAMPLES, write_case
from tests.framework.functional.grants_support import Calls, calls
from tests.framework.functional.resolver_support import RESOLVER_URL, deploy_resolver
from tests.framework.functional.test_aws_cli import aws_cli
from tests.framework.functional.test_moto_end_to_end import deployed, synthesized

__all__ = ["calls", "deployed", "synthesized"]  # the fixtures

UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def test_the_operator_commands_need_only_the_operator_policys_actions(
    aws: FakeAws,
    home: StateHome,
    tmp_path: Path,
    calls: Calls,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = deploy_resolver(aws, monkeypatch)
    serve = stack.url.resolver.handle

    def served(event: Any) -> dict[str, Any]:
        with calls.role("resolver"):
            return serve(event)

    monkeypatch.setattr(stack.url.resolver, "handle", served)
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file, UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    env = {
        "STEPSAGA_STATE_MACHINE_ARN": aws.state_machine_arn,
        "STEPSAGA_LEDGER_TABLE_NAME": TABLE,
        "STEPSAGA_RESOLVER_URL": RESOLVER_URL,
        "STEPSAGA_AWS_WAIT_SECONDS": "0",
        "AWS_REGION": REGION,
    }
    assert aws_cli(env, "start", str(case_file)).code == 0
    calls.clear()  # starting cases is the ingress's, not an operator's
    item_id = local.view["open_items"][0]
    key = local.records[0].key
    with stack.operator(stack.add("stepsaga-operator", "ops")):
        for command in (
            ("status", "CASE-1001"),
            ("history", "CASE-1001"),
            ("list",),
            ("recon", "list"),
            ("recon", "list", "--tenant", "acme"),
            ("recon", "show", item_id),
            ("recon", "resolve", item_id, "--outcome", "applied", "--by", "ops", "--note", "ok"),
            ("ledger", "list"),
            ("ledger", "show", key),
            ("ledger", "sweep"),
            ("stop", "--case", "CASE-1001", "--by", "ops@acme.example", "--note", "done"),
        ):
            result = aws_cli(env, *command, "--json")
            assert result.code == 0, (command, result.err)
    assert [e["requestContext"]["authorizer"]["iam"]["userArn"] for e in stack.url.events]
    # Budgets: set, then re-split over fewer shards (the transaction deletes the rest).
    ddb = boto3.client("dynamodb", region_name=REGION)
    Ledger(DynamoDBStore(TABLE, ddb, budget_shards=4)).set_budget("acme", 10_000)
    Ledger(DynamoDBStore(TABLE, ddb, budget_shards=1)).set_budget("acme", 5_000)

    # The operator reads; writes only budget shards (PutItem/DeleteItem under BUDGET#).
    assert calls.reads("operator") <= set(OPERATOR.table_actions), calls.reads("operator")
    assert set(calls.index["operator"]) <= set(OPERATOR.index_actions)
    assert calls.writes("operator") == {
        "dynamodb:PutItem": {OPERATOR.budget_key_prefix},
        "dynamodb:DeleteItem": {OPERATOR.budget_key_prefix},
    }
    assert set(OPERATOR.budget_actions) == set(calls.writes("operator"))
    # The decisions' writes were the resolver's: within its actions and item kinds.
    writes = calls.writes("resolver")
    assert set(writes) <= set(RESOLVER.write_actions), writes
    assert set().union(*writes.values()) <= set(RESOLVER.write_prefixes), writes
    assert calls.reads("resolver") == set(RESOLVER.table_actions)
    assert calls.index["resolver"] == {"dynamodb:Query": set(RESOLVER.indexes)}
    assert {"RECON#", "AUDIT#", "ACTION#"} <= set().union(*writes.values())
    # Its reads and index exactly (its other writes: test_role_grants.py).
    assert calls.reads("resolver") == set(RESOLVER.table_actions)
    assert calls.index["resolver"] == {"dynamodb:Query": set(RESOLVER.indexes)}


def test_cancel_is_the_resolvers_within_its_grants_and_the_operator_only_reads(
    deployed: MotoDeployment,
    home: StateHome,
    tmp_path: Path,
    calls: Calls,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = moto_stack._run

    def as_its_role(function: DeployedFunction, event: Any, region: str) -> Any:
        with calls.role("resolver" if function.handler == RESOLVER_HANDLER else "function"):
            return run(function, event, region)

    monkeypatch.setattr(moto_stack, "_run", as_its_role)
    arn = e2e.start(deployed, home, tmp_path, UNVERIFIABLE)

    def waiting(_: Any) -> bool:
        open_items = e2e.ledger(deployed).list_items(status=ReconStatus.OPEN)
        return any(i.task_token for i in open_items)

    assert deployed.wait(arn, until=waiting)["status"] == "RUNNING"
    calls.clear()  # starting cases is the ingress's, not an operator's
    who = ("--by", "ops@acme.example", "--note", "customer cancelled")

    cancelled = e2e.aws(deployed, "cancel", "--case", "CASE-1001", *who, "--json")

    assert cancelled.code == 0, cancelled.err
    # The operator read and signed one request: no Step Functions write, no invocation.
    granted = {*OPERATOR.state_machine_actions, *OPERATOR.execution_actions}
    assert calls.api["operator"] <= granted, calls.api["operator"]
    assert calls.writes("operator") == {}
    # The resolver: exactly its grants' kinds of call, the functions invoked by their
    # live aliases (the ARNs its role names: tests/framework/infra/test_iam.py).
    resolver_grants = {
        *RESOLVER_STATE_MACHINE_ACTIONS,
        *RESOLVER_EXECUTION_ACTIONS,
        *RESOLVER_DEFINITION_ACTIONS,
        *RESOLVER_UNDO_ACTIONS,
    }
    assert calls.api["resolver"] <= resolver_grants, calls.api["resolver"]
    used = {"states:StopExecution", "states:DescribeStateMachine", "lambda:InvokeFunction"}
    assert used <= calls.api["resolver"]
    live = {f"{deployed.function(name).arn}:live" for name in ("ReleaseReservation", "Reconcile")}
    assert calls.invoked["resolver"] == live
    writes = calls.writes("resolver")
    assert set(writes) <= set(RESOLVER.write_actions), writes
    assert set().union(*writes.values()) <= set(RESOLVER.write_prefixes), writes
    assert calls.reads("resolver") == set(RESOLVER.table_actions)
    assert calls.index["resolver"] == {"dynamodb:Query": set(RESOLVER.indexes)}
