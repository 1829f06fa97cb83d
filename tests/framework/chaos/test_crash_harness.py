"""Seeded chaos on the embedded backend: faults of every kind, real SIGKILLs, operator
recovery — and the invariants, checked from the services' effects table and the ledger.

``STEPSAGA_CHAOS_SEED`` / ``STEPSAGA_CHAOS_CASES`` change the run (the seed is printed; a
violation prints its case plan). ``bench/chaos.py`` runs the same harness with 1,000 cases.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliability import ChaosConfig, ChaosReport, KillPoint, KillSite, run_chaos
from reliability.harness import approval_time
from reliability.plan import DRAWN_SITES, MULTI_WAREHOUSE, CasePlan, scenario
from reliability.workspace import Workspace
from stepsaga.backends._local import LocalBackend
from workflows.project import reference_project

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("STEPSAGA_CHAOS_SEED", "20261129"))
CASES = int(os.environ.get("STEPSAGA_CHAOS_CASES", "200"))


def fault(operation: str, kind: str, **narrow: object) -> dict[str, object]:
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


def assert_clean(report: ChaosReport) -> None:
    print("\n".join(report.lines()))
    assert report.violations == [], "\n".join(str(v) for v in report.violations)
    assert report.duplicates == 0


def test_seeded_cases_under_faults_and_kills_keep_every_invariant(tmp_path: Path) -> None:
    report = run_chaos(ChaosConfig(cases=CASES, seed=SEED), tmp_path, say=print)

    assert_clean(report)
    assert report.cases == CASES
    struck = {kill.split(":", 1)[0] for kill in report.kills}
    if CASES >= 100:  # enough cases reach every site the plan draws and every fault kind
        assert struck == {site.value for site in (*DRAWN_SITES, KillSite.CRASH_AFTER_EFFECT)}
        assert set(report.faults) == {
            "throttle",
            "timeout_before_effect",
            "lose_response",
            "reject",
            "slow",
            "crash_after_effect",
        }
        assert any("release" in kill for kill in report.kills), "no kill inside a compensation"
    assert report.kills_injected > 0
    assert report.redrives > 0
    assert report.outcomes["completed"] > 0


UNVERIFIABLE_SHIPMENT = (
    fault("create_shipment", "lose_response", times=2),
    fault("find_shipment_by_reference", "throttle", times=6),
)
SHIPMENT_REJECTED = (fault("create_shipment", "reject"),)

#: name → (faults, kills, the outcome it must end in)
SCENARIOS: dict[str, tuple[tuple[dict[str, object], ...], tuple[KillPoint, ...], str]] = {
    "killed after claiming the refund": (
        (),
        (KillPoint(KillSite.AFTER_CLAIM, "refund_payment"),),
        "completed",
    ),
    "killed after the refund, before the ledger heard": (
        (fault("refund", "crash_after_effect", times=1),),
        (),
        "completed",
    ),
    "killed after the shipment, before the ledger heard": (
        (fault("create_shipment", "crash_after_effect", times=1),),
        (),
        "completed",
    ),
    "killed after the ledger recorded the shipment": (
        (),
        (KillPoint(KillSite.AFTER_RECORD, "create_shipment"),),
        "completed",
    ),
    "killed between states": (
        (),
        (KillPoint(KillSite.STATE_ENTERED, "CreateShipment"),),
        "completed",
    ),
    "killed after claiming the release": (
        SHIPMENT_REJECTED,
        (KillPoint(KillSite.AFTER_CLAIM, "release_reservation"),),
        "compensated",
    ),
    "killed after the release, before the ledger heard": (
        (*SHIPMENT_REJECTED, fault("release", "crash_after_effect", times=1)),
        (),
        "compensated",
    ),
    "killed entering the compensation": (
        SHIPMENT_REJECTED,
        (KillPoint(KillSite.STATE_ENTERED, "ReleaseReservation"),),
        "compensated",
    ),
    "operator's resolve killed before the case resumed": (
        UNVERIFIABLE_SHIPMENT,
        (KillPoint(KillSite.AFTER_RESOLVE),),
        "completed",
    ),
    "killed while waiting for a person": (
        UNVERIFIABLE_SHIPMENT,
        (KillPoint(KillSite.STATE_ENTERED, "AwaitDecisionCreateShipment"),),
        "completed",
    ),
    # Regression (ledger): attempts spent, a person says "not applied": one more attempt.
    "attempt budget spent, then not applied": (
        (
            fault("refund", "throttle", times=3),
            fault("find_refund_by_key", "lose_response", times=2),
        ),
        (KillPoint(KillSite.STATE_ENTERED, "ReserveStock"),),
        "completed",
    ),
    # Regression (handlers): a refused same-key call after a lost reply is not "not applied".
    "reservation's reply lost, then refused": (
        (fault("reserve", "lose_response", times=1), fault("reserve", "reject")),
        (),
        "completed",
    ),
    # A failed compensation is reconciled like a forward step before anyone is asked.
    "release's reply lost twice": (
        (*SHIPMENT_REJECTED, fault("release", "lose_response", times=2)),
        (),
        "compensated",
    ),
    "release's reply lost twice, reservation lookup down": (
        (
            *SHIPMENT_REJECTED,
            fault("release", "lose_response", times=2),
            fault("find_reservation", "throttle"),
        ),
        (),
        "compensation_failed",
    ),
    "release times out on every call": (
        (*SHIPMENT_REJECTED, fault("release", "timeout_before_effect")),
        (),
        "compensation_failed",
    ),
}


def test_hand_written_crashes_recover_to_their_outcome(tmp_path: Path) -> None:
    names = sorted(SCENARIOS)
    approved = approval_time()
    plans: list[CasePlan] = []
    for index, name in enumerate(names):
        faults, kills, _ = SCENARIOS[name]
        plans.append(scenario(index, approved, faults, kills))

    report = run_chaos(ChaosConfig(cases=len(plans)), tmp_path, plans=plans)

    assert_clean(report)
    for index, name in enumerate(names):
        assert report.case_outcomes[index] == SCENARIOS[name][2], name
    assert report.kills_injected >= sum(1 for plan in plans if plan.kills)


#: Crashes inside the compensation whose claims ``ledger sweep`` turns ``UNKNOWN`` before the
#: redrive (sweeping every round): the release claim then fails ``OutcomeUnknownError``,
#: and automatic reconciliation looks the reservation up instead of asking a person.
SWEPT: dict[str, tuple[tuple[dict[str, object], ...], tuple[KillPoint, ...]]] = {
    "killed after claiming the release, swept": (
        SHIPMENT_REJECTED,
        (KillPoint(KillSite.AFTER_CLAIM, "release_reservation"),),
    ),
    "killed after the release, before the ledger heard, swept": (
        (*SHIPMENT_REJECTED, fault("release", "crash_after_effect", times=1)),
        (),
    ),
}


def test_swept_compensations_are_reconciled_automatically(tmp_path: Path) -> None:
    names = sorted(SWEPT)
    approved = approval_time()
    plans = [scenario(index, approved, *SWEPT[name]) for index, name in enumerate(names)]

    report = run_chaos(ChaosConfig(cases=len(plans), sweep_probability=1.0), tmp_path, plans=plans)

    assert_clean(report)
    assert report.swept >= len(names)
    for index, name in enumerate(names):
        assert report.case_outcomes[index] == "compensated", name
    assert report.compensations_reconciled == {"applied": 1, "not_applied": 1}


#: Crashes inside the multi-warehouse saga's per-item step (an inline ``Map``, two lines at
#: a time) and inside its per-item undo: a redrive re-runs only the unfinished iterations.
#: They strike line L3, which starts only once L1 or L2 has finished.
MAP_CRASHES: dict[str, tuple[tuple[dict[str, object], ...], tuple[KillPoint, ...], str]] = {
    "killed after line L3's reservation, before the ledger heard": (
        (fault("reserve", "crash_after_effect", item="L3", times=1),),
        (),
        "completed",
    ),
    "killed after claiming line L3": (
        (),
        (KillPoint(KillSite.AFTER_CLAIM, "reserve_line#L3"),),
        "completed",
    ),
    "killed after the ledger recorded line L3": (
        (),
        (KillPoint(KillSite.AFTER_RECORD, "reserve_line#L3"),),
        "completed",
    ),
    "killed after line L3's release, before the ledger heard": (
        (*SHIPMENT_REJECTED, fault("release", "crash_after_effect", item="L3", times=1)),
        (),
        "compensated",
    ),
}


def _iterations(events: list[dict[str, object]], kind: str) -> list[tuple[str, int]]:
    """(Map state, index) of every ``MapIteration<kind>`` event, in order."""
    found = []
    for event in events:
        if event["type"] == f"MapIteration{kind}":
            details = event[f"mapIteration{kind}EventDetails"]
            assert isinstance(details, dict)
            found.append((str(details["name"]), int(details["index"])))
    return found


def test_a_redrive_after_a_crash_inside_a_map_reruns_only_the_unfinished_items(
    tmp_path: Path,
) -> None:
    names = sorted(MAP_CRASHES)
    approved = approval_time()
    plans = [
        scenario(index, approved, *MAP_CRASHES[name][:2], saga=MULTI_WAREHOUSE)
        for index, name in enumerate(names)
    ]

    report = run_chaos(ChaosConfig(cases=len(plans)), tmp_path, plans=plans)

    assert_clean(report)  # 0 duplicate effects (one per action key), every invariant
    with LocalBackend(Workspace(tmp_path).home, reference_project()) as backend:
        for index, name in enumerate(names):
            assert report.case_outcomes[index] == MAP_CRASHES[name][2], name
            plan = plans[index]
            events = backend.history(plan.case_id, tenant=plan.tenant_id)["events"]
            redriven = [i for i, e in enumerate(events) if e["type"] == "ExecutionRedriven"]
            assert redriven, f"{name}: never redriven"
            before, after = events[: redriven[0]], events[redriven[0] :]
            finished = set(_iterations(before, "Succeeded"))
            rerun = set(_iterations(after, "Started"))
            assert finished, f"{name}: no iteration had finished before the crash"
            assert rerun, f"{name}: the redrive ran no iteration again"
            assert not finished & rerun, f"{name}: finished iterations ran again"
    assert report.kills_injected >= len(plans)


def test_a_new_revision_after_completion_or_compensation_keeps_every_invariant(
    tmp_path: Path,
) -> None:
    """The "new revision after completion/compensation" plan: every settled case is
    re-approved as revision 2 (half with a changed refund) and run under the kills still
    pending — still no effect twice, none lost, across both revisions."""
    cases = max(20, CASES // 4)
    report = run_chaos(ChaosConfig(cases=cases, seed=SEED + 1, revise=1.0), tmp_path, say=print)

    assert_clean(report)
    assert report.revised > cases // 2
    assert report.outcomes["completed"] > 0
