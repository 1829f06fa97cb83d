"""Listings page the same way on both stores: every filter, every page size, in order, to
the end; a token works only with the listing and filters it was made for."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from stepsaga.errors import InvalidInputError
from stepsaga.ledger import Ledger
from stepsaga.ledger._models import ReconItem, Record
from stepsaga.testing._bulk import STALE, history
from tests.framework.conformance.ledger.conftest import StoreFactory
from tests.framework.conformance.ledger.helpers import START

N = 90
FILTERS: list[dict[str, Any]] = [
    {},
    {"tenant": "tenant-3"},
    {"status": "COMPLETED"},
    {"tenant": "tenant-4", "status": "COMPLETED"},
    {"case": "CASE-8"},
    {"tenant": "tenant-5", "case": "CASE-8"},
    {"tenant": "tenant-5", "case": "CASE-8", "status": "FAILED"},
]


@pytest.fixture
def filled(ledger: Ledger, make_store: StoreFactory) -> tuple[list[Record], list[ReconItem]]:
    records, items = history(N, now=START)
    store = make_store()
    for record in records:
        store.put(record, expect=None)
    for item in items:
        store.put_item(item, expect=None)
    return records, items


def _matches(value: Record | ReconItem, filters: dict[str, Any]) -> bool:
    return all(
        getattr(value, {"tenant": "tenant_id", "case": "case_id"}.get(k, k)) == v
        for k, v in filters.items()
    )


def _every_page(fetch: Any, limit: int) -> list[Any]:
    seen: list[Any] = []
    token = None
    while True:
        page = fetch(limit=limit, next_token=token)
        assert len(page.items) <= limit
        seen += page.items
        token = page.next_token
        if token is None:
            return seen
        assert len(page.items) == limit, "a page with a next one is full"


def test_records_page_in_order_to_the_end(
    ledger: Ledger, filled: tuple[list[Record], list[ReconItem]]
) -> None:
    records, _ = filled
    for filters in FILTERS:
        expected = sorted(
            (r for r in records if _matches(r, filters)), key=lambda r: (r.created_at, r.key)
        )
        for limit in (1, 7, 100):
            got = _every_page(lambda **page: ledger.page(**filters, **page), limit)  # noqa: B023
            assert [r.key for r in got] == [r.key for r in expected], (filters, limit)
            assert got == expected


ITEM_FILTERS: list[dict[str, Any]] = [
    {},
    {"tenant": "tenant-0"},
    {"status": "OPEN"},
    {"status": "RESOLVED"},
    {"case": "CASE-5"},
    {"tenant": "tenant-0", "status": "OPEN"},
    {"tenant": "tenant-5", "status": "RESOLVED"},
]


def test_items_page_in_order_to_the_end(
    ledger: Ledger, filled: tuple[list[Record], list[ReconItem]]
) -> None:
    _, items = filled
    for filters in ITEM_FILTERS:
        expected = [i.item_id for i in items if _matches(i, filters)]
        got = _every_page(lambda **page: ledger.page_items(**filters, **page), 4)  # noqa: B023
        assert [i.item_id for i in got] == expected, filters


def test_sweep_pages_through_every_stale_claim_once(
    ledger: Ledger, filled: tuple[list[Record], list[ReconItem]]
) -> None:
    records, _ = filled
    stale = [r for r in records if r.lease_expires_at is not None and r.lease_expires_at < START]
    assert len(stale) == min(STALE, len(stale))
    swept = _every_page(lambda **page: ledger.sweep_page(**page), 3)
    assert sorted(r.key for r in swept) == sorted(r.key for r in stale)
    assert ledger.sweep_page().items == ()


def _forge(token: str, **change: Any) -> str:
    data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    data.update(change)
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode()


def test_a_token_is_refused_with_other_filters_another_listing_or_forged(
    ledger: Ledger, filled: tuple[list[Record], list[ReconItem]]
) -> None:
    token = ledger.page(tenant="tenant-1", limit=2).next_token
    assert token is not None
    assert ledger.page(tenant="tenant-1", limit=5, next_token=token).items  # the limit may change
    refused: list[Callable[[], object]] = [
        lambda: ledger.page(tenant="tenant-2", limit=2, next_token=token),
        lambda: ledger.page(limit=2, next_token=token),
        lambda: ledger.page(tenant="tenant-1", status="FAILED", limit=2, next_token=token),
        lambda: ledger.page_items(tenant="tenant-1", limit=2, next_token=token),
        lambda: ledger.sweep_page(next_token=token),
        lambda: ledger.page(tenant="tenant-1", next_token="not-a-token"),
        lambda: ledger.page(tenant="tenant-1", next_token=token[:-4]),
        lambda: ledger.page(tenant="tenant-1", next_token=_forge(token, after="'; DROP")),
        lambda: ledger.page(tenant="tenant-1", next_token=_forge(token, extra=1)),
        lambda: ledger.page(tenant="tenant-1", next_token="x" * 5000),
    ]
    for attempt in refused:
        with pytest.raises(InvalidInputError, match="--next-token") as caught:
            attempt()
        assert caught.value.to_dict()["data"]["field"] == "next_token"
    with pytest.raises(InvalidInputError, match="--limit"):
        ledger.page(limit=1001)
