"""The handlers over the DynamoDB ledger (moto, in-process), as they run on Lambda."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from services import open_simulated_services, open_simulation, parse_faults
from stepsaga._aws import metric_names
from stepsaga._handlers import HandlerDeps, RecordingMetrics, build_handlers
from stepsaga._handlers.guard import Handler
from stepsaga._project.home import StateHome
from stepsaga._reconciliation import RecordingNotifier, resolve
from stepsaga._util.clock import ManualClock
from stepsaga.errors import BudgetExhaustedError, OutcomeUnknownError
from stepsaga.ledger import Status, open_ledger
from stepsaga.ledger._dynamodb import create_table
from stepsaga.ledger._models import ReconStatus
from tests.framework.unit.handlers.helpers import (
    NOW,
    CapturedLogs,
    Sent,
    await_event,
    context,
    fault,
    reconcile_event,
    step_event,
)
from workflows.replacement_order import saga

REFUND_KEY = "acme:CASE-1001:r1:refund_payment"


class Lambda:
    def __init__(self, root: Path, faults: dict[str, object] | None = None) -> None:
        self.clock = ManualClock(NOW)
        self.home = StateHome(root)
        self.metrics = RecordingMetrics()
        self.sent = Sent()
        self.deps = HandlerDeps(
            ledger=open_ledger("dynamodb://ledger?region=us-east-1", clock=self.clock),
            clients=open_simulated_services(
                self.home, parse_faults(faults) if faults else None, clock=self.clock
            ),
            clock=self.clock,
            logger=CapturedLogs().logger,
            metrics=self.metrics,
            notifier=RecordingNotifier(),
            send_task_success=self.sent,
        )
        self.handlers: dict[str, Handler] = build_handlers(self.deps, saga)

    def run(self, function: str, event: dict[str, object]) -> dict[str, object]:
        return self.handlers[function](event, context(function))

    def effects(self, operation: str) -> int:
        found = open_simulation(self.home, clock=self.clock).effects()
        return sum(1 for e in found if str(e.operation) == operation)


@pytest.fixture
def table() -> Iterator[None]:
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"), "ledger")
        yield


@pytest.mark.usefixtures("table")
def test_happy_path_and_duplicate_replay(tmp_path: Path) -> None:
    aws = Lambda(tmp_path)
    results = [aws.run(step, step_event(step)) for step in ("ReserveStock", "RefundPayment")]
    replays = [aws.run(step, step_event(step)) for step in ("ReserveStock", "RefundPayment")]

    assert [r["replayed"] for r in results] == [False, False]
    assert [r["replayed"] for r in replays] == [True, True]
    assert [r["result"] for r in replays] == [r["result"] for r in results]
    assert (aws.effects("reserve"), aws.effects("refund")) == (1, 1)
    assert aws.metrics.total(metric_names.DUPLICATE_REPLAYED) == 2
    record = aws.deps.ledger.get("acme:CASE-1001:r1:refund_payment")
    assert record is not None
    assert record.status is Status.COMPLETED


@pytest.mark.usefixtures("table")
def test_budget_is_debited_in_the_claim_transaction(tmp_path: Path) -> None:
    aws = Lambda(tmp_path)
    aws.deps.ledger.set_budget("acme", 2)
    aws.run("RefundPayment", step_event("RefundPayment"))
    aws.run("RefundPayment", step_event("RefundPayment"))
    assert aws.deps.ledger.budget("acme") == 1


@pytest.mark.usefixtures("table")
def test_uncertain_shipment_waits_and_is_resolved_in_one_transaction(tmp_path: Path) -> None:
    aws = Lambda(
        tmp_path,
        {
            "faults": [
                fault("create_shipment", "lose_response"),
                fault("find_shipment_by_reference", "throttle", times=2),
            ]
        },
    )
    with pytest.raises(OutcomeUnknownError):
        aws.run("CreateShipment", step_event("CreateShipment"))
    verdict = aws.run("Reconcile", reconcile_event("CreateShipment"))
    assert verdict["outcome"] == "undecided"
    item_id = str(verdict["item_id"])
    aws.run("Reconcile", await_event("CreateShipment", item_id, token="tok-1"))
    assert aws.deps.ledger.list_items(tenant="acme", status="OPEN")[0].task_token == "tok-1"

    resolve(aws.deps.ledger, item_id, "applied", "ops", "label seen", send_task_success=aws.sent)

    item = aws.deps.ledger.get_item(item_id)
    record = aws.deps.ledger.get("acme:CASE-1001:r1:create_shipment")
    assert item is not None
    assert item.status is ReconStatus.RESOLVED
    assert record is not None
    assert record.status is Status.COMPLETED
    assert aws.sent.calls[0][0] == "tok-1"
    assert aws.run("CreateShipment", step_event("CreateShipment"))["replayed"] is True
    assert aws.effects("create_shipment") == 1


@pytest.mark.usefixtures("table")
def test_a_refused_first_claim_waits_on_an_item_without_a_record(tmp_path: Path) -> None:
    aws = Lambda(tmp_path)
    aws.deps.ledger.set_budget("acme", 0)
    with pytest.raises(BudgetExhaustedError):
        aws.run("RefundPayment", step_event("RefundPayment"))

    failure = "BudgetExhaustedError"
    verdict = aws.run("Reconcile", reconcile_event("RefundPayment", failure))
    assert verdict["outcome"] == "undecided"
    item_id = str(verdict["item_id"])
    aws.run("Reconcile", await_event("RefundPayment", item_id, token="tok-1", error=failure))
    (waiting,) = aws.deps.ledger.list_items(tenant="acme", status="OPEN")  # the GSI
    assert (waiting.item_id, waiting.task_token) == (item_id, "tok-1")

    aws.deps.ledger.set_budget("acme", 1)
    # RefundPayment is under dual control: the first not-applied waits for a second person.
    first = resolve(
        aws.deps.ledger, item_id, "not_applied", "ops", "top-up", send_task_success=aws.sent
    )
    assert (first.awaiting_second_approver, aws.sent.calls) == (True, [])
    resolve(aws.deps.ledger, item_id, "not_applied", "ops-2", "ok", send_task_success=aws.sent)

    assert aws.deps.ledger.get(REFUND_KEY) is None
    assert [(t, out["outcome"]) for t, out in aws.sent.calls] == [("tok-1", "not_applied")]
    assert aws.run("RefundPayment", step_event("RefundPayment"))["replayed"] is False
    assert (aws.effects("refund"), aws.deps.ledger.budget("acme")) == (1, 0)


@pytest.mark.usefixtures("table")
def test_a_shipment_found_by_reference_keeps_its_id_on_the_record(tmp_path: Path) -> None:
    aws = Lambda(tmp_path, {"faults": [fault("create_shipment", "lose_response")]})
    with pytest.raises(OutcomeUnknownError):
        aws.run("CreateShipment", step_event("CreateShipment"))

    verdict = aws.run("Reconcile", reconcile_event("CreateShipment"))

    assert verdict["outcome"] == "applied"
    record = aws.deps.ledger.get("acme:CASE-1001:r1:create_shipment")
    assert record is not None
    assert record.status is Status.COMPLETED
    assert record.result is not None
    assert record.reference == record.result["shipment_id"]
