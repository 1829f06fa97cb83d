"""Recording what each role asks DynamoDB, as the IAM actions and item kinds that authorize it.

A botocore hook on every client made while installed records each DynamoDB request under
the role currently acting (``Calls.acting_as``): a transaction item by item (IAM authorizes
``TransactWriteItems`` per item: ``PutItem``, ``UpdateItem``, ``DeleteItem``,
``ConditionCheckItem``), each with the partition key's kind (``ACTION#``, ``RECON#``… what
``dynamodb:LeadingKeys`` conditions on). Step Functions and Lambda requests are recorded
too, as IAM actions (``states:StopExecution``, ``lambda:InvokeFunction``) with the function
each invocation names. Tests compare these with ``stepsaga.cdk._access``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import botocore.session
import pytest

from stepsaga.cdk._access import WRITE_ACTIONS, FunctionAccess

#: A transaction's entries → the item action IAM authorizes each with.
_TRANSACT_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def kind_of(pk: str) -> str:
    """The item kind a partition key names: its prefix through ``#``."""
    return pk.split("#", 1)[0] + "#"


@dataclass
class Calls:
    """Per role: table actions → the item kinds they touched, and index actions."""

    acting_as: str = "operator"
    table: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set))
    )
    #: Per role: index actions → the indexes they read.
    index: dict[str, dict[str, set[str]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(set))
    )
    #: Step Functions and Lambda actions, and the ``FunctionName`` s invoked.
    api: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    invoked: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    @contextmanager
    def role(self, name: str) -> Iterator[None]:
        before, self.acting_as = self.acting_as, name
        try:
            yield
        finally:
            self.acting_as = before

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
            self.index[self.acting_as][f"dynamodb:{name}"].add(params["IndexName"])
        elif name == "Query":
            pk = params.get("ExpressionAttributeValues", {}).get(":pk", {}).get("S", "?#")
            self.table[self.acting_as]["dynamodb:Query"].add(kind_of(pk))
        elif "Key" in params or "Item" in params:
            self._item(name, params)
        else:  # table-level calls (CreateTable in a fixture, DescribeTable…)
            self.table[self.acting_as][f"dynamodb:{name}"].add("*")

    def record_states(self, model: Any, **_: Any) -> None:
        self.api[self.acting_as].add(f"states:{model.name}")

    def record_lambda(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        action = "InvokeFunction" if model.name == "Invoke" else model.name
        self.api[self.acting_as].add(f"lambda:{action}")
        if model.name == "Invoke":
            self.invoked[self.acting_as].add(str(params["FunctionName"]))

    def _item(self, action: str, body: dict[str, Any]) -> None:
        key = body.get("Key") or body["Item"]
        self.table[self.acting_as][f"dynamodb:{action}"].add(kind_of(key["pk"]["S"]))

    def writes(self, role: str) -> dict[str, set[str]]:
        return {a: k for a, k in self.table[role].items() if a in WRITE_ACTIONS}

    def reads(self, role: str) -> set[str]:
        return {a for a in self.table[role] if a not in WRITE_ACTIONS}

    def clear(self) -> None:
        self.table.clear()
        self.index.clear()
        self.api.clear()
        self.invoked.clear()


def assert_granted_exactly(calls: Calls, role: str, access: FunctionAccess) -> None:
    """What the role called is exactly what ``access`` grants, every grant used and nothing
    used that is not granted: its writes are its ``write_actions`` on its
    ``write_prefixes`` (the ``dynamodb:LeadingKeys`` of the write statement), its reads its
    ``table_actions``, its index reads its ``index_actions`` on its ``indexes``."""
    writes = calls.writes(role)
    assert set(writes) == set(access.write_actions), (role, sorted(writes))
    kinds = set().union(*writes.values()) if writes else set()
    assert kinds == set(access.write_prefixes), (role, sorted(kinds))
    assert calls.reads(role) == set(access.table_actions), (role, calls.reads(role))
    indexed = calls.index.get(role, {})
    assert set(indexed) == set(access.index_actions), (role, sorted(indexed))
    read = set().union(*indexed.values()) if indexed else set()
    assert read == set(access.indexes), (role, sorted(read))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    seen = Calls()
    create_client = botocore.session.Session.create_client

    def hooked(self: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
        client = create_client(self, *args, **kwargs)
        client.meta.events.register("provide-client-params.dynamodb.*", seen.record)
        client.meta.events.register("provide-client-params.sfn.*", seen.record_states)
        client.meta.events.register("provide-client-params.lambda.*", seen.record_lambda)
        return client

    monkeypatch.setattr(botocore.session.Session, "create_client", hooked)
    return seen
