"""``stepsaga redrive``: after retries ran out, and after the process running a case died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock, SystemClock
from stepsaga.backends._local import LocalBackend
from tests.framework.functional.cli_support import (
    EXAMPLES,
    ROOT,
    cli,
    effects,
    write_case,
    write_faults,
)
from workflows.project import reference_project

#: Every attempt of one run: the first and TRANSIENT_RETRY's 7 retries.
THROTTLED_RUN = {"service": "payments", "operation": "refund", "times": 8, "fault": "throttle"}


def test_redrive_after_retries_are_exhausted(home: StateHome, tmp_path: Path) -> None:
    faults = write_faults(tmp_path, THROTTLED_RUN)  # 8 attempts: the first and 7 retries
    started = cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults), "--json")
    view = started.json()
    assert started.code == 0
    assert (view["status"], view["error"], view["outcome"]) == (
        "FAILED",
        "TransientError",
        "failed",
    )
    assert view["redriveStatus"] == "REDRIVABLE"
    assert effects(home) == {"reserve": 1}

    result = cli(home, "redrive", view["name"], "--json")
    assert result.code == 0, result.err
    redriven = result.json()
    assert (redriven["status"], redriven["outcome"], redriven["redriveCount"]) == (
        "SUCCEEDED",
        "completed",
        1,
    )
    assert redriven["redriveDate"].endswith("Z")
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}
    steps = {s["state"]: s for s in redriven["steps"]}
    assert steps["RefundPayment"]["attempts"] == 9  # the ledger counts across redrives
    types = [e["type"] for e in cli(home, "history", "CASE-1001", "--json").json()["events"]]
    assert types.count("ExecutionRedriven") == 1


def test_redrive_by_case_with_progress(home: StateHome, tmp_path: Path) -> None:
    faults = write_faults(tmp_path, THROTTLED_RUN)
    cli(home, "start", str(write_case(tmp_path)), "--faults", str(faults))
    result = cli(home, "redrive", "--case", "CASE-1001")
    assert result.code == 0, result.err
    assert "↺ redriven" in result.out
    assert "→ RefundPayment" in result.out
    assert "outcome completed" in result.out


def test_redrive_refusals(home: StateHome, tmp_path: Path) -> None:
    cli(home, "start", str(write_case(tmp_path)))
    done = cli(home, "redrive", "acme-CASE-1001-r1")
    assert done.code == 2
    assert "SUCCEEDED" in done.err
    assert len(done.err.strip().splitlines()) == 1
    both = cli(home, "redrive", "acme-CASE-1001-r1", "--case", "CASE-1001")
    assert both.code == 2
    neither = cli(home, "redrive")
    assert neither.code == 2


def _start_in_a_process_that_dies(home: StateHome, case: Path) -> int:
    env = {**os.environ, "STEPSAGA_HOME": str(home.root), "STEPSAGA_TIME_SCALE": "0"}
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "from stepsaga.cli._app import main; main()",
            "start",
            str(case),
            "--faults",
            str(EXAMPLES / "faults-crash-after-refund.json"),
            "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return child.returncode


def test_an_interrupted_execution_is_visible_and_redrivable(
    home: StateHome, tmp_path: Path
) -> None:
    code = _start_in_a_process_that_dies(home, write_case(tmp_path))
    assert code == -signal.SIGKILL
    assert effects(home) == {"reserve": 1, "refund": 1}  # refunded, then the process died

    status = cli(home, "status", "CASE-1001", "--json")
    assert status.code == 0
    view = status.json()
    assert (view["status"], view["error"], view["outcome"]) == (
        "ABORTED",
        "Stepsaga.Interrupted",
        "failed",
    )
    assert view["redriveStatus"] == "REDRIVABLE"
    assert "Redrive it" in view["cause"]
    steps = {s["state"]: s["ledger_status"] for s in view["steps"]}
    assert steps["RefundPayment"] == "IN_PROGRESS"  # the claim's lease has not run out

    # Right away the dead worker's lease still holds the refund: the redrive waits on it,
    # runs out of retries and fails again — without refunding twice.
    again = cli(home, "redrive", "CASE-1001", "--json")
    assert again.code == 0
    assert (again.json()["outcome"], again.json()["error"]) == ("failed", "ActionInProgressError")

    # Once the lease has expired the same key goes to payments again: one refund in all.
    later = ManualClock(SystemClock().now() + timedelta(minutes=2))
    with LocalBackend(home, reference_project(), clock=later) as backend:
        redriven = backend.redrive("CASE-1001", time_scale=0)
    assert (redriven.status, redriven.outcome.value, redriven.redrive_count) == (
        "SUCCEEDED",
        "completed",
        2,
    )
    assert effects(home) == {"reserve": 1, "refund": 1, "create_shipment": 1}
