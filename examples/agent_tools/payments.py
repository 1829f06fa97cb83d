"""The downstream both tools call: a payments API that deduplicates on our key.

A stand-in with real semantics, in one SQLite file: a refund per key (a second call with
the same key returns the first refund), and a count of every call that reached it, so a
run can show how many effects the tool made.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


class Payments:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._path = folder / "payments.sqlite3"
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS refunds "
                "(key TEXT PRIMARY KEY, order_id TEXT, cents INT)"
            )
            db.execute("CREATE TABLE IF NOT EXISTS calls (n INTEGER PRIMARY KEY)")

    def _connect(self) -> sqlite3.Connection:
        """A connection per call: an MCP server runs sync tools on worker threads."""
        return sqlite3.connect(self._path, timeout=10)

    def refund(self, order_id: str, amount_cents: int, *, idempotency_key: str) -> dict[str, Any]:
        with self._connect() as db:
            db.execute("INSERT INTO calls DEFAULT VALUES")
            db.execute(
                "INSERT INTO refunds VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                (idempotency_key, order_id, amount_cents),
            )
            row = db.execute(
                "SELECT rowid, cents FROM refunds WHERE key = ?", (idempotency_key,)
            ).fetchone()
        return {"refund_id": f"RF-{row[0]}", "order_id": order_id, "amount_cents": row[1]}

    def refunds(self) -> list[tuple[str, int]]:
        with self._connect() as db:
            return list(db.execute("SELECT order_id, cents FROM refunds ORDER BY rowid"))

    def calls(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT count(*) FROM calls").fetchone()[0])
