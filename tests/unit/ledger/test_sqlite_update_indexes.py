"""The ledger's outcome UPDATE sets only the columns an update can change, so SQLite opens
for writing only the indexes built on them (``EXPLAIN``: its ``OpenWrite`` opcodes name
their root pages): an outcome rewrites three index entries, not every index of the row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stepsaga.ledger.sqlite import _UPDATE, SqliteStore


def written_by(conn: sqlite3.Connection, sql: str) -> set[str]:
    names = {page: name for name, page in conn.execute("SELECT name, rootpage FROM sqlite_master")}
    program = conn.execute(f"EXPLAIN {sql}", [None] * sql.count("?")).fetchall()
    return {names[row[3]] for row in program if row[1] == "OpenWrite" and row[3] in names}


def test_the_outcome_update_writes_only_the_indexes_of_what_changes(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        written = written_by(conn, _UPDATE)
        indexes = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
    assert {"actions_by_time", "actions_by_tenant", "actions_by_case"} <= indexes
    assert written == {
        "actions",
        "actions_in_progress",
        "actions_by_tenant_status",
        "actions_by_status",
    }
