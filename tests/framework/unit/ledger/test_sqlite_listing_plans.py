"""Every SQLite listing is a range read of an index in the listing's order (``EXPLAIN
QUERY PLAN``): no table scan, no sort of the matching rows, whatever the filters. A
listing without a status merges one range per status (``MERGE (UNION ALL)``): the ranges
arrive in order, so SQLite merges them without sorting."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from stepsaga.ledger._models import ReconStatus, Status
from stepsaga.ledger._sqlite import SqliteStore
from stepsaga.testing._bulk import history

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
AFTER = "2026-11-29T11:00:00.000000Z#tenant-1:CASE-1:r1:reserve_stock"


def test_every_listing_reads_an_index_in_order(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    store = SqliteStore(path)
    records, items = history(50, now=NOW)
    store.bulk_insert(records)
    for item in items:
        store.put_item(item, expect=None)
    ran: list[str] = []
    store._conn().set_trace_callback(ran.append)  # the SQL the store runs, values bound
    for after in (None, AFTER):
        store.query(limit=5, after=after)
        store.query(tenant="tenant-1", limit=5, after=after)
        store.query(tenant="tenant-1", status=Status.FAILED, limit=5, after=after)
        store.query(status=Status.UNKNOWN, limit=5, after=after)
        store.query(case="CASE-3", limit=5, after=after)
        store.query(tenant="tenant-1", case="CASE-3", limit=5, after=after)
        store.stale(lease_expired_before=NOW, limit=5, after=after)
        store.query_items(limit=5, after=after)
        store.query_items(tenant="tenant-0", limit=5, after=after)
        store.query_items(tenant="tenant-0", status=ReconStatus.OPEN, limit=5, after=after)
        store.query_items(status=ReconStatus.RESOLVED, limit=5, after=after)
        store.query_items(case="CASE-5", limit=5, after=after)
        # A case's open items (start, status, stop): the case's entries, not the tenant's.
        store.query_items(
            tenant="tenant-0", case="CASE-5", status=ReconStatus.OPEN, limit=5, after=after
        )
    selects = [sql for sql in ran if sql.startswith("SELECT")]
    assert len(selects) == 26
    with sqlite3.connect(path) as conn:
        for sql in selects:
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            reads = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
            assert reads, (sql, plan)
            assert not any("TEMP B-TREE" in step for step in plan), (sql, plan)
            for step in reads:
                assert "USING INDEX" in step or "USING COVERING INDEX" in step, (sql, plan)
            if len(reads) > 1:
                assert plan[0] == "MERGE (UNION ALL)", (sql, plan)
            if "case_id = " in sql:
                assert all("_by_case " in step for step in reads), (sql, plan)
    store.close()
