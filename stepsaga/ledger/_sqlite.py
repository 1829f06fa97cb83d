"""The embedded store: one SQLite file, safe for many threads and several processes.

WAL journal (readers never block the writer), ``BEGIN IMMEDIATE`` for every write (the
write lock is taken up front, so two writers never deadlock upgrading a read lock), a busy
timeout instead of instant "database is locked", ``synchronous=FULL`` unless the URL says
otherwise. One connection per thread (and per process after a fork).

A ledger kept in the embedded engine's own file (a one-file home) writes through the
engine's connection while the engine lends it (``stepsaga._util.sqlite_share``): claims
commit at once, an outcome joins the engine's next commit (one durable commit instead of
two per step). Other ``sqlite:///`` ledgers keep their own commits.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, TypeVar

from stepsaga._util.sqlite_share import lent
from stepsaga._util.sqlite_wal import enable_wal
from stepsaga.errors import InvalidInputError, StoreUnavailableError
from stepsaga.ledger._codec import (
    json_text,
    opt_parse_time,
    opt_time_text,
    parse_json,
    parse_time,
    time_text,
)
from stepsaga.ledger._lookups import position
from stepsaga.ledger._models import (
    EffectClass,
    ReconItem,
    ReconOutcome,
    ReconStatus,
    Record,
    ResolutionAudit,
    Signoff,
    Status,
)
from stepsaga.ledger._store import Expect, ItemWrite, Page, WriteOutcome, WriteResult
from stepsaga.ledger._writes import ExtraWrite, Scalar

T = TypeVar("T")

SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
#: 2 added ``extra_items`` (``CREATE … IF NOT EXISTS``: a version-1 file upgrades in place);
#: 3 added the ``terms`` column of ``actions`` (``_MIGRATIONS``); 4 added dual control
#: (``recon_items.dual_control``, ``recon_items.first_approval``) and the ``audit`` table;
#: 5 the listing indexes (one per filter a listing takes, each ending in its order, so
#: pages are keyset range reads); 6 dropped the four that only listings without a status
#: read (``actions_by_time``, ``actions_by_tenant``, ``recon_by_time``,
#: ``recon_by_tenant_time``): those merge the per-status ranges instead, so a claim writes
#: four index entries instead of six.
SCHEMA_VERSION = 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS actions (
    key TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    case_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    operation TEXT NOT NULL,
    effect TEXT NOT NULL,
    digest TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT NOT NULL,
    lease_expires_at TEXT,
    attempts INTEGER NOT NULL,
    result TEXT,
    error TEXT,
    reference TEXT,
    cost INTEGER,
    debited INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    terms TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS actions_in_progress ON actions (lease_expires_at)
    WHERE status = 'IN_PROGRESS';
CREATE INDEX IF NOT EXISTS actions_by_tenant_status ON actions (tenant_id, status, created_at, key);
CREATE INDEX IF NOT EXISTS actions_by_status ON actions (status, created_at, key);
CREATE INDEX IF NOT EXISTS actions_by_case ON actions (case_id, created_at, key);
CREATE TABLE IF NOT EXISTS budgets (
    tenant_id TEXT PRIMARY KEY,
    remaining INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS recon_items (
    item_id TEXT PRIMARY KEY,
    record_key TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    case_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    step TEXT NOT NULL,
    evidence TEXT NOT NULL,
    status TEXT NOT NULL,
    outcome TEXT,
    resolved_by TEXT,
    note TEXT,
    task_token TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    resolved_at TEXT,
    dual_control INTEGER NOT NULL DEFAULT 0,
    first_approval TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS recon_by_tenant_status
    ON recon_items (tenant_id, status, created_at, item_id);
CREATE INDEX IF NOT EXISTS recon_by_status ON recon_items (status, created_at, item_id);
CREATE INDEX IF NOT EXISTS recon_by_case ON recon_items (case_id, created_at, item_id);
CREATE TABLE IF NOT EXISTS extra_items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    attributes TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    item_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    record TEXT NOT NULL
) WITHOUT ROWID;
"""

