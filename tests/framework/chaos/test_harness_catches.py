"""The harness can fail: with a defence of the product switched off, the invariants see it.

Each test breaks one rule in this process (the harness's children are forked, so they
inherit the break), runs a case that needs the rule, and expects the matching violation.
A checker that never fails proves nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reliability import ChaosConfig, run_chaos
from reliability.harness import approval_time
from reliability.invariants import CaseTruth, check_budget, check_case
from reliability.plan import scenario
from reliability.storm import StormConfig, run_storm
from stepsaga import EffectClass
from stepsaga._handlers import execute
from stepsaga.backends._views import CaseOutcome
from stepsaga.ledger import Ledger, ReconItem
from stepsaga.ledger._models import ReconStatus
from stepsaga.ledger._sqlite import SqliteStore
from stepsaga.ledger._store import Expect, WriteOutcome

pytestmark = pytest.mark.slow

CRASH_AFTER_SHIPMENT = (
    {
        "service": "shipping",
        "operation": "create_shipment",
        "fault": "crash_after_effect",
        "times": 1,
    },
)


def test_a_blind_repeat_of_a_physical_effect_is_a_duplicate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Break it: an expired physical claim is taken over, and nobody looks first.
    monkeypatch.setattr(EffectClass, "takeover_safe", property(lambda self: True))
    monkeypatch.setattr(execute, "looks_before_acting", lambda effect, attempt: False)
    plan = scenario(0, approval_time(), CRASH_AFTER_SHIPMENT)

    report = run_chaos(ChaosConfig(cases=1), tmp_path, plans=[plan])

    assert report.duplicates == 1
    assert any(v.detail == "duplicate: 2 x create_shipment" for v in report.violations)
    assert "reproduce" in str(report.violations[0])


def test_a_refund_that_never_reaches_the_budget_is_lost_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Break it: releases and failures forget to give the debit back.
    real_put = SqliteStore.put

    def put(
        self: SqliteStore,
        record: object,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        **rest: Any,
    ) -> WriteOutcome:
        return real_put(self, record, expect=expect, budget_delta=min(budget_delta, 0), **rest)  # type: ignore[arg-type]

    monkeypatch.setattr(SqliteStore, "put", put)
    throttled = ({"service": "payments", "operation": "refund", "fault": "throttle", "times": 1},)
    plan = scenario(0, approval_time(), throttled)

    report = run_chaos(ChaosConfig(cases=1), tmp_path, plans=[plan])

    budget = [v for v in report.violations if v.invariant == "budget"]
    assert budget, report.lines()
    assert "lost" in budget[0].detail


def test_a_case_left_waiting_is_not_settled(tmp_path: Path) -> None:
    unverifiable = (
        {"service": "shipping", "operation": "create_shipment", "fault": "lose_response"},
        {"service": "shipping", "operation": "find_shipment_by_reference", "fault": "throttle"},
    )
    plan = scenario(0, approval_time(), unverifiable)

    # No recovery rounds: the operator never comes.
    report = run_chaos(ChaosConfig(cases=1, max_rounds=0), tmp_path, plans=[plan])

    assert [v.detail for v in report.violations] == ["not settled: outcome awaiting_reconciliation"]


def test_budget_arithmetic() -> None:
    assert check_budget("acme", 10, 10, []) == []
    lost = check_budget("acme", 10, 9, [])
    assert [v.detail for v in lost] == ["debited 1 in total, but the records hold 0 (lost)"]
    assert check_budget("acme", 10, None, [])[0].detail == "the budget row is gone"


def test_compensation_outcomes_are_checked_against_the_release_items() -> None:
    plan = scenario(0, approval_time())
    key = f"{plan.tenant_id}:{plan.case_id}:r1:reserve_stock"
    now = approval_time()

    def item(record_key: str) -> ReconItem:
        return ReconItem(
            item_id=f"rec-{record_key}",
            record_key=record_key,
            tenant_id=plan.tenant_id,
            case_id=plan.case_id,
            reason="compensation release_reservation failed (attempt 1)",
            step="ReleaseReservation",
            evidence={},
            status=ReconStatus.OPEN,
            created_at=now,
            updated_at=now,
        )

    def details(outcome: CaseOutcome, *items: ReconItem) -> list[str]:
        return [v.detail for v in check_case(CaseTruth(plan, outcome, (), (), items))]

    on_release = item(f"{key}:compensate:release_reservation")
    # An open item elsewhere (the reservation's) is not the release's question.
    assert details(CaseOutcome.COMPENSATION_FAILED, item(key)) == [
        "compensation failed, and no item about the release is open"
    ]
    assert details(CaseOutcome.COMPENSATION_FAILED, on_release) == []
    assert details(CaseOutcome.COMPENSATED, on_release) == [
        "compensated, yet an item about the release is open"
    ]


def test_the_storm_counts_what_a_ledger_that_guards_nothing_lets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Break it: every delivery gets a claim that records nothing.
    monkeypatch.setattr(Ledger, "claim", lambda self, action, **_: self._transient_claim(action))
    monkeypatch.setattr(Ledger, "complete", lambda self, claim, result, reference=None: None)

    report = run_storm(StormConfig(actions=3, deliveries=8), tmp_path)

    # Reservations and refunds are deduplicated downstream by our key; shipments are not.
    assert "STORM-00002:r1:create_shipment: 8 effects in the services' table" in "\n".join(
        report.violations
    )
    assert report.effects == 1 + 1 + 8


def test_a_revision_that_ignores_the_earlier_one_refunds_and_ships_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Break it: a later revision never reads the earlier revision's records.
    from stepsaga.ledger import _claims as claims

    monkeypatch.setattr(claims, "_supersedes", lambda action: False)
    plans = [scenario(index, approval_time()) for index in range(2)]
    report = run_chaos(ChaosConfig(cases=2, revise=1.0), tmp_path, plans=plans)

    assert report.revised == 2
    assert report.duplicates >= 4  # a second refund and shipment in each case
    assert any("duplicate: 2 x refund" in str(v) for v in report.violations)
