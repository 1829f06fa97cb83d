"""A one-file home (``StateHome(one_file=True)``: the ledger's tables in the engine's
``executions.sqlite3``): each step's outcome rides in the engine's next commit, so a happy
three-step start makes 8 commits instead of 11 (the ledger's claim and outcome per step
plus the engine's 5), and what it records reads back the same. Commits are counted on
every SQLite connection the backend opens (``BEGIN … COMMIT`` and single autocommitted
writes), the simulated services' file left out."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from tests.framework.unit.handlers.helpers import CASE, NOW
from workflows.case import parse_case
from workflows.project import reference_project

STARTS = 5
STEPS = 3  # the reference saga's happy path: reserve, refund, ship
_CONNECT = sqlite3.connect


class _Traced(sqlite3.Connection):
    def set_trace_callback(self, callback: Any) -> None:
        """The stores set their own (none); the meter's stays."""


class CommitMeter:
    """Commits per file, over the connections opened while installed."""

    def __init__(self) -> None:
        self.commits: Counter[str] = Counter()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def counted(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = _CONNECT(database, *args, factory=_Traced, **kwargs)
            name = Path(str(database)).name
            inside = [False]

            def trace(sql: str) -> None:
                word = sql.split(None, 1)[0].upper()
                if word == "BEGIN":
                    inside[0] = True
                elif word in ("COMMIT", "ROLLBACK"):
                    inside[0] = False
                    self.commits[name] += word == "COMMIT"
                elif word in ("INSERT", "UPDATE", "DELETE") and not inside[0]:
                    self.commits[name] += 1  # autocommitted

            sqlite3.Connection.set_trace_callback(conn, trace)
            return conn

        monkeypatch.setattr(sqlite3, "connect", counted)


def commits_per_start(root: Path, *, one_file: bool, monkeypatch: pytest.MonkeyPatch) -> float:
    home = StateHome(root, one_file=one_file)
    meter = CommitMeter()
    meter.install(monkeypatch)
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        backend.start(parse_case({**CASE, "case_id": "WARM"}), time_scale=0)
        meter.commits.clear()
        for number in range(STARTS):
            view = backend.start(parse_case({**CASE, "case_id": f"C-{number}"}), time_scale=0)
            assert view.status == "SUCCEEDED"
    meter.commits.pop("services.sqlite3", None)
    return sum(meter.commits.values()) / STARTS


def test_a_step_costs_one_commit_fewer_on_a_one_file_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    two = commits_per_start(tmp_path / "two", one_file=False, monkeypatch=monkeypatch)
    one = commits_per_start(tmp_path / "one", one_file=True, monkeypatch=monkeypatch)
    assert two == 11  # engine 5, ledger 2 per step
    assert one == two - STEPS  # each outcome shares the engine's commit
    assert not (tmp_path / "one" / "ledger.sqlite3").exists()


def test_a_one_file_home_reads_back_what_it_recorded(tmp_path: Path) -> None:
    home = StateHome(tmp_path, one_file=True)
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        backend.start(parse_case({**CASE, "case_id": "C-1"}), time_scale=0)
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        view = backend.status("C-1")
    assert view.status == "SUCCEEDED"
    statuses = {step.operation: step.ledger_status for step in view.steps if step.kind == "step"}
    assert statuses == dict.fromkeys(
        ("reserve_stock", "refund_payment", "create_shipment"), "COMPLETED"
    )
    with sqlite3.connect(tmp_path / "executions.sqlite3") as conn:
        rows = conn.execute("SELECT status, COUNT(*) FROM actions GROUP BY status").fetchall()
    assert rows == [("COMPLETED", 3)]


def test_a_home_is_never_split_between_two_ledger_files(tmp_path: Path) -> None:
    """Opened without ``one_file``, a one-file home still finds its ledger in
    ``executions.sqlite3`` (a second ledger would claim its cases' actions again); opened
    with it, a two-file home keeps its ``ledger.sqlite3``."""
    one, two = tmp_path / "one", tmp_path / "two"
    with LocalBackend(StateHome(one, one_file=True), reference_project()) as backend:
        backend.start(parse_case({**CASE, "case_id": "C-1"}), time_scale=0)
    with LocalBackend(StateHome(two), reference_project()) as backend:
        backend.start(parse_case({**CASE, "case_id": "C-1"}), time_scale=0)
    assert StateHome(one).ledger_path == one / "executions.sqlite3"
    assert StateHome(two, one_file=True).ledger_path == two / "ledger.sqlite3"
    assert StateHome(tmp_path / "new").ledger_path.name == "ledger.sqlite3"
    for root, one_file in ((one, False), (two, True)):
        with LocalBackend(StateHome(root, one_file=one_file), reference_project()) as backend:
            steps = backend.status("C-1").steps
        assert {s.ledger_status for s in steps if s.kind == "step"} == {"COMPLETED"}, root
    assert not (one / "ledger.sqlite3").exists()