_COLUMNS = (
    "key, tenant_id, case_id, revision, operation, effect, digest, status, owner, "
    "lease_expires_at, attempts, result, error, reference, cost, debited, created_at, "
    "updated_at, expires_at, terms"
)
_INSERT = (
    f"INSERT INTO actions ({_COLUMNS}) VALUES ({', '.join('?' * 20)}) ON CONFLICT (key) DO NOTHING"
)
#: What takes a file from each older schema version to the next, beyond the ``CREATE … IF
#: NOT EXISTS`` of ``_SCHEMA`` (a ledger keeps its records across upgrades).
_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (),
    2: ("ALTER TABLE actions ADD COLUMN terms TEXT",),
    3: (
        "ALTER TABLE recon_items ADD COLUMN dual_control INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE recon_items ADD COLUMN first_approval TEXT",
    ),
    4: ("DROP INDEX IF EXISTS recon_by_tenant",),  # recon_by_tenant_status covers it
    5: (
        "DROP INDEX IF EXISTS actions_by_time",
        "DROP INDEX IF EXISTS actions_by_tenant",
        "DROP INDEX IF EXISTS recon_by_time",
        "DROP INDEX IF EXISTS recon_by_tenant_time",
    ),
}
#: Columns an UPDATE never changes: what the key determines, and when it was first written.
#: Left out of the SET list, so SQLite leaves the index built only from them alone
#: (``actions_by_case``): an outcome rewrites the three entries that depend on the status.
_FIXED = frozenset({"tenant_id", "case_id", "revision", "operation", "created_at"})
_NON_KEY = [c.strip() for c in _COLUMNS.split(",")[1:]]
_CHANGING = [i for i, column in enumerate(_NON_KEY) if column not in _FIXED]
_UPDATE = (
    "UPDATE actions SET "
    + ", ".join(f"{_NON_KEY[i]} = ?" for i in _CHANGING)
    + " WHERE key = ? AND status = ? AND owner = ?"
)
_SELECT = f"SELECT {_COLUMNS} FROM actions"
_GET = f"{_SELECT} WHERE key = ?"

_ITEM_COLUMNS = (
    "item_id, record_key, tenant_id, case_id, reason, step, evidence, status, outcome, "
    "resolved_by, note, task_token, created_at, updated_at, resolved_at, dual_control, "
    "first_approval"
)
_INSERT_ITEM = (
    f"INSERT INTO recon_items ({_ITEM_COLUMNS}) VALUES ({', '.join('?' * 17)}) "
    "ON CONFLICT (item_id) DO NOTHING"
)


