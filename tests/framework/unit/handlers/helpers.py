"""Events as the compiled state machine builds them, a fake Lambda context, and a world
(ledger + simulated services + handlers) under a private ``$STEPSAGA_HOME``."""

from __future__ import annotations

import copy
import io
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aws_lambda_powertools import Logger

from reliability.simulated import simulated_deps
from services import (
    Effect,
    Faults,
    Simulation,
    open_simulation,
    parse_faults,
    raise_simulated_crash,
)
from stepsaga._handlers import HandlerDeps, RecordingMetrics, build_handlers
from stepsaga._handlers.guard import Handler
from stepsaga._project.home import StateHome
from stepsaga._reconciliation import RecordingNotifier
from stepsaga._util.clock import ManualClock
from stepsaga.engine._lambda_invoke import LambdaContext
from stepsaga.ledger import LedgerPolicy
from tests.scenarios import REPLACEMENT_ORDER_CASE
from workflows.case import parse_case
from workflows.replacement_order import saga

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
SAGA = saga.name

#: The sample replacement-order case (one copy, in ``tests/scenarios.py``).
CASE: dict[str, Any] = copy.deepcopy(dict(REPLACEMENT_ORDER_CASE))
#: Values that must never appear in logs, metrics, items or errors.
ADDRESS_VALUES = ("A. Buyer", "1 Main St", "Berlin", "10115")

#: Step name → (operation, effect, case path of its params).
STEPS = {
    "ReserveStock": ("reserve_stock", "keyed_write", "reserve"),
    "RefundPayment": ("refund_payment", "keyed_write", "refund"),
    "CreateShipment": ("create_shipment", "physical", "shipment"),
}


def case_input(**changes: Any) -> dict[str, Any]:
    """``Case.execution_input()`` of the sample case with top-level ``changes``."""
    data = copy.deepcopy(CASE)
    data.update(changes)
    return parse_case(data).execution_input()


def identity(case: dict[str, Any]) -> dict[str, Any]:
    return {
        "saga": SAGA,
        "tenant_id": case["tenant_id"],
        "case_id": case["case_id"],
        "revision": case["approval"]["revision"],
        "approved_at": case["approval"]["approved_at"],
    }


def execution(state: str, retry_count: int = 0) -> dict[str, Any]:
    return {"name": "acme-CASE-1001-r1", "state": state, "retry_count": retry_count}


def action_fields(step: str) -> dict[str, Any]:
    operation, effect, _ = STEPS[step]
    return {"step": step, "operation": operation, "effect": effect}


