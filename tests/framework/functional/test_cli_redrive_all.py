"""``stepsaga redrive --all-failed`` on the local backend: every technical failure is
redriven, business outcomes never, bounded by ``--max``, inside the 14-day window."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock, SystemClock
from stepsaga.backends._bulk_redrive import RedriveDecision, redrive_all_failed
from stepsaga.backends._local import LocalBackend
from tests.framework.functional.cli_support import EXAMPLES, cli, effects, write_case, write_faults
from workflows.project import reference_project

#: Every attempt of one run: the first and TRANSIENT_RETRY's 7 retries.
THROTTLED_RUN = {"service": "payments", "operation": "refund", "times": 8, "fault": "throttle"}


def _fail(home: StateHome, tmp_path: Path, case_id: str) -> str:
    faults = write_faults(tmp_path, THROTTLED_RUN, name=f"faults-{case_id}.json")
    started = cli(home, "start", str(write_case(tmp_path, case_id)), "--faults", str(faults))
    assert started.code == 0, started.err
    return f"acme-{case_id}-r1"


def _compensated(home: StateHome, tmp_path: Path, case_id: str) -> str:
    faults = EXAMPLES / "faults-shipment-rejected.json"
    started = cli(home, "start", str(write_case(tmp_path, case_id)), "--faults", str(faults))
    assert started.code == 0, started.err
    return f"acme-{case_id}-r1"


def test_all_failed_redrives_technical_failures_and_leaves_business_outcomes(
    home: StateHome, tmp_path: Path
) -> None:
    failed = [_fail(home, tmp_path, f"CASE-{n}") for n in (1, 2)]
    compensated = _compensated(home, tmp_path, "CASE-3")

    result = cli(home, "redrive", "--all-failed", "--json")

    assert result.code == 0, result.err
    summary = result.json()
    assert (summary["redriven"], summary["skipped"], summary["refused"]) == (2, 0, 0)
    assert summary["truncated"] is False
    rows = {row["name"]: row for row in summary["executions"]}
    assert set(rows) == set(failed)
    for name in failed:
        assert rows[name]["error"] == "TransientError"
        assert (rows[name]["decision"], rows[name]["status"], rows[name]["outcome"]) == (
            "redriven",
            "SUCCEEDED",
            "completed",
        )
    after = cli(home, "status", compensated, "--json").json()
    assert (after["outcome"], after["redriveCount"]) == ("compensated", 0)
    assert effects(home)["refund"] == 3  # one per case, the two redriven included
    # Nothing left to do: a second run is a no-op, exit 0.
    again = cli(home, "redrive", "--all-failed", "--json")
    assert (again.code, again.json()["redriven"], again.json()["executions"]) == (0, 0, [])


def test_error_filter_and_max_bound_the_walk(home: StateHome, tmp_path: Path) -> None:
    for n in (1, 2, 3):
        _fail(home, tmp_path, f"CASE-{n}")

    other = cli(home, "redrive", "--all-failed", "--error", "StoreUnavailableError", "--json")
    assert other.code == 0, other.err
    assert other.json()["redriven"] == 0
    assert {r["decision"] for r in other.json()["executions"]} == {"skipped_other_error"}

    bounded = cli(home, "redrive", "--all-failed", "--error", "TransientError", "--max", "2")
    assert bounded.code == 0, bounded.err
    assert "redriven 2" in bounded.out
    assert "run it again" in bounded.out
    rest = cli(home, "redrive", "--all-failed", "--since", "1h", "--json").json()
    assert (rest["redriven"], rest["truncated"]) == (1, False)


def test_executions_stopped_more_than_14_days_ago_are_left_alone(
    home: StateHome, tmp_path: Path
) -> None:
    name = _fail(home, tmp_path, "CASE-1")
    later = ManualClock(SystemClock().now() + timedelta(days=14, minutes=1))
    with LocalBackend(home, reference_project(), clock=later) as backend:
        view = redrive_all_failed(backend, now=later.now(), time_scale=0)
    assert [(r.name, r.decision) for r in view.executions] == [
        (name, RedriveDecision.SKIPPED_OUTSIDE_WINDOW)
    ]
    assert view.redriven == 0


def test_bad_flags_are_one_line_and_exit_2(home: StateHome, tmp_path: Path) -> None:
    name = _fail(home, tmp_path, "CASE-1")
    for args, needle in (
        (("--all-failed", "--max", "0"), "--max"),
        (("--all-failed", "--max", "1001"), "--max"),
        (("--all-failed", "--error", " "), "--error"),
        (("--all-failed", "--error", "Saga.Compensated"), "business outcome"),
        (("--all-failed", "--since", "yesterday"), "--since"),
        (("--all-failed", name), "--all-failed"),
        (("--all-failed", "--case", "CASE-1"), "--all-failed"),
        ((name, "--error", "TransientError"), "--error goes with --all-failed"),
    ):
        result = cli(home, "redrive", *args)
        assert result.code == 2, (args, result.out, result.err)
        assert needle in result.err, (args, result.err)
        assert len(result.err.strip().splitlines()) == 1, result.err
    status = cli(home, "status", name, "--json").json()
    assert status["redriveCount"] == 0  # nothing was redriven


def test_a_superseded_execution_is_skipped_not_refused(home: StateHome, tmp_path: Path) -> None:
    first = _fail(home, tmp_path, "CASE-1")
    newer = write_case(
        tmp_path, "CASE-1", approval={**_approval(tmp_path, "CASE-1"), "revision": 2}
    )
    assert cli(home, "start", str(newer)).code == 0

    result = cli(home, "redrive", "--all-failed", "--json")

    assert result.code == 0, result.err
    rows = result.json()["executions"]
    assert [(r["name"], r["decision"]) for r in rows] == [(first, "skipped_not_redrivable")]


def _approval(tmp_path: Path, case_id: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((tmp_path / f"{case_id}.json").read_text())["approval"]
    return data
