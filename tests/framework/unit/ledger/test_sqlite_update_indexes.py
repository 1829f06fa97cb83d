"""The ledger's outcome UPDATE sets only the columns an update can change, so SQLite opens
for writing only the indexes built on them (``EXPLAIN``: its ``OpenWrite`` opcodes name
their root pages): an outcome rewrites the three index entries that depend on the status,
not ``actions_by_case``; and no index is left that no listing reads."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from stepsaga.ledger._sqlite import _UPDATE, SCHEMA_VERSION, SqliteStore
from stepsaga.testing._bulk import history

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


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
    assert "actions_by_case" in indexes
    assert written == {
        "actions",
        "actions_in_progress",
        "actions_by_tenant_status",
        "actions_by_status",
    }


def test_every_index_is_one_a_listing_reads(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    SqliteStore(path).close()
    with sqlite3.connect(path) as conn:
        indexes = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
        }
    assert indexes == {
        "actions_in_progress",  # the sweep
        "actions_by_tenant_status",  # --tenant (one range per status without --status)
        "actions_by_status",  # --status, and every status merged without filters
        "actions_by_case",  # --case; a case's records
        "recon_by_tenant_status",
        "recon_by_status",
        "recon_by_case",  # a case's open items: start, status, stop
    }


def test_a_schema_5_file_drops_the_indexes_and_keeps_listing_in_order(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    store = SqliteStore(path)
    records, items = history(60, now=NOW)
    store.bulk_insert(records, items)
    store.close()
    with sqlite3.connect(path) as conn:  # as schema 5 left it
        conn.execute("CREATE INDEX actions_by_time ON actions (created_at, key)")
        conn.execute("CREATE INDEX recon_by_time ON recon_items (created_at, item_id)")
        conn.execute("PRAGMA user_version = 5")
    store = SqliteStore(path)
    page = store.query(limit=1000)
    items_page = store.query_items(tenant="tenant-1", limit=1000)
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert not names & {"actions_by_time", "recon_by_time"}
    by_time = sorted(records, key=lambda r: (r.created_at, r.key))
    assert [r.key for r in page.items] == [r.key for r in by_time]
    mine = sorted((i for i in items if i.tenant_id == "tenant-1"), key=lambda i: i.created_at)
    assert [i.item_id for i in items_page.items] == [i.item_id for i in mine]
