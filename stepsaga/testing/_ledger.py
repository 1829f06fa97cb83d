"""A fresh ledger table on any DynamoDB endpoint (moto, DynamoDB Local, AWS).

Why: the ledger expects its table to exist with the layout of ``stepsaga/ledger/_table.py``
(the CDK stack creates it on AWS); ``create_table`` builds exactly that shape, and the URL
this returns is what ``open_ledger`` and ``stepsaga ledger --url`` take.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from stepsaga.ledger import open_ledger
from stepsaga.ledger._dynamodb import create_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from stepsaga._util.clock import Clock
    from stepsaga.ledger._policy import LedgerPolicy
    from stepsaga.ledger._rules import Ledger


@dataclass(frozen=True)
class CreatedLedgerTable:
    """A created ledger table: its ``name``, the ledger ``url`` and the ``client`` used."""

    name: str
    url: str
    client: DynamoDBClient

    def open(self, *, clock: Clock | None = None, policy: LedgerPolicy | None = None) -> Ledger:
        """``open_ledger(self.url)``: the ledger rules over this table."""
        return open_ledger(self.url, clock=clock, policy=policy)


def create_ledger_table(
    client: DynamoDBClient, *, name: str | None = None, endpoint_url: str | None = None
) -> CreatedLedgerTable:
    """Create a ledger table (default name: unique) through ``client``; ``endpoint_url``
    goes into the URL for endpoints other than boto3's default (DynamoDB Local)."""
    table = name or f"stepsaga-ledger-{uuid.uuid4().hex[:12]}"
    create_table(client, table)
    query = {"region": client.meta.region_name}
    if endpoint_url is not None:
        query["endpoint_url"] = endpoint_url
    return CreatedLedgerTable(table, f"dynamodb://{table}?{urlencode(query)}", client)
