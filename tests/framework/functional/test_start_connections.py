"""What a start costs in SQLite connections: the local backend keeps its engine, ledger and
the simulated services' connections between commands, and drops them after a failure."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from tests.framework.unit.handlers.helpers import CASE, NOW
from workflows.case import parse_case
from workflows.project import reference_project


def counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    opened: list[Any] = []
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(args[0] if args else kwargs.get("database"))
        conn: sqlite3.Connection = real(*args, **kwargs)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return opened


def case(number: int) -> Any:
    return parse_case({**CASE, "case_id": f"CASE-{number}"})


def test_a_start_after_the_first_opens_no_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = StateHome(tmp_path / "home")
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        for number in (1, 2):  # the first opens the stores, the second the reader
            assert backend.start(case(number), time_scale=0).status == "SUCCEEDED"
        opened = counting(monkeypatch)
        assert backend.start(case(3), time_scale=0).status == "SUCCEEDED"
        assert backend.status("CASE-1").status == "SUCCEEDED"
    assert opened == []


def test_a_command_that_raised_starts_the_next_one_on_fresh_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = StateHome(tmp_path / "home")
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        assert backend.start(case(1), time_scale=0).status == "SUCCEEDED"
        kept = backend._kept
        assert kept is not None

        def boom(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("engine broke")

        monkeypatch.setattr(kept.engine, "start_execution", boom)
        with pytest.raises(RuntimeError, match="engine broke"):
            backend.start(case(2), time_scale=0)
        assert backend._kept is None
        opened = counting(monkeypatch)
        assert backend.start(case(3), time_scale=0).status == "SUCCEEDED"
    assert opened, "the next start opened its own connections again"


def test_closing_the_backend_closes_what_it_kept(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "home")
    backend = LocalBackend(home, reference_project(), clock=ManualClock(NOW))
    backend.start(case(1), time_scale=0)
    kept = backend._kept
    assert kept is not None
    backend.close()
    assert backend._kept is None
    with pytest.raises(sqlite3.ProgrammingError):
        kept.engine.store._db.execute("SELECT 1")