def params_of(step: str, case: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(case[STEPS[step][2]])


def step_event(step: str, case: dict[str, Any] | None = None) -> dict[str, Any]:
    case = case or case_input()
    return {
        "kind": "step",
        **identity(case),
        **action_fields(step),
        "params": params_of(step, case),
        "execution": execution(step),
    }


def caught(error: str, message: str = "it failed") -> dict[str, str]:
    cause = {"errorMessage": message, "errorType": error, "requestId": "r", "stackTrace": []}
    return {"Error": error, "Cause": json.dumps(cause)}


def compensation_event(
    original: dict[str, Any], case: dict[str, Any] | None = None
) -> dict[str, Any]:
    case = case or case_input()
    return {
        "kind": "compensation",
        **identity(case),
        "step": "ReleaseReservation",
        "operation": "release_reservation",
        "effect": "keyed_write",
        "compensates": action_fields("ReserveStock"),
        "params": params_of("ReserveStock", case),
        "original": original,
        "failure": caught("BusinessRejectedError", "shipping.create_shipment: HTTP 422"),
        "execution": execution("ReleaseReservation"),
    }


def reconcile_event(
    step: str, error: str = "OutcomeUnknownError", case: dict[str, Any] | None = None
) -> dict[str, Any]:
    case = case or case_input()
    return {
        "kind": "reconcile",
        **identity(case),
        **action_fields(step),
        "params": params_of(step, case),
        "failure": caught(error),
        "execution": execution(f"Reconcile{step}"),
    }


def await_event(
    step: str,
    item_id: str | None,
    token: str = "token-1",
    error: str = "OutcomeUnknownError",
    case: dict[str, Any] | None = None,
) -> dict[str, Any]:
    case = case or case_input()
    return {
        "kind": "await_decision",
        **identity(case),
        **action_fields(step),
        "params": params_of(step, case),
        "failure": caught(error),
        "item_id": item_id,
        "task_token": token,
        "execution": execution(f"AwaitDecision{step}"),
    }


def escalate_event(original: dict[str, Any], case: dict[str, Any] | None = None) -> dict[str, Any]:
    case = case or case_input()
    return {
        "kind": "escalate",
        **identity(case),
        **action_fields("RefundPayment"),
        "reason": "refund issued, replacement not shipped",
        "params": params_of("RefundPayment", case),
        "original": original,
        "failure": caught("BusinessRejectedError", "shipping.create_shipment: HTTP 422"),
        "execution": execution("EscalateRefundPayment"),
    }


def compensation_failed_event(
    original: dict[str, Any],
    case: dict[str, Any] | None = None,
    error: str = "OutcomeUnknownError",
) -> dict[str, Any]:
    """``Record<Compensation>Failure``'s event: the release failed with ``error``."""
    case = case or case_input()
    return {
        "kind": "compensation_failed",
        **identity(case),
        "step": "ReleaseReservation",
        "operation": "release_reservation",
        "effect": "keyed_write",
        "compensates": action_fields("ReserveStock"),
        "params": params_of("ReserveStock", case),
        "original": original,
        "failure": caught("BusinessRejectedError", "shipping.create_shipment: HTTP 422"),
        "error": caught(error, "inventory.release: it failed"),
        "execution": execution("RecordReleaseReservationFailure"),
    }


def context(function: str = "handler") -> LambdaContext:
    """A fake Lambda context (the embedded engine's, with a fresh request id)."""
    return LambdaContext(
        function_name=function,
        aws_request_id=str(uuid.uuid4()),
        invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{function}",
        remaining_millis=30_000,
    )


class CapturedLogs:
    """A Powertools logger writing JSON lines to memory (a fresh service name per test, as
    Powertools shares one stdlib logger per service name)."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.logger = Logger(
            service=f"test-{uuid.uuid4().hex[:8]}", level="DEBUG", stream=self.stream
        )

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines() if line.strip()]


@dataclass
class Sent:
    """A recording ``send_task_success``."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, token: str, output: dict[str, Any]) -> None:
        self.calls.append((token, output))


@dataclass
class World:
    """Handlers over a SQLite ledger and simulated services in one state folder."""

    home: StateHome
    clock: ManualClock
    deps: HandlerDeps
    handlers: dict[str, Handler]
    metrics: RecordingMetrics
    notifier: RecordingNotifier
    sent: Sent
    logs: CapturedLogs

    @property
    def ledger(self) -> Any:
        return self.deps.ledger

    @property
    def simulation(self) -> Simulation:
        return open_simulation(self.home, clock=self.clock)

    def run(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        return self.handlers[function](event, context(function))

    def effects(self, operation: str | None = None, case_id: str | None = None) -> list[Effect]:
        found = self.simulation.effects(case_id=case_id)
        return [e for e in found if operation is None or str(e.operation) == operation]


def clock_sleeper(clock: ManualClock) -> Callable[[float], None]:
    """A ``slow`` fault's sleep that moves the manual clock instead of waiting."""

    def sleep(seconds: float) -> None:
        clock.advance(seconds)

    return sleep


def make_world(
    root: Path,
    *,
    clock: ManualClock | None = None,
    faults: dict[str, Any] | Faults | None = None,
    policy: LedgerPolicy | None = None,
    callbacks: bool = True,
    send_task_success: Callable[[str, dict[str, Any]], object] | None = None,
) -> World:
    clock = clock or ManualClock(NOW)
    home = StateHome(root)
    metrics = RecordingMetrics()
    notifier = RecordingNotifier()
    sent = Sent()
    logs = CapturedLogs()
    parsed = parse_faults(faults) if isinstance(faults, dict) else faults
    deps = simulated_deps(
        home,
        clock=clock,
        policy=policy,
        faults=parsed,
        crash=raise_simulated_crash,
        sleeper=clock_sleeper(clock),
        logger=logs.logger,
        metrics=metrics,
        notifier=notifier,
        send_task_success=send_task_success or (sent if callbacks else None),
    )
    return World(home, clock, deps, build_handlers(deps, saga), metrics, notifier, sent, logs)


def fault(operation: str, kind: str, **narrow: Any) -> dict[str, Any]:
    service = {
        "reserve": "inventory",
        "release": "inventory",
        "find_reservation": "inventory",
        "refund": "payments",
        "find_refund_by_key": "payments",
        "create_shipment": "shipping",
        "find_shipment_by_reference": "shipping",
    }[operation]
    return {"service": service, "operation": operation, "fault": kind, **narrow}
