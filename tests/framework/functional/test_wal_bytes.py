"""What a happy start writes to the WAL: new files get 1 KiB pages and the ledger's
outcome rewrites only the indexes of what changed, so a three-step execution writes about
52 KiB of engine WAL and 48 KiB of ledger WAL (it was 113 and 144 KiB with 4 KiB pages).
Measured as the growth of each ``-wal`` file over ten starts (no checkpoint runs before
4 MB of WAL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga._util.sqlite_wal import CHECKPOINT_BYTES, PAGE_SIZE, enable_wal
from stepsaga.backends._local import LocalBackend
from tests.framework.unit.handlers.helpers import CASE, NOW
from workflows.case import parse_case
from workflows.project import reference_project

STARTS = 10


def case(number: int) -> Any:
    return parse_case({**CASE, "case_id": f"CASE-{number}"})


def wal_sizes(root: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in root.glob("*-wal")}


def test_a_start_writes_a_bounded_wal_on_small_pages(tmp_path: Path) -> None:
    home = StateHome(tmp_path)
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        backend.start(case(0), time_scale=0)
        before = wal_sizes(tmp_path)
        for number in range(1, STARTS + 1):
            assert backend.start(case(number), time_scale=0).status == "SUCCEEDED"
        after = wal_sizes(tmp_path)
    per_execution = {name: (after[name] - before[name]) / STARTS for name in after}
    assert per_execution["executions.sqlite3-wal"] < 70 * 1024, per_execution
    assert per_execution["ledger.sqlite3-wal"] < 70 * 1024, per_execution
    for name in ("executions.sqlite3", "ledger.sqlite3"):
        with sqlite3.connect(tmp_path / name) as conn:
            assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE


def test_small_pages_checkpoint_after_as_many_bytes_as_before(tmp_path: Path) -> None:
    """``wal_autocheckpoint`` counts pages: kept at SQLite's 4 MB, whatever the page size
    (a file created before keeps its 4 KiB pages and SQLite's 1,000)."""
    old = sqlite3.connect(tmp_path / "old.sqlite3")
    old.execute("PRAGMA page_size = 4096")
    old.execute("CREATE TABLE t (x)")
    old.close()
    for name, pages in (("new.sqlite3", CHECKPOINT_BYTES // 1024), ("old.sqlite3", 1000)):
        conn = sqlite3.connect(tmp_path / name)
        enable_wal(conn, timeout_seconds=1)
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == pages, name
        conn.close()
