"""``services.sqlite3``: the simulated services' state, shared by threads and processes.

One connection per thread, kept until ``close`` (a connection closed after every operation
checkpointed the WAL each time: 18 of the 31 fsyncs of a ``stepsaga start``), opened anew
in a forked child and after the store failed; WAL so readers never wait for writers,
``BEGIN IMMEDIATE`` so two writers never both read-then-write the same row, and a busy
timeout so contention waits instead of failing. Every effect and its row in ``effects``
are written in one transaction: the table is the outside world's proof of "exactly once".
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

from stepsaga.errors import TransientError

DEFAULT_BUSY_TIMEOUT_SECONDS = 15.0

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS stock (
        tenant_id TEXT NOT NULL,
        sku TEXT NOT NULL,
        warehouse TEXT NOT NULL,
        available INTEGER NOT NULL CHECK (available >= 0),
        PRIMARY KEY (tenant_id, sku, warehouse))""",
    """CREATE TABLE IF NOT EXISTS reservations (
        tenant_id TEXT NOT NULL,
        reservation_id TEXT NOT NULL,
        sku TEXT NOT NULL,
        warehouse TEXT NOT NULL,
        quantity INTEGER NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        released_at TEXT,
        PRIMARY KEY (tenant_id, reservation_id))""",
    """CREATE TABLE IF NOT EXISTS refunds (
        refund_id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        payment_id TEXT NOT NULL,
        amount_minor INTEGER NOT NULL,
        currency TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS refunds_by_key
        ON refunds (tenant_id, idempotency_key, created_at)""",
    """CREATE TABLE IF NOT EXISTS shipments (
        shipment_id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        reference TEXT NOT NULL,
        items TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS shipments_by_reference
        ON shipments (tenant_id, reference, created_at)""",
    """CREATE TABLE IF NOT EXISTS effects (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        service TEXT NOT NULL,
        operation TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        case_id TEXT NOT NULL,
        reference TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        action_key TEXT NOT NULL,
        call_number INTEGER NOT NULL,
        at TEXT NOT NULL,
        payment_id TEXT,
        amount_minor INTEGER,
        currency TEXT,
        sku TEXT,
        warehouse TEXT,
        quantity INTEGER)""",
    "CREATE INDEX IF NOT EXISTS effects_by_case ON effects (tenant_id, case_id)",
    """CREATE TABLE IF NOT EXISTS call_counts (
        tenant_id TEXT NOT NULL,
        case_id TEXT NOT NULL,
        operation TEXT NOT NULL,
        calls INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, case_id, operation))""",
    """CREATE TABLE IF NOT EXISTS fault_fires (
        tenant_id TEXT NOT NULL,
        case_id TEXT NOT NULL,
        rule TEXT NOT NULL,
        fired INTEGER NOT NULL,
        PRIMARY KEY (tenant_id, case_id, rule))""",
    """CREATE TABLE IF NOT EXISTS case_faults (
        tenant_id TEXT NOT NULL,
        case_id TEXT NOT NULL,
        faults TEXT NOT NULL,
        attached_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, case_id))""",
)

#: Tables ``reset`` empties (everything: the simulated world starts over).
TABLES = (
    "stock",
    "reservations",
    "refunds",
    "shipments",
    "effects",
    "call_counts",
    "fault_fires",
    "case_faults",
)

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def to_text(moment: datetime) -> str:
    """Fixed-width UTC text, so SQL string order is time order."""
    return moment.astimezone(UTC).strftime(_TIME_FORMAT)


def from_text(text: str) -> datetime:
    return datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=UTC)


class ServicesDb:
    def __init__(
        self, path: Path, *, busy_timeout_seconds: float = DEFAULT_BUSY_TIMEOUT_SECONDS
    ) -> None:
        self.path = path
        self._busy_timeout = busy_timeout_seconds
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[sqlite3.Connection] = []
        with self.write() as conn:
            for statement in SCHEMA:
                conn.execute(statement)

    def close(self) -> None:
        """Close every thread's connection (this process's); the next call reopens."""
        with self._lock:
            opened, self._open = self._open, []
        for conn in opened:
            with suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        held: tuple[sqlite3.Connection, int] | None = getattr(self._local, "held", None)
        if held is not None and held[1] == os.getpid():
            return held[0]
        conn = sqlite3.connect(
            self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.row_factory = sqlite3.Row
            _enable_wal(conn, timeout_seconds=self._busy_timeout)
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL survives a killed process
        except BaseException:
            conn.close()
            raise
        self._local.held = (conn, os.getpid())
        with self._lock:
            self._open.append(conn)
        return conn

    def _drop(self) -> None:
        """Forget this thread's connection after a failure (the file may be replaced)."""
        held: tuple[sqlite3.Connection, int] | None = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None and held[1] == os.getpid():
            with self._lock:
                if held[0] in self._open:
                    self._open.remove(held[0])
            with suppress(sqlite3.Error):
                held[0].close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed on exit, rolled back on any error
        (including ``BaseException``: a simulated crash inside never half-applies)."""
        with self._failing_drops(), _unavailable_as_transient():
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self._failing_drops(), _unavailable_as_transient():
            conn = self._conn()
            try:
                yield conn
            finally:
                if conn.in_transaction:  # a read never leaves a transaction open
                    conn.rollback()

    @contextmanager
    def _failing_drops(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error:
            self._drop()
            raise
        except TransientError as exc:
            if isinstance(exc.__cause__, sqlite3.Error):  # the store failed, not a fault
                self._drop()
            raise


@contextmanager
def _unavailable_as_transient() -> Iterator[None]:
    """A locked, unreadable or corrupt store: the simulated service is unavailable. Nothing
    was applied (SQLite transactions are atomic), so the caller may retry."""
    try:
        yield
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
        raise  # our bug, not an outage
    except sqlite3.DatabaseError as exc:
        raise TransientError(
            f"simulated services store unavailable: {exc}", store="services.sqlite3"
        ) from exc


#: Page size and checkpoint of the services' file: those of stepsaga's own stores, so the
#: bench compares like with like (docs/explanation/performance.md).
_PAGE_SIZE = 1024
_CHECKPOINT_BYTES = 1000 * 4096


def _enable_wal(conn: sqlite3.Connection, *, timeout_seconds: float) -> None:
    """Switch ``conn``'s file to WAL, retrying a locked file until ``timeout_seconds``
    (``journal_mode=WAL`` needs an exclusive lock the busy timeout does not wait for)."""
    conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")  # a no-op once the file has pages
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            (page_size,) = conn.execute("PRAGMA page_size").fetchone()
            conn.execute(f"PRAGMA wal_autocheckpoint = {_CHECKPOINT_BYTES // page_size}")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(0.005)
