"""A home that has lived: ``start`` and ``status`` read the case's own entries, so what
they cost does not grow with the tenant's backlog of open reconciliation items (one per
compensated case). Built by bulk inserts; counted on every SQLite connection the backend
opens: statements run (trace callback) and VM instructions (progress handler), which a
scan of the backlog would multiply, however fast the machine."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.ledger._sqlite import SqliteStore
from stepsaga.testing._bulk import open_backlog
from tests.framework.unit.handlers.helpers import CASE, NOW
from workflows.case import parse_case
from workflows.project import reference_project

SIZES = (100, 10_000)
#: VM instructions per progress callback: fine enough to see a scan of 10,000 rows.
STEP = 100


class Meter:
    """What the connections opened while installed ran."""

    def __init__(self) -> None:
        self.statements: Counter[str] = Counter()
        self.steps = 0

    def take(self) -> tuple[int, int]:
        taken = (sum(self.statements.values()), self.steps)
        self.statements.clear()
        self.steps = 0
        return taken

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        meter, real = self, sqlite3.connect

        class Counted(sqlite3.Connection):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.set_trace_callback(None)
                self.set_progress_handler(self._step, STEP)

            def _step(self) -> int:
                meter.steps += 1
                return 0

            def set_trace_callback(self, callback: Any) -> None:
                def trace(sql: str) -> None:
                    meter.statements[sql.split(None, 1)[0].upper()] += 1
                    if callback is not None:
                        callback(sql)

                super().set_trace_callback(trace)

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn: sqlite3.Connection = real(*args, factory=Counted, **kwargs)
            return conn

        monkeypatch.setattr(sqlite3, "connect", connect)


def lived_home(root: Path, backlog: int) -> StateHome:
    home = StateHome(root)
    store = SqliteStore(home.ledger_path, synchronous="OFF")
    assert store.bulk_insert([], open_backlog(backlog, tenant=CASE["tenant_id"], now=NOW)) == (
        backlog
    )
    store.close()
    return home


def case(number: int) -> Any:
    return parse_case({**CASE, "case_id": f"CASE-{number}"})


def measure(root: Path, backlog: int, meter: Meter) -> dict[str, Any]:
    home = lived_home(root, backlog)
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        assert backend.start(case(1), time_scale=0).status == "SUCCEEDED"  # opens the stores
        meter.take()
        assert backend.start(case(2), time_scale=0).status == "SUCCEEDED"
        start = meter.take()
        view = backend.status("CASE-2")
        status = meter.take()
    assert view.open_items == ()
    return {"start": start, "status": status}


def test_start_and_status_cost_the_same_with_100_or_10000_open_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meter = Meter()
    meter.install(monkeypatch)
    small, large = (measure(tmp_path / str(n), n, meter) for n in SIZES)
    for command in ("start", "status"):
        (few_statements, few_steps), (many_statements, many_steps) = small[command], large[command]
        assert many_statements == few_statements, command
        # B-tree seeks are one VM instruction whatever the depth: flat within noise.
        assert many_steps <= few_steps * 1.1 + 2, (command, small, large)


def test_status_lists_the_open_items_of_its_own_case_only(tmp_path: Path) -> None:
    home = lived_home(tmp_path / "home", 50)
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        backend.start(case(7), time_scale=0)
        assert backend.status("CASE-7").open_items == ()
        backlog_case = backend.recon_list(case="BACKLOG-3", tenant=CASE["tenant_id"])
    assert [item.case_id for item in backlog_case] == ["BACKLOG-3"]
