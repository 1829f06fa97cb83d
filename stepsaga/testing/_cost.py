"""What one case costs on AWS, counted from what it did rather than guessed.

Three meters, each from a record the run leaves anyway:

* **State transitions and Lambda invocations** from the execution's history
  (:func:`count_history`): one billed transition per state entered plus one per retry
  attempt (Step Functions Standard bills every step executed, retries included); one
  invocation per Lambda task scheduled, callbacks included.
* **DynamoDB request units** from the ledger's calls (:class:`DynamoDBMeter`), with
  DynamoDB's published rounding: a write is one unit per started KB of the larger of the
  item before and after, a strongly consistent read one unit per started 4 KB (half for an
  eventually consistent one), a transaction twice that, per item; a refused conditional
  write or a cancelled transaction still pays. moto reports a fixed ``1.0`` for every
  call, so the units are computed here from the items' sizes.
* **Lambda duration** is not measured (an in-process handler over moto says nothing about
  Lambda's latency): :class:`Prices` takes an assumed billed duration per invocation.

:class:`Prices` holds list prices (us-east-1, on-demand, arm64) with the date they were
read; pass your own for another region or a later price list.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = [
    "CaseCost",
    "DynamoDBMeter",
    "HistoryCount",
    "Prices",
    "count_history",
    "item_size",
]

_WRITE_UNIT = 1024
_READ_UNIT = 4096


@dataclass(frozen=True)
class Prices:
    """List prices in USD (us-east-1, read 2026-12-01). Override any of them."""

    per_transition: Decimal = Decimal("0.000025")  # Step Functions Standard
    per_invocation: Decimal = Decimal("0.0000002")  # Lambda requests
    per_gb_second: Decimal = Decimal("0.0000133334")  # Lambda arm64 duration
    per_write_unit: Decimal = Decimal("0.000000625")  # DynamoDB on-demand WRU
    per_read_unit: Decimal = Decimal("0.000000125")  # DynamoDB on-demand RRU
    per_publish: Decimal = Decimal("0.0000005")  # SNS standard topic publish
    lambda_memory_mb: int = 512
    lambda_billed_ms: int = 100


@dataclass(frozen=True)
class HistoryCount:
    """What an execution's history says Step Functions billed."""

    transitions: int
    invocations: int
    by_state: Mapping[str, int]


def count_history(events: Iterable[Mapping[str, Any]]) -> HistoryCount:
    """Billed transitions (states entered + retry attempts) and Lambda invocations."""
    by_state: Counter[str] = Counter()
    invocations = 0
    scheduled_in_state = 0
    current = ""
    for event in events:
        kind = str(event.get("type", ""))
        if kind.endswith("StateEntered"):
            details = event.get("stateEnteredEventDetails") or {}
            current = str(details.get("name", "?"))
            by_state[current] += 1
            scheduled_in_state = 0
        elif kind == "LambdaFunctionScheduled" or (
            kind == "TaskScheduled"
            and (event.get("taskScheduledEventDetails") or {}).get("resourceType") == "lambda"
        ):
            invocations += 1
            scheduled_in_state += 1
            if scheduled_in_state > 1:  # a retry attempt is a transition of its own
                by_state[current] += 1
    return HistoryCount(sum(by_state.values()), invocations, dict(by_state))


