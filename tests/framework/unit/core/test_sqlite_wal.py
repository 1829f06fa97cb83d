"""Every SQLite store opens a fresh file safely while other processes open it too.

``PRAGMA journal_mode=WAL`` needs an exclusive lock and SQLite does not wait for it (the
busy timeout does not apply): without a retry, one of several processes opening a new home
at once failed with "database is locked" (found by the chaos harness).
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from services.simulated import ServicesDb
from stepsaga._util.sqlite_wal import enable_wal
from stepsaga.engine._store import Store
from stepsaga.ledger import open_ledger


def _services(path: Path) -> None:
    ServicesDb(path)  # opens, creates the schema and closes its connection


OPENERS: dict[str, Callable[[Path], None]] = {
    "ledger": lambda path: open_ledger(f"sqlite:///{path}").close(),
    "executions": lambda path: Store(path).close(),
    "services": _services,
}
ROUNDS = 15
PROCESSES = 4


def _open(kind: str, path: Path, barrier: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    OPENERS[kind](path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(OPENERS))
def test_processes_opening_a_fresh_file_at_once_all_succeed(tmp_path: Path, kind: str) -> None:
    context = multiprocessing.get_context("fork")
    failed = 0
    for round_number in range(ROUNDS):
        path = tmp_path / f"{round_number}.sqlite3"
        barrier = context.Barrier(PROCESSES)
        processes = [
            context.Process(target=_open, args=(kind, path, barrier)) for _ in range(PROCESSES)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        failed += sum(process.exitcode != 0 for process in processes)
    assert failed == 0


def test_enable_wal_waits_for_a_lock_and_then_gives_up(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    conn = sqlite3.connect(path, isolation_level=None, timeout=0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enable_wal(conn, timeout_seconds=0.2)
    holder.execute("COMMIT")
    enable_wal(conn, timeout_seconds=0.2)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    holder.close()
