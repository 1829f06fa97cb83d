"""Logs with correlation fields and no personal data; EMF metrics; a quiet local backend."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from reliability.simulated import simulated_deps
from stepsaga._aws import metric_names
from stepsaga._handlers import EmfMetrics, build_handlers
from stepsaga._handlers.logs import powertools_logger
from stepsaga._project.home import StateHome
from stepsaga._reconciliation import Notice, SnsNotifier
from stepsaga._util.clock import ManualClock
from stepsaga.errors import StepSagaError
from tests.framework.unit.handlers.conftest import WorldFactory
from tests.framework.unit.handlers.helpers import (
    ADDRESS_VALUES,
    NOW,
    World,
    await_event,
    compensation_event,
    compensation_failed_event,
    context,
    escalate_event,
    fault,
    reconcile_event,
    step_event,
)
from workflows.replacement_order import saga


def every_path(world: World) -> list[str]:
    """Run every handler through success, rejection, uncertainty and invalid input; return
    the error messages seen."""
    messages: list[str] = []

    def run(function: str, event: dict[str, Any]) -> dict[str, Any] | None:
        try:
            return world.run(function, event)
        except StepSagaError as exc:
            messages.append(f"{exc.message} {json.dumps(exc.data, default=str)}")
            return None

    reserve = run("ReserveStock", step_event("ReserveStock"))
    refund = run("RefundPayment", step_event("RefundPayment"))
    run("CreateShipment", step_event("CreateShipment"))  # lose_response → UNKNOWN
    run("CreateShipment", step_event("CreateShipment"))  # redelivered: still UNKNOWN
    verdict = run("Reconcile", reconcile_event("CreateShipment"))
    assert verdict is not None
    run("Reconcile", await_event("CreateShipment", verdict["item_id"]))
    bad = step_event("CreateShipment")
    bad["params"]["address"]["postal_code"] = "x" * 40  # invalid, and personal
    run("CreateShipment", bad)
    bad = step_event("CreateShipment")
    bad["params"]["address"]["street"] = "1 Main St"
    run("CreateShipment", bad)
    assert reserve is not None
    assert refund is not None
    run("ReleaseReservation", compensation_event(reserve))
    run("Reconcile", escalate_event(refund))
    run("Reconcile", compensation_failed_event(reserve))
    return messages


def test_no_address_reaches_logs_metrics_items_or_errors(make: WorldFactory) -> None:
    world = make(
        faults={
            "faults": [
                fault("create_shipment", "lose_response"),
                fault("find_shipment_by_reference", "throttle"),
            ]
        },
        callbacks=False,
    )
    messages = every_path(world)

    assert world.logs.lines()  # something was logged, at DEBUG level
    stored = [
        world.logs.text,
        json.dumps(world.metrics.counted),
        json.dumps([n.to_json() for n in world.notifier.notices]),
        json.dumps([i.to_dict() for i in world.ledger.list_items()]),
        json.dumps([r.to_dict() for r in world.ledger.list()], default=str),
        *messages,
    ]
    for text in stored:
        for value in ADDRESS_VALUES:
            assert value not in text


def test_log_lines_carry_the_correlation_fields(world: World) -> None:
    world.run("RefundPayment", step_event("RefundPayment"))
    world.run("RefundPayment", step_event("RefundPayment"))

    done = [line for line in world.logs.lines() if line["message"] == "done"]
    assert [line["decision"] for line in done] == ["performed", "replayed"]
    for line in done:
        assert line["tenant_id"] == "acme"
        assert line["case_id"] == "CASE-1001"
        assert line["action_key"] == "acme:CASE-1001:r1:refund_payment"
        assert line["attempt"] == 1
        assert line["step"] == "RefundPayment"
        assert line["function"] == "RefundPayment"
        assert line["request_id"]


def test_failures_are_logged_with_the_error_name(make: WorldFactory) -> None:
    world = make(faults={"faults": [fault("refund", "reject")]})
    with pytest.raises(StepSagaError):
        world.run("RefundPayment", step_event("RefundPayment"))
    failed = [line for line in world.logs.lines() if line["message"] == "failed"]
    assert failed[0]["error"] == "BusinessRejectedError"
    assert failed[0]["decision"] == "rejected"


def test_emf_document_for_a_replay(tmp_path: Path) -> None:
    documents: list[str] = []
    metrics = EmfMetrics("stepsaga", "stepsaga-dev", write=documents.append)
    deps = simulated_deps(StateHome(tmp_path), clock=ManualClock(NOW), metrics=metrics)
    try:
        handlers = build_handlers(deps, saga)
        handlers["RefundPayment"](step_event("RefundPayment"), context())
        assert documents == []  # nothing to count: no document at all
        handlers["RefundPayment"](step_event("RefundPayment"), context())
    finally:
        deps.close()

    assert len(documents) == 1
    emf = json.loads(documents[0])
    directive = emf["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "stepsaga"
    assert directive["Dimensions"] == [["service"]]  # exactly what the alarms match
    assert directive["Metrics"] == [{"Name": metric_names.DUPLICATE_REPLAYED, "Unit": "Count"}]
    assert emf["service"] == "stepsaga-dev"
    assert emf[metric_names.DUPLICATE_REPLAYED] == [1.0]
    assert emf["tenant_id"] == "acme"
    assert emf["action_key"] == "acme:CASE-1001:r1:refund_payment"


def test_the_local_backend_prints_nothing_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deps = simulated_deps(StateHome(tmp_path), clock=ManualClock(NOW))
    try:
        handlers = build_handlers(deps, saga)
        for _ in range(2):
            handlers["RefundPayment"](step_event("RefundPayment"), context())
        with pytest.raises(StepSagaError):
            handlers["RefundPayment"](
                step_event("RefundPayment") | {"effect": "physical"}, context()
            )
    finally:
        deps.close()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert '"message":"failed"' in captured.err  # warnings go to stderr


def test_sns_notice_has_a_short_subject_and_no_free_text() -> None:
    published: list[dict[str, Any]] = []

    class Client:
        def publish(self, **kwargs: Any) -> None:
            published.append(kwargs)

    notice = Notice("rec-1", "acme", "CASE-1001", "CreateShipment", "k", "outcome unknown", True)
    SnsNotifier(Client(), "arn:aws:sns:us-east-1:123456789012:t").notify(notice)  # type: ignore[arg-type]

    assert published[0]["Subject"] == "stepsaga: acme/CASE-1001 CreateShipment waits for a decision"
    assert json.loads(published[0]["Message"])["item_id"] == "rec-1"


def test_a_second_logger_for_a_service_takes_its_own_level() -> None:
    """Powertools configures one stdlib logger per service and process; the level of the
    first call stuck, so a CLI run earlier in the process (ERROR) silenced the warnings of
    every later local backend (WARNING) — this file's stdout test failed whenever it ran
    after a CLI test."""
    powertools_logger("stepsaga.level-test", "ERROR", to_stderr=True)
    powertools_logger("stepsaga.level-test", "WARNING", to_stderr=True)
    # One stdlib logger per service, named after it: the last level wins.
    assert logging.getLogger("stepsaga.level-test").isEnabledFor(logging.WARNING)