class SqliteStore:
    """``LedgerStore`` over one SQLite file."""

    def __init__(
        self,
        path: Path | str,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 5000,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        """``trace`` receives every SQL statement run (diagnostics, write counting)."""
        self.path = Path(path)
        self._trace = trace
        self._real_path = os.path.realpath(self.path)  # what an engine lending its file names
        mode = synchronous.upper()
        if mode not in SYNCHRONOUS_MODES:
            raise InvalidInputError(
                f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {synchronous!r}",
                field="synchronous",
            )
        if busy_timeout_ms < 0:
            raise InvalidInputError("busy_timeout_ms must be >= 0", field="busy_timeout_ms")
        self.synchronous = mode
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        # (thread, pid, connection): connections of finished threads are closed, those a
        # forked child inherited are never touched by it (SQLite forbids using them).
        self._connections: list[tuple[weakref.ref[threading.Thread], int, sqlite3.Connection]]
        self._connections = []
        self._inherited: list[sqlite3.Connection] = []
        self._generation = 0
        self._error_mapping = _ErrorMapping(self.path, busy_timeout_ms)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInputError(
                f"cannot create the folder for ledger {self.path}: {exc.strerror}", field="url"
            ) from None
        with self._errors():
            self._setup(self._conn())

    # --- connections -----------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        shared = lent(self._real_path)
        if shared is not None:
            return shared.conn
        held: tuple[sqlite3.Connection, int, int] | None = getattr(self._local, "held", None)
        if held is not None and held[1] == os.getpid() and held[2] == self._generation:
            return held[0]
        return self._connect()

    def _connect(self) -> sqlite3.Connection:
        """A new connection for this thread (first use, after a fork, after ``close``)."""
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.set_trace_callback(self._trace)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        enable_wal(conn, timeout_seconds=self.busy_timeout_ms / 1000)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        pid = os.getpid()
        self._local.held = (conn, pid, self._generation)
        with self._lock:
            self._prune(pid)
            self._connections.append((weakref.ref(threading.current_thread()), pid, conn))
        return conn

    def _prune(self, pid: int) -> None:
        """Close connections whose thread ended; set aside those inherited over a fork."""
        kept = []
        for thread, owner, conn in self._connections:
            alive = thread()
            if owner != pid:
                self._inherited.append(conn)
            elif alive is None or not alive.is_alive():
                with suppress(sqlite3.Error):
                    conn.close()
            else:
                kept.append((thread, owner, conn))
        self._connections = kept

    def _setup(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise InvalidInputError(
                f"{self.path} was written by a newer stepsaga (schema {version})", field="url"
            )
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            existing = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'actions'"
            ).fetchone()
            if existing is not None and version < SCHEMA_VERSION:
                for step in range(max(version, 1), SCHEMA_VERSION):
                    for statement in _MIGRATIONS[step]:
                        conn.execute(statement)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
            self._generation += 1
        pid = os.getpid()
        for _, owner, conn in connections:
            if owner != pid:
                self._inherited.append(conn)
                continue
            with suppress(sqlite3.Error):
                conn.close()

    def _errors(self) -> _ErrorMapping:
        """SQLite failures as our error family: busy → retryable, broken file → bad input."""
        return self._error_mapping

    def _write(self, body: Callable[[sqlite3.Connection], tuple[bool, T]]) -> T:
        """Run ``body`` inside ``BEGIN IMMEDIATE``; commit when it says so, else roll back.
        On a connection an engine lends: inside its open transaction, if any, committed now."""
        shared = lent(self._real_path)
        if shared is not None:
            with self._errors():
                return shared.run(body, level=self.synchronous, defer=False)
        with self._errors():
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                commit, value = body(conn)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT" if commit else "ROLLBACK")
            return value

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._errors():
            return self._conn().execute(sql, args).fetchall()

    # --- records ---------------------------------------------------------------------

    def get(self, key: str) -> Record | None:
        try:
            row = self._conn().execute(_GET, (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            self._error_mapping.translate(exc)
        return None if row is None else _record(row)

    def put(
        self,
        record: Record,
        *,
        expect: Expect | None,
        budget_delta: int = 0,
        extra: Sequence[ExtraWrite] = (),
    ) -> WriteOutcome:
        if budget_delta < 0 and self.get_budget(record.tenant_id) is None:
            # No budget: say so from one read, without taking the write lock (a budget set
            # after this read came after the claim, as it would one commit later).
            return WriteOutcome(WriteResult.NO_BUDGET)
        if expect is None:
            statement, args = _INSERT, _row(record)
        else:
            statement, args = _UPDATE, _update_args(record, expect)
        shared = lent(self._real_path)
        if not budget_delta and not extra and shared is None:
            # One conditional statement is its own transaction: no BEGIN/COMMIT round trips.
            try:
                conn = self._conn()
                if conn.execute(statement, args).rowcount == 1:
                    return _WRITTEN
                return _stale(conn, record.key)
            except sqlite3.DatabaseError as exc:
                self._error_mapping.translate(exc)

        def body(conn: sqlite3.Connection) -> tuple[bool, WriteOutcome]:
            if conn.execute(statement, args).rowcount != 1:
                return False, _stale(conn, record.key)
            budget = _apply_budget(conn, record.tenant_id, budget_delta)
            if budget.result is not WriteResult.WRITTEN:
                return False, budget
            applied = _apply_extra(conn, extra)
            return applied.result is WriteResult.WRITTEN, applied

        if shared is not None:
            # An outcome waits for the engine's commit; a claim is durable before it returns.
            defer = expect is not None and record.status is not Status.IN_PROGRESS
            with self._errors():
                return shared.run(body, level=self.synchronous, defer=defer)
        return self._write(body)

    def get_extra(self, pk: str, sk: str) -> dict[str, Scalar] | None:
        rows = self._read(_GET_EXTRA, (pk, sk))
        return _attributes(rows[0][0]) if rows else None

    def put_extra(self, extra: Sequence[ExtraWrite]) -> WriteOutcome:
        def body(conn: sqlite3.Connection) -> tuple[bool, WriteOutcome]:
            applied = _apply_extra(conn, extra)
            return applied.result is WriteResult.WRITTEN, applied

        return self._write(body)

    def bulk_insert(self, records: Iterable[Record], items: Iterable[ReconItem] = ()) -> int:
        """Insert many records and items in one transaction, skipping keys that exist
        (imports, benchmarks, a lived-in home for tests), then fold the WAL into the file so
        later commits do not pay for it. Returns how many were inserted."""

        def body(conn: sqlite3.Connection) -> tuple[bool, int]:
            before = conn.total_changes
            conn.executemany(_INSERT, (_row(record) for record in records))
            conn.executemany(_INSERT_ITEM, (_item_row(item) for item in items))
            return True, conn.total_changes - before

        inserted = self._write(body)
        with self._errors():
            self._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return inserted

    def query(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: Status | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[Record]:
        filters = {"tenant_id": tenant, "case_id": case, "status": status}
        select = _SELECT if case is None else f"{_SELECT} INDEXED BY actions_by_case"
        merged = list(Status) if case is None and status is None else None
        sql, args = _keyset(select, filters, ("created_at", "key"), limit, after, merge=merged)
        return _paged([_record(row) for row in self._read(sql, args)], limit, _record_position)

    def stale(
        self, *, lease_expired_before: datetime, limit: int, after: str | None = None
    ) -> Page[Record]:
        # The partial index of IN_PROGRESS records, in lease order (the literal status lets
        # SQLite use it; named, because the status index would otherwise win and sort).
        select = (
            f"{_SELECT} INDEXED BY actions_in_progress "
            "WHERE status = 'IN_PROGRESS' AND lease_expires_at < ?"
        )
        sql, args = _keyset(
            select, {}, ("lease_expires_at", "key"), limit, after, [time_text(lease_expired_before)]
        )
        return _paged([_record(row) for row in self._read(sql, args)], limit, _lease_position)

    # --- budgets ---------------------------------------------------------------------

    def get_budget(self, tenant_id: str) -> int | None:
        rows = self._read("SELECT remaining FROM budgets WHERE tenant_id = ?", (tenant_id,))
        return int(rows[0][0]) if rows else None

    def set_budget(self, tenant_id: str, amount: int) -> None:
        def body(conn: sqlite3.Connection) -> tuple[bool, None]:
            conn.execute(
                "INSERT INTO budgets (tenant_id, remaining) VALUES (?, ?) "
                "ON CONFLICT (tenant_id) DO UPDATE SET remaining = excluded.remaining",
                (tenant_id, amount),
            )
            return True, None

        self._write(body)

    # --- reconciliation items --------------------------------------------------------

    def get_item(self, item_id: str) -> ReconItem | None:
        rows = self._read(f"SELECT {_ITEM_COLUMNS} FROM recon_items WHERE item_id = ?", (item_id,))
        return _item(rows[0]) if rows else None

    def put_item(self, item: ReconItem, *, expect: ReconStatus | None) -> ItemWrite:
        def body(conn: sqlite3.Connection) -> tuple[bool, ItemWrite]:
            if not _put_item(conn, item, expect):
                row = conn.execute(
                    f"SELECT {_ITEM_COLUMNS} FROM recon_items WHERE item_id = ?", (item.item_id,)
                ).fetchone()
                return False, ItemWrite(False, _item(row) if row else None)
            return True, ItemWrite(True)

        return self._write(body)

    def resolve(
        self,
        item: ReconItem,
        record: Record | None,
        *,
        record_expect: Expect | None,
        budget_delta: int = 0,
        audit: ResolutionAudit | None = None,
    ) -> WriteResult:
        if record_expect is None and record is not None:
            raise ValueError("a record is written only under record_expect")

        def body(conn: sqlite3.Connection) -> tuple[bool, WriteResult]:
            if not _put_item(conn, item, ReconStatus.OPEN, same_token=True):
                return False, WriteResult.STALE
            if audit is not None and not _put_audit(conn, audit):
                return False, WriteResult.STALE
            key = item.record_key
            if record_expect is None:
                exists = conn.execute("SELECT 1 FROM actions WHERE key = ?", (key,)).fetchone()
                if exists is not None:
                    return False, WriteResult.STALE
            elif record is None:
                held = conn.execute(
                    "SELECT 1 FROM actions WHERE key = ? AND status = ? AND owner = ?",
                    (key, record_expect.status.value, record_expect.owner),
                ).fetchone()
                if held is None:
                    return False, WriteResult.STALE
            else:
                cursor = conn.execute(_UPDATE, _update_args(record, record_expect))
                if cursor.rowcount != 1:
                    return False, WriteResult.STALE
            outcome = _apply_budget(conn, item.tenant_id, budget_delta)
            return outcome.result is WriteResult.WRITTEN, outcome.result

        return self._write(body)

    def put_first_approval(self, item: ReconItem) -> ItemWrite:
        def body(conn: sqlite3.Connection) -> tuple[bool, ItemWrite]:
            written = _put_item(conn, item, ReconStatus.OPEN, same_token=True, first=True)
            return written, ItemWrite(written)

        return self._write(body)

    def get_audit(self, item_id: str) -> ResolutionAudit | None:
        rows = self._read("SELECT record FROM audit WHERE item_id = ?", (item_id,))
        return ResolutionAudit.from_dict(parse_json(rows[0][0]) or {}) if rows else None

    def query_items(
        self,
        *,
        tenant: str | None = None,
        case: str | None = None,
        status: ReconStatus | None = None,
        limit: int,
        after: str | None = None,
    ) -> Page[ReconItem]:
        filters = {"tenant_id": tenant, "case_id": case, "status": status}
        select = f"SELECT {_ITEM_COLUMNS} FROM recon_items"
        if case is not None:
            select += " INDEXED BY recon_by_case"
        merged = list(ReconStatus) if case is None and status is None else None
        sql, args = _keyset(select, filters, ("created_at", "item_id"), limit, after, merge=merged)
        return _paged([_item(row) for row in self._read(sql, args)], limit, _item_position)


def _keyset(
    select: str,
    filters: Mapping[str, object],
    order: tuple[str, str],
    limit: int,
    after: str | None,
    args: list[Any] | None = None,
    *,
    merge: Sequence[str] | None = None,
) -> tuple[str, list[Any]]:
    """A page as a range read of the index ending in ``order``: equality filters, then
    ``order > after`` (a row value), ``limit + 1`` rows to learn whether more follow.
    ``merge`` (every status, when none is asked for): one range per status, merged in
    order by SQLite (``MERGE (UNION ALL)``, no sort), so no index is needed that only a
    listing without a status would read."""
    if merge is not None:
        arms = [_keyset_where(select, {**filters, "status": s}, order, after) for s in merge]
        sql = " UNION ALL ".join(arm for arm, _ in arms)
        values = [value for _, arm_values in arms for value in arm_values]
    else:
        sql, values = _keyset_where(select, filters, order, after, args)
    sql += f" ORDER BY {order[0]}, {order[1]} LIMIT ?"
    values.append(limit + 1)
    return sql, values


def _keyset_where(
    select: str,
    filters: Mapping[str, object],
    order: tuple[str, str],
    after: str | None,
    args: list[Any] | None = None,
) -> tuple[str, list[Any]]:
    where: list[str] = []
    values = list(args or [])
    for column, value in filters.items():
        if value is not None:
            where.append(f"{column} = ?")
            values.append(str(value))
    if after is not None:
        at, _, identity = after.partition("#")
        where.append(f"({order[0]}, {order[1]}) > (?, ?)")
        values += [at, identity]
    joiner = " AND " if " WHERE " in select else " WHERE "
    return select + (joiner + " AND ".join(where) if where else ""), values


def _paged(rows: list[T], limit: int, position: Callable[[T], str]) -> Page[T]:
    if len(rows) <= limit:
        return Page(tuple(rows))
    return Page(tuple(rows[:limit]), position(rows[limit - 1]))


def _record_position(record: Record) -> str:
    return position(time_text(record.created_at), record.key)


def _lease_position(record: Record) -> str:
    return position(opt_time_text(record.lease_expires_at) or "", record.key)


def _item_position(item: ReconItem) -> str:
    return position(time_text(item.created_at), item.item_id)


class _ErrorMapping:
    """A reusable context manager (cheaper than a generator one on every call) that turns
    ``sqlite3`` errors into the error family; ``get`` and ``put`` call ``translate`` from a
    plain ``except`` instead (free when nothing is raised)."""

    def __init__(self, path: Path, busy_timeout_ms: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, sqlite3.DatabaseError):
            self.translate(exc)

    def translate(self, exc: sqlite3.DatabaseError) -> NoReturn:
        """Raise ``exc`` as the error family (the hot paths call this from ``except``)."""
        text = str(exc)
        lowered = text.lower()
        if "locked" in lowered or "busy" in lowered:
            raise StoreUnavailableError(
                f"ledger {self.path} is locked by another writer "
                f"(waited {self.busy_timeout_ms} ms)",
                path=str(self.path),
            ) from exc
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" not in lowered:
            raise StoreUnavailableError(
                f"ledger {self.path} is unavailable: {text}", path=str(self.path)
            ) from exc
        raise InvalidInputError(
            f"{self.path} is not a usable ledger database: {text}", field="url"
        ) from exc


_WRITTEN = WriteOutcome(WriteResult.WRITTEN)


def _stale(conn: sqlite3.Connection, key: str) -> WriteOutcome:
    current = conn.execute(_GET, (key,)).fetchone()
    return WriteOutcome(WriteResult.STALE, current=_record(current) if current else None)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _apply_budget(conn: sqlite3.Connection, tenant_id: str, delta: int) -> WriteOutcome:
    if delta < 0:
        row = conn.execute(
            "SELECT remaining FROM budgets WHERE tenant_id = ?", (tenant_id,)
        ).fetchone()
        if row is None:
            return WriteOutcome(WriteResult.NO_BUDGET)
        if row[0] < -delta:
            return WriteOutcome(WriteResult.BUDGET_SHORT, remaining=int(row[0]))
    if delta:
        conn.execute(
            "INSERT INTO budgets (tenant_id, remaining) VALUES (?, ?) "
            "ON CONFLICT (tenant_id) DO UPDATE SET remaining = remaining + excluded.remaining",
            (tenant_id, delta),
        )
    return WriteOutcome(WriteResult.WRITTEN)


_GET_EXTRA = "SELECT attributes FROM extra_items WHERE pk = ? AND sk = ?"


def _attributes(text: str) -> dict[str, Scalar]:
    decoded: dict[str, Scalar] = parse_json(text) or {}
    return decoded


def _apply_extra(conn: sqlite3.Connection, extra: Sequence[ExtraWrite]) -> WriteOutcome:
    """Each write in order, inside the caller's transaction; the first failed condition
    stops (the caller rolls back)."""
    for index, write in enumerate(extra):
        row = conn.execute(_GET_EXTRA, (write.pk, write.sk)).fetchone()
        stored = _attributes(row[0]) if row else None
        if write.condition is not None and not write.condition.holds(stored):
            return WriteOutcome(WriteResult.CONDITION_FAILED, failed_write=index)
        if not write.attributes:
            continue  # a pure condition check
        conn.execute(
            "INSERT INTO extra_items (pk, sk, attributes) VALUES (?, ?, ?) "
            "ON CONFLICT (pk, sk) DO UPDATE SET attributes = excluded.attributes",
            (write.pk, write.sk, json_text(write.applied_to(stored))),
        )
    return _WRITTEN


def _put_item(
    conn: sqlite3.Connection,
    item: ReconItem,
    expect: ReconStatus | None,
    *,
    same_token: bool = False,
    first: bool = False,
) -> bool:
    """Insert (``expect`` None) or update under the stored status and first approval
    (``item``'s; ``first``: none stored, so one first approval wins); ``same_token`` also
    requires the stored task token to be ``item``'s (``IS`` matches NULLs)."""
    values = _item_row(item)
    if expect is None:
        cursor = conn.execute(_INSERT_ITEM, values)
    else:
        columns = [c.strip() for c in _ITEM_COLUMNS.split(",")[1:]]
        where = " WHERE item_id = ? AND status = ?"
        condition: tuple[Any, ...] = (item.item_id, expect.value)
        if same_token:
            where += " AND task_token IS ?"
            condition += (item.task_token,)
        if first:
            where += " AND first_approval IS NULL"
        else:  # never replace a first approval written since the item was read
            where += " AND first_approval IS ?"
            condition += (_approval_text(item.first_approval),)
        cursor = conn.execute(
            "UPDATE recon_items SET " + ", ".join(f"{c} = ?" for c in columns) + where,
            (*values[1:], *condition),
        )
    return cursor.rowcount == 1


def _item_row(item: ReconItem) -> tuple[Any, ...]:
    """Every column of ``recon_items``, in ``_ITEM_COLUMNS`` order."""
    return (
        item.item_id,
        item.record_key,
        item.tenant_id,
        item.case_id,
        item.reason,
        item.step,
        json_text(item.evidence),
        item.status.value,
        item.outcome.value if item.outcome else None,
        item.resolved_by,
        item.note,
        item.task_token,
        time_text(item.created_at),
        time_text(item.updated_at),
        opt_time_text(item.resolved_at),
        int(item.dual_control),
        _approval_text(item.first_approval),
    )


def _row(record: Record) -> tuple[Any, ...]:
    return (record.key, *_update_values(record))


def _update_values(record: Record) -> tuple[Any, ...]:
    """Every column but the key, in ``_COLUMNS`` order."""
    lease = record.lease_expires_at
    return (
        record.tenant_id,
        record.case_id,
        record.revision,
        record.operation,
        str(record.effect),  # StrEnum: str() is the value, without enum's property
        record.digest,
        str(record.status),
        record.owner,
        None if lease is None else time_text(lease),
        record.attempts,
        json_text(record.result),
        json_text(record.error),
        record.reference,
        record.cost,
        record.debited,
        time_text(record.created_at),
        time_text(record.updated_at),
        time_text(record.expires_at),
        json_text(record.terms),
    )


def _update_args(record: Record, expect: Expect) -> tuple[Any, ...]:
    values = _update_values(record)
    return (*(values[i] for i in _CHANGING), record.key, str(expect.status), expect.owner)


def _record(row: Sequence[Any]) -> Record:
    return Record(
        key=row[0],
        tenant_id=row[1],
        case_id=row[2],
        revision=int(row[3]),
        operation=row[4],
        effect=EffectClass.parse(row[5]),
        digest=row[6],
        status=Status(row[7]),
        owner=row[8],
        lease_expires_at=opt_parse_time(row[9]),
        attempts=int(row[10]),
        result=parse_json(row[11]),
        error=parse_json(row[12]),
        reference=row[13],
        cost=None if row[14] is None else int(row[14]),
        debited=int(row[15]),
        created_at=parse_time(row[16]),
        updated_at=parse_time(row[17]),
        expires_at=parse_time(row[18]),
        terms=parse_json(row[19]),
    )


def _item(row: Sequence[Any]) -> ReconItem:
    return ReconItem(
        item_id=row[0],
        record_key=row[1],
        tenant_id=row[2],
        case_id=row[3],
        reason=row[4],
        step=row[5],
        evidence=parse_json(row[6]) or {},
        status=ReconStatus(row[7]),
        outcome=ReconOutcome(row[8]) if row[8] else None,
        resolved_by=row[9],
        note=row[10],
        task_token=row[11],
        created_at=parse_time(row[12]),
        updated_at=parse_time(row[13]),
        resolved_at=opt_parse_time(row[14]),
        dual_control=bool(row[15]),
        first_approval=_approval(row[16]),
    )


def _approval_text(approval: Signoff | None) -> str | None:
    return None if approval is None else json_text(approval.to_dict())


def _approval(text: str | None) -> Signoff | None:
    data = parse_json(text)
    return None if data is None else Signoff.from_dict(data)


def _put_audit(conn: sqlite3.Connection, audit: ResolutionAudit) -> bool:
    """Insert the audit record if the item has none (never overwritten)."""
    cursor = conn.execute(
        "INSERT INTO audit (item_id, tenant_id, recorded_at, record) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (item_id) DO NOTHING",
        (audit.item_id, audit.tenant_id, time_text(audit.at), json_text(audit.to_dict())),
    )
    return cursor.rowcount == 1
