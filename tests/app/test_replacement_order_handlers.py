"""Seed 002's knowledge check (docs/explanation/background.md), as tests against the real handlers
and simulated services.

Effects are counted in the simulated services' effects table (what ``stepsaga sim
effects`` prints), never from the ledger the handlers write.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from services import parse_faults
from stepsaga._util.clock import ManualClock
from stepsaga.errors import OutcomeUnknownError
from stepsaga.ledger import Status
from tests.framework.unit.handlers.helpers import (
    NOW,
    case_input,
    fault,
    make_world,
    reconcile_event,
    step_event,
)

REFUND_KEY = "acme:CASE-1001:r1:refund_payment"


def test_two_separate_20_usd_refunds_on_different_orders_both_happen(tmp_path: Path) -> None:
    """(a) Same customer, same payment, same 20 USD — but two approved cases: two keys."""
    world = make_world(tmp_path / "home")
    refund = {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"}
    first = case_input(case_id="CASE-1001", order_id="ORD-77", refund=refund)
    second = case_input(case_id="CASE-1002", order_id="ORD-78", refund=refund)

    a = world.run("RefundPayment", step_event("RefundPayment", first))
    b = world.run("RefundPayment", step_event("RefundPayment", second))
    # Retries of either replay their own refund, never the other's.
    a_again = world.run("RefundPayment", step_event("RefundPayment", first))
    b_again = world.run("RefundPayment", step_event("RefundPayment", second))

    refunds = world.effects("refund")
    assert len(refunds) == 2
    assert {(e.case_id, e.amount_minor, e.currency) for e in refunds} == {
        ("CASE-1001", 2000, "USD"),
        ("CASE-1002", 2000, "USD"),
    }
    assert a["result"]["refund_id"] != b["result"]["refund_id"]
    assert a_again["result"] == a["result"]
    assert b_again["result"] == b["result"]
    world.deps.close()


def test_a_lost_refund_response_is_retried_with_the_same_key(tmp_path: Path) -> None:
    """The refund service applies the refund and loses the reply: the same key gets the
    original refund back instead of a second one."""
    world = make_world(
        tmp_path / "home", faults={"faults": [fault("refund", "lose_response", attempt=1)]}
    )
    result = world.run("RefundPayment", step_event("RefundPayment"))

    refunds = world.effects("refund")
    assert len(refunds) == 1
    assert result["result"]["refund_id"] == refunds[0].resource_id
    assert world.simulation.calls("acme", "CASE-1001", refunds[0].operation) == 2
    world.deps.close()


def test_expired_lease_of_a_crashed_worker_reconciles_by_key(tmp_path: Path) -> None:
    """(b) Worker 1 claims the refund, the payment service applies it, worker 1 dies before
    recording completion. Its lease expires; worker 2 finds the record IN_PROGRESS. It must
    look the refund up by key — not send a second refund, even after the payment service's
    24 h key window (when a blind same-key repeat would refund again)."""
    home = tmp_path / "home"
    attached = case_input()
    worker_1 = textwrap.dedent(
        f"""
        from pathlib import Path
        from datetime import UTC, datetime
        from stepsaga._util.clock import ManualClock
        from stepsaga._handlers import build_handlers
        from reliability.simulated import simulated_deps
        from stepsaga._project.home import StateHome
        from services import open_simulation, parse_faults
        from tests.framework.unit.handlers.helpers import context, step_event
        from workflows.replacement_order import saga

        home = StateHome(Path({str(home)!r}))
        clock = ManualClock(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))
        open_simulation(home, clock=clock).attach_faults(
            "acme", "CASE-1001",
            parse_faults({{"faults": [{{"service": "payments", "operation": "refund",
                                        "fault": "crash_after_effect", "attempt": 1}}]}}),
        )
        handlers = build_handlers(simulated_deps(home, clock=clock), saga)  # crash = SIGKILL
        handlers["RefundPayment"](step_event("RefundPayment"), context())
        raise SystemExit("worker 1 should have died")
        """
    )
    died = subprocess.run(
        [sys.executable, "-c", worker_1],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert died.returncode == -9, died.stderr

    # Worker 2, a day and a bit later: the lease is long gone, the key window too.
    clock = ManualClock(NOW + timedelta(hours=25))
    world = make_world(home, clock=clock)
    record = world.ledger.get(REFUND_KEY)
    assert record is not None
    assert record.status is Status.IN_PROGRESS
    assert len(world.effects("refund")) == 1

    result = world.run("RefundPayment", step_event("RefundPayment", attached))

    refunds = world.effects("refund")
    assert len(refunds) == 1
    assert result["result"]["refund_id"] == refunds[0].resource_id
    record = world.ledger.get(REFUND_KEY)
    assert record.status is Status.COMPLETED
    assert record.attempts == 2
    world.deps.close()


def test_a_swept_stale_refund_is_reconciled_by_key(tmp_path: Path) -> None:
    """The same crash, found by the sweeper first: UNKNOWN → reconciliation finds the
    refund by key → COMPLETED with its id → the step replays it."""
    faults = parse_faults({"faults": [fault("refund", "crash_after_effect", attempt=1)]})
    world = make_world(tmp_path / "home", faults=faults)
    from services import SimulatedCrash

    with pytest.raises(SimulatedCrash):
        world.run("RefundPayment", step_event("RefundPayment"))
    world.clock.advance(timedelta(hours=25))
    assert [r.key for r in world.ledger.sweep()] == [REFUND_KEY]

    with pytest.raises(OutcomeUnknownError):
        world.run("RefundPayment", step_event("RefundPayment"))
    verdict = world.run("Reconcile", reconcile_event("RefundPayment"))
    result = world.run("RefundPayment", step_event("RefundPayment"))

    refunds = world.effects("refund")
    assert verdict["outcome"] == "applied"
    assert len(refunds) == 1
    assert result["replayed"] is True
    assert result["result"]["refund_id"] == refunds[0].resource_id
    world.deps.close()
