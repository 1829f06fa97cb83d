"""A refused step's reason is in ``status`` (and in the view the console reads), not only in
``history --json``: the ledger keeps why it refused."""

from __future__ import annotations

from pathlib import Path

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import EXAMPLES, cli, write_case

REJECTED = "CreateShipment: BusinessRejectedError: shipping.create_shipment: HTTP 422"


def test_a_compensated_case_says_which_step_refused_and_why(
    home: StateHome, tmp_path: Path
) -> None:
    faults = EXAMPLES / "faults-shipment-rejected.json"
    started = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults), "--json")
    assert started.json()["outcome"] == "compensated"

    status = cli(home, "status", "CASE-1001", "--json").json()
    assert status["reason"].startswith(REJECTED)
    steps = {s["state"]: s for s in status["steps"]}
    assert steps["CreateShipment"]["error"].startswith("BusinessRejectedError: ")
    assert steps["ReserveStock"]["error"] is None
    table = cli(home, "status", "CASE-1001")
    assert f"reason {REJECTED}" in " ".join(table.out.split())


def test_a_completed_case_has_no_reason(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", str(write_case(tmp_path)))
    status = cli(home, "status", "CASE-1001", "--json").json()
    assert (status["outcome"], status["reason"]) == ("completed", None)
