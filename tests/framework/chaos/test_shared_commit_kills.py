"""Kills around the shared commit of a one-file home (the ledger in the engine's file: a
step's outcome and the engine's checkpoint commit together, ``sqlite_share``).

* ``after_record`` is *inside* the shared transaction there: the outcome dies with the
  process, the claim stays ``IN_PROGRESS`` — settled by the lease rules (takeover of a
  keyed write, ``UNKNOWN`` → a person for a physical one);
* ``before_claim`` is *after* the shared commit, before the next effect.

Every case must end in its outcome with no effect twice, none lost, no claim stranded
(``assert_clean``: every invariant of ``reliability/invariants.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliability.harness import ChaosConfig, approval_time, run_chaos
from reliability.plan import CasePlan, KillPoint, KillSite, scenario
from tests.framework.chaos.test_crash_harness import SHIPMENT_REJECTED, assert_clean

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("STEPSAGA_CHAOS_SEED", "20261129"))
CASES = int(os.environ.get("STEPSAGA_CHAOS_CASES", "200"))

#: name → (faults, kills, the outcome it must end in)
SHARED: dict[str, tuple[tuple[dict[str, object], ...], tuple[KillPoint, ...], str]] = {
    "inside the shared transaction of the reservation": (
        (),
        (KillPoint(KillSite.AFTER_RECORD, "reserve_stock"),),
        "completed",
    ),
    "inside the shared transaction of the refund": (
        (),
        (KillPoint(KillSite.AFTER_RECORD, "refund_payment"),),
        "completed",
    ),
    "inside the shared transaction of the shipment": (
        (),
        (KillPoint(KillSite.AFTER_RECORD, "create_shipment"),),
        "completed",
    ),
    "after the shared commit, before the refund": (
        (),
        (KillPoint(KillSite.BEFORE_CLAIM, "refund_payment"),),
        "completed",
    ),
    "after the shared commit, before the shipment": (
        (),
        (KillPoint(KillSite.BEFORE_CLAIM, "create_shipment"),),
        "completed",
    ),
    "inside the shared transaction of the release": (
        SHIPMENT_REJECTED,
        (KillPoint(KillSite.AFTER_RECORD, "release_reservation"),),
        "compensated",
    ),
    "after the shared commit, before the release": (
        SHIPMENT_REJECTED,
        (KillPoint(KillSite.BEFORE_CLAIM, "release_reservation"),),
        "compensated",
    ),
    "every point of one case": (
        (),
        (
            KillPoint(KillSite.AFTER_RECORD, "reserve_stock"),
            KillPoint(KillSite.BEFORE_CLAIM, "refund_payment"),
            KillPoint(KillSite.AFTER_CLAIM, "refund_payment"),
            KillPoint(KillSite.AFTER_RECORD, "refund_payment"),
            KillPoint(KillSite.BEFORE_CLAIM, "create_shipment"),
            KillPoint(KillSite.AFTER_RECORD, "create_shipment"),
        ),
        "completed",
    ),
}


def test_kills_around_the_shared_commit_recover_to_their_outcome(tmp_path: Path) -> None:
    names = sorted(SHARED)
    approved = approval_time()
    plans: list[CasePlan] = [
        scenario(index, approved, *SHARED[name][:2]) for index, name in enumerate(names)
    ]

    report = run_chaos(ChaosConfig(cases=len(plans), one_file=True), tmp_path, plans=plans)

    assert_clean(report)
    for index, name in enumerate(names):
        assert report.case_outcomes[index] == SHARED[name][2], name
    home = tmp_path / "home"
    assert (home / "executions.sqlite3").exists()
    assert not (home / "ledger.sqlite3").exists()  # one file: the ledger is in it
    expected = sum(len(SHARED[name][1]) for name in names)
    assert report.kills_injected == expected, report.kills


def test_seeded_cases_on_a_one_file_home_keep_every_invariant(tmp_path: Path) -> None:
    """The seeded plan (faults, kills at every site but ``before_claim``) on a one-file
    home, where ``after_record`` strikes inside the shared transaction."""
    cases = max(20, CASES // 4)
    report = run_chaos(ChaosConfig(cases=cases, seed=SEED, one_file=True), tmp_path, say=print)

    assert_clean(report)
    assert report.kills_injected > 0
    assert any(kill.startswith("after_record") for kill in report.kills), report.kills
    assert report.outcomes["completed"] > 0
