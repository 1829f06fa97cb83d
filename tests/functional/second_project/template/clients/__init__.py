"""The team's fake clients: billing, seats and mail in one SQLite file under the state
home, so a redrive or a resolve in another process sees what happened. ``UPGRADE_FAULT``
(``operation:kind``, kind ``reject``, ``uncertain`` or ``transient``) makes one operation
misbehave in this process."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from stepsaga import (
    AwsContext,
    BusinessRejectedError,
    LocalContext,
    OutcomeUnknownError,
    TransientError,
)


class Fakes:
    def __init__(self, path: Path, fault: str) -> None:
        self.path = path
        self.fault = fault
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS effects (operation TEXT, key TEXT, detail TEXT)")

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None)

    def apply(self, operation: str, key: str, detail: str, *, keyed: bool) -> str:
        kind = self.fault.partition(":")[2] if self.fault.startswith(operation + ":") else ""
        if kind == "reject":
            raise BusinessRejectedError(f"{operation}: refused")
        if kind == "transient":
            raise TransientError(f"{operation}: unavailable, not sent")
        with self._db() as db:
            seen = db.execute(
                "SELECT 1 FROM effects WHERE operation = ? AND key = ?", (operation, key)
            ).fetchone()
            if not (keyed and seen):
                db.execute("INSERT INTO effects VALUES (?, ?, ?)", (operation, key, detail))
        if kind == "uncertain":
            raise OutcomeUnknownError(f"{operation}: no reply")
        return f"{operation}-{key[-12:]}"

    def found(self, operation: str, key: str) -> bool:
        with self._db() as db:
            row = db.execute(
                "SELECT 1 FROM effects WHERE operation = ? AND key = ?", (operation, key)
            ).fetchone()
        return row is not None


class UpgradeDependencies:
    def local(self, ctx: LocalContext) -> Fakes:
        ctx.home.ensure()
        return Fakes(ctx.home.root / "upgrade-fakes.sqlite3", os.environ.get("UPGRADE_FAULT", ""))

    def aws(self, ctx: AwsContext) -> Fakes:
        home = Path(ctx.environ["UPGRADE_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        return Fakes(home / "upgrade-fakes.sqlite3", ctx.environ.get("UPGRADE_FAULT", ""))


dependencies = UpgradeDependencies()
