"""``list_executions`` on AWS (moto): ``ListExecutions`` pages of the stack's state
machine, the filters it cannot apply applied on its items, and our own opaque token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from stepsaga.backends._aws import AwsBackend
from stepsaga.backends._aws import listing as aws_listing
from stepsaga.backends._naming import execution_name
from stepsaga.errors import SAGA_COMPENSATED, InvalidInputError
from stepsaga.ledger import ReconItem
from stepsaga.ledger._models import ReconStatus
from tests.framework.functional.aws_support import FakeAws, fake_aws


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def _start(aws: FakeAws, tenant: str, case: str, revision: int = 1) -> str:
    name = execution_name(tenant, case, revision)
    data = {"tenant_id": tenant, "case_id": case, "approval": {"revision": revision}}
    aws.sfn.start_execution(
        stateMachineArn=aws.state_machine_arn, name=name, input=json.dumps(data)
    )
    return name


def _walk(backend: AwsBackend, **flags: Any) -> list[list[str]]:
    pages, token = [], None
    while True:
        page = backend.list_executions(next_token=token, **flags)
        pages.append([item.name for item in page.items])
        token = page.next_token
        if token is None:
            return pages


def test_pages_follow_list_executions_newest_first(aws: FakeAws) -> None:
    started = [_start(aws, "acme", f"C{i}") for i in range(7)]
    backend = aws.backend()
    newest_first = list(reversed(started))
    assert [i.name for i in backend.list_executions().items] == newest_first
    for limit in (1, 2, 3, 7):
        pages = _walk(backend, limit=limit)
        assert [name for page in pages for name in page] == newest_first
        assert all(len(page) <= limit for page in pages)


def test_filters_it_cannot_ask_aws_for(aws: FakeAws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aws_listing, "MAX_LIMIT", 3)  # small AWS pages: several per listing
    a1 = _start(aws, "acme", "A1")
    g1 = _start(aws, "globex", "G1")
    d1 = _start(aws, "acme-eu", "D1")  # a dashed tenant: a hashed name, read from its input
    a2 = _start(aws, "acme", "A2")
    g2 = _start(aws, "globex", "G2")
    a3 = _start(aws, "acme", "A3")
    aws.set_status(a2, "FAILED", error=SAGA_COMPENSATED)
    aws.set_status(g1, "FAILED", error="TransientError")
    aws.set_status(a1, "SUCCEEDED")
    aws.copy_ledger([], [_waiting_item("acme", "A3")])
    backend = aws.backend()

    def names(**flags: Any) -> list[str]:
        return [name for page in _walk(backend, limit=2, **flags) for name in page]

    assert names(tenant="acme") == [a3, a2, a1]
    assert names(tenant="acme-eu") == [d1]
    assert names(tenant="globex") == [g2, g1]
    assert names(outcome="compensated") == [a2]
    assert names(outcome="failed") == [g1]
    assert names(outcome="awaiting_reconciliation") == [a3]
    assert names(outcome="running") == [g2, d1]
    assert names(status="RUNNING", tenant="acme") == [a3]
    item = backend.list_executions(tenant="acme-eu").items[0]
    assert (item.tenant_id, item.case_id, item.revision, item.outcome) == (
        "acme-eu",
        "D1",
        1,
        "running",
    )
    far = datetime(2999, 1, 1, tzinfo=UTC).isoformat()
    assert backend.list_executions(since=far).items == ()


def test_a_rare_match_returns_a_short_page_with_a_token(
    aws: FakeAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aws_listing, "MAX_LIMIT", 2)
    monkeypatch.setattr(aws_listing, "MAX_PAGES", 2)
    wanted = _start(aws, "globex", "G1")
    for i in range(6):
        _start(aws, "acme", f"A{i}")
    calls: list[dict[str, Any]] = []
    real = aws.sfn.list_executions

    def counted(**request: Any) -> Any:
        calls.append(request)
        return real(**request)

    monkeypatch.setattr(aws.sfn, "list_executions", counted)
    first = aws.backend().list_executions(tenant="globex")
    assert (first.items, len(calls)) == ((), 2)  # bounded: two pages read, none matched
    assert first.next_token is not None
    pages = _walk(aws.backend(), tenant="globex")
    assert [name for page in pages for name in page] == [wanted]


def test_tokens_are_ours_and_bound_to_the_filters(aws: FakeAws) -> None:
    for i in range(3):
        _start(aws, "acme", f"C{i}")
    backend = aws.backend()
    token = backend.list_executions(limit=1).next_token
    assert token is not None
    for flags in ({"tenant": "acme"}, {"status": "RUNNING"}):
        with pytest.raises(InvalidInputError, match="--next-token"):
            backend.list_executions(limit=1, next_token=token, **flags)
    raw = aws.sfn.list_executions(stateMachineArn=aws.state_machine_arn, maxResults=1)
    with pytest.raises(InvalidInputError, match="--next-token"):
        backend.list_executions(next_token=raw["nextToken"])  # AWS's own token is not ours
    with pytest.raises(InvalidInputError, match="this stack runs saga"):
        backend.list_executions(saga="another-saga")


def _waiting_item(tenant: str, case: str) -> ReconItem:
    now = datetime.now(UTC)
    return ReconItem(
        item_id=f"rec-{case}",
        record_key=f"{tenant}:{case}:r1:create_shipment",
        tenant_id=tenant,
        case_id=case,
        reason="outcome unknown",
        step="CreateShipment",
        evidence={},
        status=ReconStatus.OPEN,
        created_at=now,
        updated_at=now,
        task_token="token-" + case,
    )
