"""Every DynamoDB call an operator's commands make is granted by the operator policy, and
every write they cause is the resolver's, within its item kinds.

The operator commands run on moto through the real CLI (``--backend aws`` with the stack's
resolver URL: decisions are signed requests to the resolver, served in process by
``resolver_support.FunctionUrl``) and ``Ledger.set_budget`` (the budget API an operator
runs); ``grants_support`` records each DynamoDB request under the role making it.
``tests/infra/test_operators.py`` proves the synthesized policy grants exactly
``access.OPERATOR``; this proves ``OPERATOR`` covers what the commands call and that the
operator writes nothing but budgets (and the pointers of cases they start).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from stepsaga.cdk.access import OPERATOR, RESOLVER
from stepsaga.home import StateHome
from stepsaga.ledger import Ledger
from stepsaga.ledger.dynamodb import DynamoDBStore
from tests.functional.aws_support import REGION, TABLE, FakeAws, fake_aws, run_locally
from tests.functional.cli_support import EXAMPLES, write_case
from tests.functional.grants_support import Calls, calls
from tests.functional.resolver_support import RESOLVER_URL, deploy_resolver
from tests.functional.test_aws_cli import aws_cli

__all__ = ["calls"]  # the fixture

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
    assert calls.index["operator"] <= set(OPERATOR.index_actions)
    assert calls.writes("operator") == {
        "dynamodb:PutItem": {OPERATOR.budget_key_prefix},
        "dynamodb:DeleteItem": {OPERATOR.budget_key_prefix},
    }
    assert set(OPERATOR.budget_actions) == set(calls.writes("operator"))
    # The decisions' writes were the resolver's: within its actions and item kinds.
    writes = calls.writes("resolver")
    assert set(writes) <= set(RESOLVER.write_actions), writes
    assert set().union(*writes.values()) <= set(RESOLVER.write_prefixes), writes
    assert {"RECON#", "AUDIT#", "ACTION#"} <= set().union(*writes.values())
    assert calls.reads("resolver") <= set(RESOLVER.table_actions)
