"""Shared fixtures: the replacement-order saga, its compiled ASL, a sample case."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga import Saga
from stepsaga.workflow import compile
from workflows.case import Case, parse_case
from workflows.replacement_order import saga as replacement_order

SAMPLE_CASE: dict[str, Any] = {
    "tenant_id": "acme",
    "case_id": "CASE-1001",
    "approval": {
        "approved_by": "ops@acme.example",
        "approved_at": "2026-11-29T09:30:00Z",
        "revision": 1,
    },
    "order_id": "ORD-77",
    "reserve": {"sku": "SKU-RED-MUG", "quantity": 1, "warehouse": "eu-west"},
    "refund": {"payment_id": "PAY-991", "amount": 20, "currency": "usd"},
    "shipment": {
        "address": {
            "name": "A. Buyer",
            "line1": "1 Main St",
            "city": "Berlin",
            "postal_code": "10115",
            "country": "DE",
        },
        "items": [{"sku": "SKU-RED-MUG", "quantity": 1}],
    },
}


@pytest.fixture
def saga() -> Saga:
    return replacement_order


@pytest.fixture
def definition(saga: Saga) -> dict[str, Any]:
    return compile(saga)


@pytest.fixture
def case() -> Case:
    return parse_case(SAMPLE_CASE)
