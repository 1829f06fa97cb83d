"""Items written before an index existed (moto): a case lookup misses them until
``stepsaga ledger reindex`` gives them this version's index attributes; a second run
changes nothing, and a write made meanwhile is never overwritten."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from stepsaga._util.clock import ManualClock
from stepsaga.cli._app import app
from stepsaga.ledger import Ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._models import ReconStatus
from stepsaga.ledger._table import LOOKUP_ATTRIBUTES, OPEN_ITEMS_PARTITION_KEY
from stepsaga.testing._bulk import history, open_backlog

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TABLE = "ledger"
URL = f"dynamodb://{TABLE}?region=us-east-1"


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        boto3.setup_default_session(region_name="us-east-1")
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        create_table(ddb, TABLE)
        yield ddb
        boto3.DEFAULT_SESSION = None


def strip(client: Any, pk: str, sk: str, *, keep: tuple[str, ...] = ()) -> None:
    """Make an item look as an earlier version wrote it: no index attributes but ``keep``."""
    gone = [a for a in LOOKUP_ATTRIBUTES if a not in keep]
    client.update_item(
        TableName=TABLE,
        Key={"pk": {"S": pk}, "sk": {"S": sk}},
        UpdateExpression="REMOVE " + ", ".join(f"#a{i}" for i in range(len(gone))),
        ExpressionAttributeNames={f"#a{i}": a for i, a in enumerate(gone)},
    )


def reindex() -> dict[str, int]:
    result = CliRunner().invoke(app, ["ledger", "reindex", "--url", URL, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, int] = json.loads(result.stdout)
    return data


def test_reindex_makes_old_items_findable_by_case_and_is_repeatable(client: Any) -> None:
    store = DynamoDBStore(TABLE, client)
    ledger = Ledger(store, clock=ManualClock(NOW))
    records, _ = history(3, now=NOW)  # one case, three records
    [item] = open_backlog(1, tenant="tenant-0", now=NOW)
    store.bulk_insert(records, [item])
    # The open item as written before ``by-case``: only the open-items index's attributes.
    strip(client, f"RECON#{item.item_id}", "RECON", keep=(OPEN_ITEMS_PARTITION_KEY, "gsi1sk"))
    for record in records:
        strip(client, f"ACTION#{record.key}", "ACTION")
    case = records[0].case_id
    assert ledger.list_items(tenant="tenant-0", status="OPEN", case=item.case_id) == []
    assert ledger.list(case=case) == []
    assert [i.item_id for i in ledger.list_items(tenant="tenant-0", status="OPEN")] == [
        item.item_id
    ]  # the older index had it all along

    assert reindex() == {"scanned": 4, "updated": 4}
    found = ledger.list_items(tenant="tenant-0", status=ReconStatus.OPEN, case=item.case_id)
    assert [i.item_id for i in found] == [item.item_id]
    assert sorted(r.key for r in ledger.list(case=case)) == sorted(r.key for r in records)
    assert reindex() == {"scanned": 4, "updated": 0}


def test_reindex_never_overwrites_a_write_made_since_it_read(client: Any) -> None:
    store = DynamoDBStore(TABLE, client)
    [item] = open_backlog(1, tenant="tenant-0", now=NOW)
    store.bulk_insert([], [item])
    strip(client, f"RECON#{item.item_id}", "RECON")
    key = {"pk": {"S": f"RECON#{item.item_id}"}, "sk": {"S": "RECON"}}
    read = client.get_item(TableName=TABLE, Key=key)["Item"]
    resolved = {"S": "2026-11-29T12:05:00.000000Z"}
    client.update_item(
        TableName=TABLE,
        Key=key,
        UpdateExpression="SET updated_at = :u",
        ExpressionAttributeValues={":u": resolved},
    )
    assert store._reindex_one(read) is False  # its condition on updated_at failed
    assert client.get_item(TableName=TABLE, Key=key)["Item"]["updated_at"] == resolved


def test_a_sqlite_ledger_needs_no_reindex(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    result = CliRunner().invoke(app, ["ledger", "reindex", "--url", url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"scanned": 0, "updated": 0}
