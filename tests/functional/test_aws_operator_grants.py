"""Every DynamoDB action an operator's commands make is granted by the operator policy.

The operator commands run on moto through the real CLI (``--backend aws``) and
``Ledger.set_budget`` (the budget API an operator runs); a botocore hook on every client
they create records each DynamoDB request as the IAM actions that authorize it (a
transaction is authorized item by item). ``tests/infra/test_operators.py`` proves the
synthesized policy grants exactly ``access.OPERATOR``; this proves ``OPERATOR`` covers
what the commands call, so the two together say the policy is enough.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest

from stepsaga.cdk.access import OPERATOR
from stepsaga.home import StateHome
from stepsaga.ledger import Ledger
from stepsaga.ledger.dynamodb import DynamoDBStore
from tests.functional.aws_support import REGION, TABLE, FakeAws, fake_aws, run_locally
from tests.functional.cli_support import EXAMPLES, write_case
from tests.functional.test_aws_cli import aws_cli

UNVERIFIABLE = EXAMPLES / "faults-shipment-unverifiable.json"
#: A transaction's entries → the item action IAM authorizes each with.
_TRANSACT_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


@dataclass
class Calls:
    """IAM actions on the table and on its indexes, and the partition keys deleted."""

    table: set[str] = field(default_factory=set)
    index: set[str] = field(default_factory=set)
    deleted_keys: list[str] = field(default_factory=list)

    def record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        if name == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((kind, body),) = entry.items()
                self._item(_TRANSACT_ITEM_ACTIONS[kind], body)
        elif name == "TransactGetItems":
            for entry in params["TransactItems"]:
                self._item("GetItem", entry["Get"])
        elif name in ("Query", "Scan") and params.get("IndexName"):
            self.index.add(f"dynamodb:{name}")
        else:
            self._item(name, params)

    def _item(self, action: str, body: dict[str, Any]) -> None:
        assert body.get("TableName", TABLE) == TABLE
        self.table.add(f"dynamodb:{action}")
        if action == "DeleteItem":
            self.deleted_keys.append(body["Key"]["pk"]["S"])


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    seen = Calls()
    create_client = botocore.session.Session.create_client

    def hooked(self: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
        client = create_client(self, *args, **kwargs)
        client.meta.events.register("provide-client-params.dynamodb.*", seen.record)
        return client

    monkeypatch.setattr(botocore.session.Session, "create_client", hooked)
    return seen


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def test_the_operator_commands_need_only_the_operator_policys_actions(
    aws: FakeAws, home: StateHome, tmp_path: Path, calls: Calls
) -> None:
    case_file = write_case(tmp_path)
    local = run_locally(home, case_file, UNVERIFIABLE)
    aws.copy_ledger(local.records, local.items)
    env = {
        "STEPSAGA_STATE_MACHINE_ARN": aws.state_machine_arn,
        "STEPSAGA_LEDGER_TABLE_NAME": TABLE,
        "STEPSAGA_AWS_WAIT_SECONDS": "0",
        "AWS_REGION": REGION,
    }
    assert aws_cli(env, "start", str(case_file)).code == 0
    calls.table.clear()  # starting cases is the ingress's, not an operator's
    calls.index.clear()
    item_id = local.view["open_items"][0]
    key = local.records[0].key
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
    # Budgets: set, then re-split over fewer shards (the transaction deletes the rest).
    ddb = boto3.client("dynamodb", region_name=REGION)
    Ledger(DynamoDBStore(TABLE, ddb, budget_shards=4)).set_budget("acme", 10_000)
    Ledger(DynamoDBStore(TABLE, ddb, budget_shards=1)).set_budget("acme", 5_000)

    granted_table = {*OPERATOR.table_actions, *OPERATOR.budget_actions}
    assert calls.table <= granted_table, sorted(calls.table - granted_table)
    assert calls.index <= set(OPERATOR.index_actions), sorted(calls.index)
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"} <= calls.table, calls
    # DeleteItem is granted only on budget items (dynamodb:LeadingKeys BUDGET#*): that is
    # the only thing the commands delete.
    assert calls.deleted_keys
    assert all(pk.startswith(OPERATOR.budget_key_prefix) for pk in calls.deleted_keys)