def item_size(item: Mapping[str, Any]) -> int:
    """An item's size in bytes as DynamoDB counts it: attribute names plus values."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: Mapping[str, Any]) -> int:
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        digits = str(inner).lstrip("-").replace(".", "").lstrip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: member}) for member in inner)
    if kind == "L":
        return 3 + sum(1 + _value_size(member) for member in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in inner.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def _units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


@dataclass
class DynamoDBMeter:
    """Request units of every DynamoDB call made by clients created after :meth:`attach`.

    ``reader`` is a client of its own (not metered) that reads an item before and after
    a write, since a write's units follow the larger of the two. Each global secondary
    index the item is in (before or after) costs its own write, as DynamoDB bills it: an
    entry added or removed is one write of its size, an entry whose index key changed is a
    delete and a put, and an unchanged key is one write of the larger size (indexes project
    the whole item here). Index writes are not doubled in a transaction.
    """

    reader: Any
    write_units: int = 0
    read_units: float = 0.0
    calls: Counter[str] = field(default_factory=Counter)
    _pending: tuple[str, Mapping[str, Any], list[Mapping[str, Any]]] = ("", {}, [])
    _schemas: dict[str, list[str]] = field(default_factory=dict)
    _indexes: dict[str, list[list[str]]] = field(default_factory=dict)

    def attach(self, events: Any) -> None:
        """Hook into a boto3 session's (or client's) event system: ``session.events``."""
        events.register("provide-client-params.dynamodb.*", self._params)
        events.register("after-call.dynamodb.*", self._after)

    def reset(self) -> None:
        self.write_units, self.read_units = 0, 0.0
        self.calls.clear()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls made inside (an operator's look-ups) are not counted."""
        kept = (self.write_units, self.read_units, Counter(self.calls))
        try:
            yield
        finally:
            self.write_units, self.read_units, self.calls = kept

    # --- hooks ---------------------------------------------------------------------------

    def _params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        writes = self._writes(model.name, params)
        before = [self._stored(table, key) for table, key, _ in writes]
        self._pending = (model.name, params, before)

    def _after(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        name, params, before = self._pending
        self.calls[name] += 1
        if name in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"):
            factor = 2 if name == "TransactWriteItems" else 1
            for (table, key, written), old in zip(self._writes(name, params), before, strict=True):
                new = written if written is not None else self._stored(table, key)
                size = max(item_size(old), item_size(new))
                self.write_units += factor * _units(size, _WRITE_UNIT)
                self.write_units += self._index_units(table, old, new)
        elif name == "GetItem":
            size = item_size(parsed.get("Item") or {})
            self.read_units += _units(size, _READ_UNIT) * (
                1 if params.get("ConsistentRead") else 0.5
            )
        elif name in ("Query", "Scan"):
            size = sum(item_size(item) for item in parsed.get("Items", []))
            self.read_units += _units(size, _READ_UNIT) * (
                1 if params.get("ConsistentRead") else 0.5
            )
        elif name == "TransactGetItems":
            for response in parsed.get("Responses", []):
                self.read_units += 2 * _units(item_size(response.get("Item") or {}), _READ_UNIT)

    # --- sizes ---------------------------------------------------------------------------

    @staticmethod
    def _writes(
        name: str, params: Mapping[str, Any]
    ) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]]:
        """(table, key, item written if the call names it whole) per item a call writes."""
        if name == "PutItem":
            return [(params["TableName"], params["Item"], params["Item"])]
        if name in ("UpdateItem", "DeleteItem"):
            return [(params["TableName"], params["Key"], None)]
        if name == "TransactWriteItems":
            found = []
            for entry in params["TransactItems"]:
                (kind, body), *_ = entry.items()
                whole = body["Item"] if kind == "Put" else None
                found.append((body["TableName"], body.get("Key") or body["Item"], whole))
            return found
        return []

    def _index_units(self, table: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> int:
        units = 0
        for key in self._index_keys(table):
            was = [old.get(name) for name in key] if all(n in old for n in key) else None
            now = [new.get(name) for name in key] if all(n in new for n in key) else None
            if was is None and now is None:
                continue
            if was is None or now is None or was != now:
                units += (_units(item_size(old), _WRITE_UNIT) if was is not None else 0) + (
                    _units(item_size(new), _WRITE_UNIT) if now is not None else 0
                )
            else:
                units += _units(max(item_size(old), item_size(new)), _WRITE_UNIT)
        return units

    def _stored(self, table: str, key: Mapping[str, Any]) -> Mapping[str, Any]:
        schema = self._key_names(table)
        only_key = {name: key[name] for name in schema if name in key}
        found = self.reader.get_item(TableName=table, Key=only_key, ConsistentRead=True)
        item: Mapping[str, Any] = found.get("Item") or {}
        return item

    def _key_names(self, table: str) -> list[str]:
        self._describe(table)
        return self._schemas[table]

    def _index_keys(self, table: str) -> list[list[str]]:
        self._describe(table)
        return self._indexes[table]

    def _describe(self, table: str) -> None:
        if table in self._schemas:
            return
        described = self.reader.describe_table(TableName=table)["Table"]
        self._schemas[table] = [k["AttributeName"] for k in described["KeySchema"]]
        self._indexes[table] = [
            [k["AttributeName"] for k in index["KeySchema"]]
            for index in described.get("GlobalSecondaryIndexes", [])
        ]


@dataclass(frozen=True)
class CaseCost:
    """One path's counts and what 1,000 cases of it cost at ``prices``."""

    path: str
    history: HistoryCount
    write_units: int
    read_units: float
    publishes: int
    prices: Prices = Prices()

    def per_thousand(self) -> dict[str, Decimal]:
        p = self.prices
        gb_seconds = Decimal(p.lambda_memory_mb) / 1024 * Decimal(p.lambda_billed_ms) / 1000
        parts = {
            "step_functions": self.history.transitions * p.per_transition,
            "lambda": self.history.invocations * (p.per_invocation + gb_seconds * p.per_gb_second),
            "dynamodb": self.write_units * p.per_write_unit
            + Decimal(str(self.read_units)) * p.per_read_unit,
            "sns": self.publishes * p.per_publish,
        }
        parts = {name: value * 1000 for name, value in parts.items()}
        parts["total"] = sum(parts.values(), Decimal(0))
        return parts

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "transitions": self.history.transitions,
            "transitions_by_state": dict(self.history.by_state),
            "lambda_invocations": self.history.invocations,
            "dynamodb_write_units": self.write_units,
            "dynamodb_read_units": self.read_units,
            "sns_publishes": self.publishes,
            "usd_per_1000_cases": {k: str(round(v, 4)) for k, v in self.per_thousand().items()},
        }

    def __str__(self) -> str:
        return json.dumps(self.to_json())
