"""The downstream the tools call: payments and a warehouse that deduplicate on our key.

A stand-in with real semantics, in one SQLite file: one effect per key (a second call with
the same key returns the first effect), a count of every call that reached it, and
``faults.json`` beside it to lose a reply after the effect
(``{"lose_reply": {"refund": [1]}}``: the first refund call applies, then times out).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from stepsaga.errors import OutcomeUnknownError


class Payments:
    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._path = folder / "payments.sqlite3"
        self._faults = folder / "faults.json"
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS effects "
                "(key TEXT PRIMARY KEY, kind TEXT, order_id TEXT, value TEXT)"
            )
            db.execute("CREATE TABLE IF NOT EXISTS calls (n INTEGER PRIMARY KEY, kind TEXT)")

    def _connect(self) -> sqlite3.Connection:
        """A connection per call: an MCP server runs sync tools on worker threads."""
        return sqlite3.connect(self._path, timeout=10)

    def refund(self, order_id: str, amount_cents: int, *, idempotency_key: str) -> dict[str, Any]:
        row = self._apply("refund", idempotency_key, order_id, amount_cents)
        return {"refund_id": f"RF-{row[0]}", "order_id": order_id, "amount_cents": int(row[1])}

    def credit(self, order_id: str, amount_cents: int, *, idempotency_key: str) -> dict[str, Any]:
        row = self._apply("credit", idempotency_key, order_id, amount_cents)
        return {"credit_id": f"CR-{row[0]}", "order_id": order_id, "amount_cents": int(row[1])}

    def ship(self, order_id: str, sku: str, *, idempotency_key: str) -> dict[str, Any]:
        row = self._apply("shipment", idempotency_key, order_id, sku)
        return {"shipment_id": f"SH-{row[0]}", "order_id": order_id, "sku": row[1]}

    def find(self, idempotency_key: str) -> tuple[int, str, str] | None:
        """The effect made with this key (rowid, kind, value), if any: the lookup."""
        with self._connect() as db:
            row = db.execute(
                "SELECT rowid, kind, value FROM effects WHERE key = ?", (idempotency_key,)
            ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), str(row[2]))

    def _apply(self, kind: str, key: str, order_id: str, value: object) -> tuple[int, str]:
        with self._connect() as db:
            call = db.execute("INSERT INTO calls (kind) VALUES (?)", (kind,)).lastrowid
            number = db.execute("SELECT count(*) FROM calls WHERE kind = ?", (kind,)).fetchone()[0]
            db.execute(
                "INSERT INTO effects VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
                (key, kind, order_id, str(value)),
            )
            row = db.execute("SELECT rowid, value FROM effects WHERE key = ?", (key,)).fetchone()
        if number in self._lost(kind):
            raise OutcomeUnknownError(f"{kind} call {call}: the reply was lost after sending")
        return int(row[0]), str(row[1])

    def _lost(self, kind: str) -> list[int]:
        if not self._faults.exists():
            return []
        lost: list[int] = json.loads(self._faults.read_text()).get("lose_reply", {}).get(kind, [])
        return lost

    def refunds(self) -> list[tuple[str, int]]:
        return [(order, int(value)) for kind, order, value in self.effects() if kind == "refund"]

    def effects(self) -> list[tuple[str, str, str]]:
        with self._connect() as db:
            return list(db.execute("SELECT kind, order_id, value FROM effects ORDER BY rowid"))

    def calls(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT count(*) FROM calls").fetchone()[0])
