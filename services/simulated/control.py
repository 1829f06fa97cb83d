"""Operating the simulated world from outside the saga: faults per case, stock, effects.

``attach_faults`` is how faults survive a process: ``start`` stores the faults file's rules
keyed by (tenant, case) in ``services.sqlite3``; every later call for that case — in this
process, a redrive in another one, a reconciliation run — reads them from there. Fire and
call counts are keyed by (tenant, case) too, so they continue where they left off.
"""

from __future__ import annotations

from services.faults import Faults, faults_from_json
from services.simulated.db import TABLES, ServicesDb, to_text
from services.simulated.effects import Effect, list_effects
from services.values import Operation
from stepsaga import Clock
from stepsaga.errors import InvalidInputError


class Simulation:
    def __init__(self, db: ServicesDb, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def attach_faults(self, tenant_id: str, case_id: str, faults: Faults) -> None:
        """Make ``faults`` apply to every call for this case, in any process, from now on.
        Attaching again replaces the rules; counts of rules kept are not reset."""
        with self._db.write() as conn:
            conn.execute(
                """INSERT INTO case_faults (tenant_id, case_id, faults, attached_at)
                   VALUES (?, ?, ?, ?)
                   ON CONFLICT (tenant_id, case_id)
                   DO UPDATE SET faults = excluded.faults, attached_at = excluded.attached_at""",
                (tenant_id, case_id, faults.to_json(), to_text(self._clock.now())),
            )

    def detach_faults(self, tenant_id: str, case_id: str) -> None:
        with self._db.write() as conn:
            conn.execute(
                "DELETE FROM case_faults WHERE tenant_id = ? AND case_id = ?", (tenant_id, case_id)
            )

    def attached_faults(self, tenant_id: str, case_id: str) -> Faults | None:
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT faults FROM case_faults WHERE tenant_id = ? AND case_id = ?",
                (tenant_id, case_id),
            ).fetchone()
        return faults_from_json(row["faults"]) if row else None

    def effects(self, *, tenant_id: str | None = None, case_id: str | None = None) -> list[Effect]:
        with self._db.read() as conn:
            return list_effects(conn, tenant_id=tenant_id, case_id=case_id)

    def calls(self, tenant_id: str, case_id: str, operation: Operation) -> int:
        """How many calls of ``operation`` the services received for this case."""
        with self._db.read() as conn:
            row = conn.execute(
                """SELECT calls FROM call_counts
                   WHERE tenant_id = ? AND case_id = ? AND operation = ?""",
                (tenant_id, case_id, str(operation)),
            ).fetchone()
        return int(row["calls"]) if row else 0

    def set_stock(self, tenant_id: str, sku: str, warehouse: str, available: int) -> None:
        if available < 0:
            raise InvalidInputError("available: must not be negative", field="available")
        with self._db.write() as conn:
            conn.execute(
                """INSERT INTO stock (tenant_id, sku, warehouse, available) VALUES (?, ?, ?, ?)
                   ON CONFLICT (tenant_id, sku, warehouse) DO UPDATE SET available = ?""",
                (tenant_id, sku, warehouse, available, available),
            )

    def stock(self, tenant_id: str, sku: str, warehouse: str) -> int | None:
        """Units available, or ``None`` if the service never saw this sku/warehouse."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT available FROM stock WHERE tenant_id = ? AND sku = ? AND warehouse = ?",
                (tenant_id, sku, warehouse),
            ).fetchone()
        return int(row["available"]) if row else None

    def reset(self) -> None:
        """Forget everything: stock, reservations, refunds, shipments, effects, counts and
        attached faults."""
        with self._db.write() as conn:
            for table in TABLES:
                conn.execute(f"DELETE FROM {table}")
