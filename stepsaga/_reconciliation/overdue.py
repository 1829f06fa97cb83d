"""Scheduled check: how many OPEN reconciliation items are older than the threshold?

The handler of the stack's ``OverdueReconciliationCheck`` function
(``stepsaga._reconciliation.overdue.handler``); it needs no CDK, only boto3 and Powertools.

Open items are exactly the items in the sparse ``open-items-by-tenant`` index (only OPEN
items carry its keys, see ``stepsaga/ledger/_table.py``), so a Scan of that index reads open
items and nothing else. Each run emits the count as the ``ReconciliationOverdue`` metric;
the stack alarms when it is at least 1, or when no count arrives at all (a broken check must
not look like "nothing overdue").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from stepsaga._aws import metric_names
from stepsaga._aws.aws_region import region_from
from stepsaga._project import deployment
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.ledger._table import OPEN_ITEMS_INDEX

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: When the item was opened (ISO-8601, or epoch seconds), as the ledger writes it.
OPENED_AT_ATTRIBUTE: Final = "created_at"
ENV_OVERDUE_AFTER_SECONDS: Final = "STEPSAGA_OVERDUE_AFTER_SECONDS"

logger = Logger()


def opened_at(item: Mapping[str, Any]) -> datetime | None:
    """The opening time of a raw (client-format) item, or None if unreadable."""
    value = item.get(OPENED_AT_ATTRIBUTE, {})
    try:
        if "N" in value:
            return datetime.fromtimestamp(float(value["N"]), UTC)
        if "S" in value:
            parsed = datetime.fromisoformat(value["S"].replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None
    return None


def count_overdue(
    items: Iterable[Mapping[str, Any]], *, now: datetime, threshold: timedelta
) -> int:
    """Items opened before ``now - threshold`` (:func:`is_overdue`)."""
    return sum(is_overdue(opened_at(item), now=now, threshold=threshold) for item in items)


def is_overdue(opened: datetime | None, *, now: datetime, threshold: timedelta) -> bool:
    """The one overdue rule (the alarm's count and the console's marking): opened at or
    before ``now - threshold``; an item of unknown age is overdue, because hiding an open
    item is worse than one notification too many."""
    return opened is None or opened <= now - threshold


def open_items(client: DynamoDBClient, table_name: str) -> Iterator[Mapping[str, Any]]:
    paginator = client.get_paginator("scan")
    for page in paginator.paginate(
        TableName=table_name,
        IndexName=OPEN_ITEMS_INDEX,
        ProjectionExpression="#opened",
        ExpressionAttributeNames={"#opened": OPENED_AT_ATTRIBUTE},
    ):
        yield from page.get("Items", [])


def check(client: DynamoDBClient, table_name: str, threshold: timedelta, clock: Clock) -> int:
    return count_overdue(open_items(client, table_name), now=clock.now(), threshold=threshold)


def handler(event: Mapping[str, Any], context: object) -> dict[str, int]:
    threshold = timedelta(seconds=int(os.environ[ENV_OVERDUE_AFTER_SECONDS]))
    table_name = os.environ[deployment.ENV_LEDGER_TABLE_NAME]
    overdue = check(
        boto3.client("dynamodb", region_name=region_from(os.environ)),
        table_name,
        threshold,
        SystemClock(),
    )
    # The namespace is pinned to the one the alarm reads; the ``service`` dimension comes
    # from POWERTOOLS_SERVICE_NAME (the stage's service name, set by the stack).
    metrics = Metrics(namespace=metric_names.NAMESPACE)
    metrics.add_metric(
        name=metric_names.RECONCILIATION_OVERDUE, unit=MetricUnit.Count, value=overdue
    )
    metrics.flush_metrics()
    logger.info("open reconciliation items checked", extra={"overdue": overdue})
    return {"overdue": overdue}
