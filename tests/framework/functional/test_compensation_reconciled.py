"""A failed compensation is reconciled automatically before anyone is asked, end to end on
the embedded backend (``LocalBackend``, the real handlers, the simulated services).

The release of a reservation is a keyed write: when its reply is lost twice (the same-key
call included) its outcome is uncertain. Reconciliation looks the reservation up — released
→ the release is recorded ``applied`` and the unwinding goes on; still held → it runs again
with the same key — so the case ends ``compensated`` with one release in the services' own
effects table. Only what the lookup cannot decide, or a release that used every attempt of
its lifetime budget, ends ``compensation_failed`` with an open item.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from services import load_faults, open_simulation, parse_faults
from stepsaga._project.home import StateHome
from stepsaga._reconciliation import AUTO_RESOLVER
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.backends._views import CaseOutcome, ReconFilter, ReconItemView
from stepsaga.ledger import LedgerPolicy, Status, open_ledger
from stepsaga.testing._history import History
from tests.framework.unit.handlers.helpers import NOW
from workflows.case import load_case
from workflows.project import reference_project

EXAMPLES = Path(__file__).parents[3] / "examples"
CASE = load_case(EXAMPLES / "case-shipment-rejected.json")
RESERVE_KEY = "acme:CASE-1002:r1:reserve_stock"
RELEASE_KEY = f"{RESERVE_KEY}:compensate:release_reservation"
RECORD = "RecordReleaseReservationFailure"
DECISION = "ReleaseReservationDecision"


def effects(home: StateHome, clock: ManualClock) -> dict[str, int]:
    found = open_simulation(home, clock=clock).effects(case_id=CASE.case_id)
    return dict(Counter(str(effect.operation) for effect in found))


def release_items(backend: LocalBackend) -> list[ReconItemView]:
    items = backend.recon_list(status=ReconFilter.ALL)
    return [item for item in items if item.step == "ReleaseReservation"]


def path_after_escalation(backend: LocalBackend) -> list[str]:
    path = list(History.of(backend.history(CASE.case_id)).path)
    return path[path.index("EscalateRefundPayment") + 1 :]


def test_a_release_whose_reply_is_lost_twice_is_found_released(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "home")
    clock = ManualClock(NOW)
    faults = load_faults(EXAMPLES / "faults-release-reply-lost.json")

    with LocalBackend(home, reference_project(), clock=clock) as backend:
        done = backend.start(CASE, faults=faults, time_scale=0)

        assert (done.status, done.error, done.outcome) == (
            "FAILED",
            "Saga.Compensated",
            CaseOutcome.COMPENSATED,
        )
        assert path_after_escalation(backend) == [
            "ReleaseReservation",
            RECORD,
            DECISION,
            "Compensated",
        ]
        (item,) = release_items(backend)
        assert (item.action_key, item.status, item.outcome, item.resolved_by) == (
            RELEASE_KEY,
            "RESOLVED",
            "applied",
            AUTO_RESOLVER,
        )
        assert item.reason == "compensation release_reservation failed: outcome unknown (attempt 1)"
        assert "find_reservation" in (item.note or "")
        open_items = backend.recon_list()
        assert [i.reason for i in open_items] == [
            "escalated: refund issued, replacement not shipped"
        ]

    assert effects(home, clock) == {"reserve": 1, "refund": 1, "release": 1}
    with open_ledger(home.ledger_url) as ledger:
        record = ledger.get(RELEASE_KEY)
        assert record is not None
        assert (record.status, record.attempts) == (Status.COMPLETED, 1)
    assert open_simulation(home, clock=clock).stock("acme", "SKU-BLUE-BOWL", "eu-west") == 1000


def test_a_release_that_timed_out_runs_again_with_the_same_key(tmp_path: Path) -> None:
    """Seed 002's last question (docs/explanation/background.md): shipment rejected, the release
    times
    out (twice: the same-key call too). Reconciliation finds the reservation still held, so
    the release runs again under the same key — and releases exactly once."""
    home = StateHome(tmp_path / "home")
    clock = ManualClock(NOW)
    faults = parse_faults(
        {
            "faults": [
                {"service": "shipping", "operation": "create_shipment", "fault": "reject"},
                {
                    "service": "inventory",
                    "operation": "release",
                    "fault": "timeout_before_effect",
                    "times": 2,
                },
            ]
        }
    )

    with LocalBackend(home, reference_project(), clock=clock) as backend:
        done = backend.start(CASE, faults=faults, time_scale=0)

        assert done.outcome is CaseOutcome.COMPENSATED
        assert path_after_escalation(backend) == [
            "ReleaseReservation",
            RECORD,
            DECISION,
            "ReleaseReservation",
            "Compensated",
        ]
        (item,) = release_items(backend)
        assert (item.outcome, item.resolved_by) == ("not_applied", AUTO_RESOLVER)

    assert effects(home, clock) == {"reserve": 1, "refund": 1, "release": 1}
    with open_ledger(home.ledger_url) as ledger:
        record = ledger.get(RELEASE_KEY)
        assert record is not None
        assert (record.status, record.attempts) == (Status.COMPLETED, 2)


def test_a_release_that_never_gets_through_stops_at_the_attempt_budget(tmp_path: Path) -> None:
    """Every call times out: each round is one more claim, and when the lifetime budget is
    used the case ends ``compensation_failed`` with the item open — never a loop."""
    home = StateHome(tmp_path / "home")
    clock = ManualClock(NOW)
    budget = LedgerPolicy().attempt_budget
    faults = parse_faults(
        {
            "faults": [
                {"service": "shipping", "operation": "create_shipment", "fault": "reject"},
                {"service": "inventory", "operation": "release", "fault": "timeout_before_effect"},
            ]
        }
    )

    with LocalBackend(home, reference_project(), clock=clock) as backend:
        done = backend.start(CASE, faults=faults, time_scale=0)

        assert (done.error, done.outcome) == (
            "Saga.CompensationFailed",
            CaseOutcome.COMPENSATION_FAILED,
        )
        rounds = ["ReleaseReservation", RECORD, DECISION]
        assert path_after_escalation(backend) == rounds * budget + ["CompensationFailed"]
        question = "compensation release_reservation failed: outcome unknown (attempt {})"
        items = {item.reason: item for item in release_items(backend)}
        assert {reason: (i.status, i.outcome) for reason, i in items.items()} == {
            **{question.format(n): ("RESOLVED", "not_applied") for n in range(1, budget)},
            question.format(budget): ("OPEN", None),
        }
        last = items[question.format(budget)]
        assert "every attempt" in last.evidence["lookup"]

    assert effects(home, clock) == {"reserve": 1, "refund": 1}
    with open_ledger(home.ledger_url) as ledger:
        record = ledger.get(RELEASE_KEY)
        assert record is not None
        assert (record.status, record.attempts) == (Status.UNKNOWN, budget)
