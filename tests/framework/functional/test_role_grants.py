"""Each function role's ledger calls, recorded on real paths, are exactly what it is granted.

The saga's handlers run over the DynamoDB ledger on moto (``test_handlers_dynamodb.Lambda``);
``grants_support`` records each request under the role making it. A step writes only its
action records and its tenant's budget (``ACTION#``, ``BUDGET#``), the reconciler also the
reconciliation items and the audit records of automatic decisions; the grants
(``access.LEDGER_WRITER``/``RECONCILER``, conditioned on ``dynamodb:LeadingKeys`` in the
template: ``tests/framework/infra/test_iam.py``) are exactly those, none unused: reads,
writes, item kinds and indexes (``grants_support.assert_granted_exactly``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from stepsaga.cdk._access import LEDGER_WRITER, RECONCILER, RESOLVER
from stepsaga.errors import OutcomeUnknownError
from stepsaga.ledger import _revisions as revisions
from stepsaga.ledger._dynamodb import create_table
from tests.framework.functional.grants_support import Calls, assert_granted_exactly, calls
from tests.framework.functional.test_handlers_dynamodb import Lambda
from tests.framework.unit.handlers.helpers import (
    CASE,
    case_input,
    compensation_event,
    fault,
    reconcile_event,
    step_event,
)

__all__ = ["calls"]  # the fixture


@pytest.fixture
def table(calls: Calls) -> Iterator[None]:
    with mock_aws(), calls.role("setup"):
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
        yield


@pytest.mark.usefixtures("table")
def test_steps_and_the_reconciler_write_exactly_their_item_kinds(
    tmp_path: Path, calls: Calls
) -> None:
    undecided = case_input(case_id="CASE-2002")
    unsent = case_input(case_id="CASE-3003")
    unpaid = case_input(case_id="CASE-4004")
    broke_case = case_input(case_id="CASE-5005")
    # A revision past the direct reads of earlier revisions' keys: the step finds its
    # case's earlier records in ``by-case``.
    far = case_input(approval={**CASE["approval"], "revision": revisions.DIRECT_READS + 4})
    aws = Lambda(
        tmp_path,
        {
            "faults": [
                fault("create_shipment", "lose_response"),
                fault("find_shipment_by_reference", "throttle", case_id="CASE-2002", times=2),
                fault("refund", "timeout_before_effect", case_id="CASE-3003", times=2),
            ]
        },
    )
    with calls.role("setup"):
        aws.deps.ledger.set_budget("acme", 10)

    with calls.role("step"):
        reserved = aws.run("ReserveStock", step_event("ReserveStock"))
        aws.run("RefundPayment", step_event("RefundPayment"))
        with pytest.raises(OutcomeUnknownError):
            aws.run("RefundPayment", step_event("RefundPayment", unsent))
        for case in (None, undecided):
            with pytest.raises(OutcomeUnknownError):
                aws.run("CreateShipment", step_event("CreateShipment", case))
        aws.run("ReleaseReservation", compensation_event(reserved))
        aws.run("ReserveStock", step_event("ReserveStock", far))
    with calls.role("reconciler"):
        # Found by reference: decided automatically (with its audit record).
        assert aws.run("Reconcile", reconcile_event("CreateShipment"))["outcome"] == "applied"
        # Looked up by key and not there: not applied, the debit refunded.
        refund = aws.run("Reconcile", reconcile_event("RefundPayment", case=unsent))
        assert refund["outcome"] == "not_applied"
        # Not found: an item for a person.
        verdict = aws.run("Reconcile", reconcile_event("CreateShipment", case=undecided))
        assert verdict["outcome"] == "undecided"
        # Refused for money, never claimed: the budget (its shards) covers it now.
        budget = reconcile_event("RefundPayment", error="BudgetExhaustedError", case=unpaid)
        assert aws.run("Reconcile", budget)["outcome"] == "not_applied"
    with calls.role("setup"):
        aws.deps.ledger.set_budget("acme", 0)
    with calls.role("reconciler"):
        # Refused for money and still not covered: an item for a person.
        broke = reconcile_event("RefundPayment", error="BudgetExhaustedError", case=broke_case)
        unclaimed = aws.run("Reconcile", broke)
        assert unclaimed["outcome"] == "undecided"

    # People's decisions, as the resolver makes them (``Ledger.decide_item`` with the
    # signer's identity; its reads, index and pointer calls: test_aws_operator_grants.py).
    # Not applied under dual control: a first approval, then the resolution that refunds
    # the debit; an item about an action never claimed: nothing written to its record,
    # only checked absent in the resolution's transaction.
    ledger = aws.deps.ledger
    with calls.role("resolver"):
        for item_id in (str(verdict["item_id"]), str(unclaimed["item_id"])):
            for by in ("alice@acme.example", "bob@acme.example"):
                ledger.decide_item(item_id, "not_applied", by, "nothing happened")
            decided = ledger.get_item(item_id)
            assert decided is not None
            assert decided.status.value == "RESOLVED"

    assert_granted_exactly(calls, "step", LEDGER_WRITER)
    assert_granted_exactly(calls, "reconciler", RECONCILER)
    writes = calls.writes("resolver")
    assert set(writes) == set(RESOLVER.write_actions), writes
    assert set().union(*writes.values()) == set(RESOLVER.write_prefixes), writes
    assert calls.reads("resolver") <= set(RESOLVER.table_actions)
