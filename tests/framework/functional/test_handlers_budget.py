"""A tenant budget that refuses the very first claim, end to end on the embedded backend.

Nothing is recorded when the first claim is refused, yet the case must not fail at
``Reconcile<Step>``: reconciliation opens an item about the unclaimed action and the case
waits for a person. After a budget top-up, ``not_applied`` sends the step round again with
the same key and the saga completes — each effect once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from services import open_simulation
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends import ReconOutcome
from stepsaga.backends._local import LocalBackend
from stepsaga.backends._views import CaseOutcome
from stepsaga.errors import IllegalTransitionError
from stepsaga.ledger import open_ledger
from tests.framework.unit.handlers.helpers import CASE, NOW
from workflows.case import parse_case
from workflows.project import reference_project

RESERVE_KEY = "acme:CASE-1001:r1:reserve_stock"


def effects(home: StateHome, clock: ManualClock) -> dict[str, int]:
    found = open_simulation(home, clock=clock).effects(case_id="CASE-1001")
    return dict(Counter(str(effect.operation) for effect in found))


def set_budget(home: StateHome, amount: int) -> None:
    home.ensure()
    with open_ledger(home.ledger_url) as ledger:
        ledger.set_budget("acme", amount)


def test_a_budget_of_zero_waits_for_a_top_up_and_a_decision(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "home")
    clock = ManualClock(NOW)
    set_budget(home, 0)

    with LocalBackend(home, reference_project(), clock=clock) as backend:
        waiting = backend.start(parse_case(CASE), time_scale=0)

        assert (waiting.status, waiting.outcome) == ("RUNNING", CaseOutcome.AWAITING_RECONCILIATION)
        (item,) = backend.recon_list()
        assert (item.step, item.action_key, item.reason) == (
            "ReserveStock",
            RESERVE_KEY,
            "tenant budget exhausted (never claimed)",
        )
        assert effects(home, clock) == {}

        # The ledger never dispatched the reservation: "applied" would be a guess.
        with pytest.raises(IllegalTransitionError, match="never claimed"):
            backend.recon_resolve(item.id, ReconOutcome.APPLIED, "ops@acme.example", "?")

        set_budget(home, 3)
        resolution = backend.recon_resolve(
            item.id,
            ReconOutcome.NOT_APPLIED,
            "ops@acme.example",
            "budget raised to 3",
            time_scale=0,
        )

    assert resolution.execution is not None
    assert (resolution.execution.status, resolution.execution.outcome) == (
        "SUCCEEDED",
        CaseOutcome.COMPLETED,
    )
    assert effects(home, clock) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    with open_ledger(home.ledger_url) as ledger:
        assert ledger.budget("acme") == 0
        record = ledger.get(RESERVE_KEY)
        assert record is not None
        assert record.attempts == 1  # the refused claim was never an attempt
