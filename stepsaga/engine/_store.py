"""SQLite persistence of state machines, executions, history, delays and task tokens.

One file (``StateHome.executions_path``), WAL journal. Durability is a setting
(``synchronous``; ``$STEPSAGA_ENGINE_SYNCHRONOUS`` through :class:`LocalEngine`): the default
``NORMAL`` makes a commit survive the process dying (what "interrupted, nothing lost"
needs) but an OS crash or power loss can drop the last commits; ``FULL`` syncs the WAL on
every commit and survives power loss too, at one fsync per transaction. Writers use
``BEGIN IMMEDIATE`` so two processes never interleave a read-check-write on the same
execution.

Schema (timestamps are UNIX seconds, JSON columns are text):

* ``definitions(digest PK, text)`` — content-addressed ASL, so an execution keeps the
  definition it started with when the state machine is updated;
* ``state_machines(arn PK, name UNIQUE, digest, created, updated)``;
* ``executions(arn PK, …)`` — indexed by start time, by state machine, by status, and by
  the input's ``case_id`` and ``tenant_id`` too (``stepsaga status CASE_ID`` and
  ``stepsaga list --tenant T`` without reading every row) — the ``DescribeExecution``
  fields, the *cursor* (state the execution is in or failed in, that state's input,
  entered time/event, retry counters), the mock test case and its invocation counters,
  the owner (engine id, pid, host, process start, heartbeat) while a process drives it,
  and the top level's workflow variables (``Assign``);
* ``history(execution_id, id, type, previous_id, timestamp, details)`` — the events, keyed
  by a small integer per execution (``execution_ids(id, arn)``) rather than the ARN repeated
  on every row, each ``details`` deflated against the event before it (``event_codec.py``):
  about 8 KB of store per three-step execution instead of 27. A store of schema 1 (an
  ``events`` table keyed by ARN, plain details) is converted when first opened;
* ``delays(execution_arn, event_id, kind, state, attempt, error, seconds, slept, timestamp)``
  — retry and Wait delays chosen;
* ``task_tokens(token PK, execution_arn, state, status, output/error/cause, deadlines…)``;
* ``frames(execution_arn, path, status, output, cursor_state, cursor_input, token,
  variables)`` — one
  row per ``Parallel`` branch or ``Map`` iteration of the state's latest run: a succeeded one
  keeps its output, any other its cursor (and the callback token it waits for), so a redrive
  re-runs only what did not succeed and a callback continues the branch that waits for it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from stepsaga._util.sqlite_share import SharedConnection, lending
from stepsaga._util.sqlite_wal import enable_wal
from stepsaga.engine import _event_codec as event_codec
from stepsaga.errors import InvalidInputError, StoreUnavailableError

SCHEMA_VERSION = "4"
#: Versions this code reads; older ones are converted when opened (``_upgrade``): schema 3
#: gains the variables columns, schema 2 the listing's indexes (start time, tenant) too,
#: schema 1 its history table as well.
_KNOWN_VERSIONS = ("1", "2", "3", "4")

#: ``PRAGMA synchronous`` values the store accepts (``OFF`` would not survive a crash).
SYNCHRONOUS_MODES = ("NORMAL", "FULL", "EXTRA")
DEFAULT_SYNCHRONOUS = "NORMAL"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS definitions (digest TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS state_machines (
    arn TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    digest TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS executions (
    arn TEXT PRIMARY KEY,
    state_machine_arn TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    status TEXT NOT NULL,
    input TEXT NOT NULL,
    output TEXT,
    error TEXT,
    cause TEXT,
    start_date REAL NOT NULL,
    stop_date REAL,
    redrive_count INTEGER NOT NULL DEFAULT 0,
    redrive_date REAL,
    test_case TEXT,
    mock_counts TEXT,
    cursor_state TEXT,
    cursor_input TEXT,
    cursor_entered REAL,
    cursor_event INTEGER,
    retry_counts TEXT,
    next_event_id INTEGER NOT NULL,
    owner TEXT,
    owner_pid INTEGER,
    owner_host TEXT,
    owner_started TEXT,
    heartbeat REAL,
    abort_requested INTEGER NOT NULL DEFAULT 0,
    abort_error TEXT,
    abort_cause TEXT,
    variables TEXT
);
CREATE INDEX IF NOT EXISTS executions_by_machine ON executions (state_machine_arn, start_date);
CREATE INDEX IF NOT EXISTS executions_by_status ON executions (status, start_date);
CREATE INDEX IF NOT EXISTS executions_by_case ON executions (json_extract(input, '$.case_id'));
CREATE INDEX IF NOT EXISTS executions_by_start ON executions (start_date);
CREATE INDEX IF NOT EXISTS executions_by_tenant
    ON executions (json_extract(input, '$.tenant_id'), start_date);
CREATE TABLE IF NOT EXISTS execution_ids (id INTEGER PRIMARY KEY, arn TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS history (
    execution_id INTEGER NOT NULL,
    id INTEGER NOT NULL,
    type TEXT NOT NULL,
    previous_id INTEGER NOT NULL,
    timestamp REAL NOT NULL,
    details BLOB,
    PRIMARY KEY (execution_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS delays (
    execution_arn TEXT NOT NULL,
    event_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    error TEXT,
    seconds REAL NOT NULL,
    slept REAL NOT NULL,
    timestamp REAL NOT NULL,
    PRIMARY KEY (execution_arn, event_id, kind)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS task_tokens (
    token TEXT PRIMARY KEY,
    execution_arn TEXT NOT NULL,
    state TEXT NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    error TEXT,
    cause TEXT,
    created REAL NOT NULL,
    deadline REAL,
    heartbeat_seconds INTEGER,
    heartbeat_deadline REAL,
    closed REAL
);
CREATE INDEX IF NOT EXISTS task_tokens_by_execution ON task_tokens (execution_arn, status);
CREATE TABLE IF NOT EXISTS frames (
    execution_arn TEXT NOT NULL,
    path TEXT NOT NULL,
    status TEXT NOT NULL,
    output TEXT,
    cursor_state TEXT,
    cursor_input TEXT,
    token TEXT,
    variables TEXT,
    PRIMARY KEY (execution_arn, path)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class ExecutionRow:
    arn: str
    state_machine_arn: str
    name: str
    digest: str
    status: str
    input: str
    output: str | None
    error: str | None
    cause: str | None
    start_date: float
    stop_date: float | None
    redrive_count: int
    redrive_date: float | None
    test_case: str | None
    mock_counts: str | None
    cursor_state: str | None
    cursor_input: str | None
    cursor_entered: float | None
    cursor_event: int | None
    retry_counts: str | None
    next_event_id: int
    owner: str | None
    owner_pid: int | None
    owner_host: str | None
    owner_started: str | None
    heartbeat: float | None
    abort_requested: int
    abort_error: str | None
    abort_cause: str | None
    variables: str | None = None  # the top level's workflow variables (Assign), JSON


_EXECUTION_COLUMNS = [f.name for f in fields(ExecutionRow)]


@dataclass(frozen=True)
class TokenRow:
    token: str
    execution_arn: str
    state: str
    status: str
    output: str | None
    error: str | None
    cause: str | None
    created: float
    deadline: float | None
    heartbeat_seconds: int | None
    heartbeat_deadline: float | None
    closed: float | None


@dataclass(frozen=True)
class EventRow:
    id: int
    type: str
    previous_id: int
    timestamp: float
    details: str | None


@dataclass(frozen=True)
class FrameRow:
    path: str
    status: str
    output: str | None
    cursor_state: str | None
    cursor_input: str | None
    token: str | None = None
    variables: str | None = None  # the branch's or iteration's own variables, JSON


_FRAME_COLUMNS = "path, status, output, cursor_state, cursor_input, token, variables"
#: Columns schema 4 added (workflow variables): added to older stores when they open.
_ADDED_COLUMNS = (("executions", "variables", "TEXT"), ("frames", "variables", "TEXT"))


@dataclass(frozen=True)
class ExecutionPageQuery:
    """One page of executions: filters (``None``: any; ``statuses`` empty: none), the
    keyset ``after`` = ``(start_date, arn)`` of the previous page's last row, and a size."""

    limit: int
    state_machine_arn: str | None = None
    statuses: frozenset[str] | None = None
    tenant: str | None = None
    since: float | None = None
    after: tuple[float, str] | None = None


def _page_sql(page: ExecutionPageQuery) -> tuple[str, list[Any]]:
    where, args = _page_where(page)
    sql = (
        f"SELECT {', '.join(_EXECUTION_COLUMNS)} FROM executions{where} "
        "ORDER BY start_date DESC, arn LIMIT ?"
    )
    return sql, [*args, int(page.limit)]


def _page_where(page: ExecutionPageQuery) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if page.state_machine_arn is not None:
        clauses.append("state_machine_arn = ?")
        args.append(page.state_machine_arn)
    if page.statuses is not None:
        wanted = sorted(page.statuses)
        clauses.append(f"status IN ({', '.join('?' for _ in wanted)})")
        args.extend(wanted)
    if page.tenant is not None:
        clauses.append("json_extract(input, '$.tenant_id') = ?")  # the index's expression
        args.append(page.tenant)
    if page.since is not None:
        clauses.append("start_date >= ?")
        args.append(page.since)
    if page.after is not None:
        clauses.append("start_date <= ? AND (start_date < ? OR arn > ?)")
        args.extend([page.after[0], page.after[0], page.after[1]])
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return where, args


class LostOwnershipError(RuntimeError):
    """A conditional write found that this engine no longer drives the execution."""


class Store:
    """Thin data access; the rules live in the runner and the engine."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_seconds: float = 30.0,
        synchronous: str = DEFAULT_SYNCHRONOUS,
    ) -> None:
        self.synchronous = check_synchronous(synchronous)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(
            path, isolation_level=None, timeout=busy_timeout_seconds, check_same_thread=False
        )
        self._depth = 0
        self._busy_timeout = busy_timeout_seconds
        self._shared = SharedConnection(self._db, str(path), self.synchronous)
        #: Per execution: its last event id and the plain bytes of its last details, the
        #: dictionary the next event is deflated against (checked against the table first).
        self._tails: dict[str, tuple[int, bytes]] = {}
        self._ids: dict[str, int] = {}
        try:
            enable_wal(self._db, timeout_seconds=busy_timeout_seconds)
            self._db.execute(f"PRAGMA synchronous={self.synchronous}")
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_seconds * 1000)}")
            if self._version() != SCHEMA_VERSION:
                with self.transaction():
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._upgrade()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise _unusable(path, exc, busy_timeout_seconds) from None

    def close(self) -> None:
        self._db.close()

    def _version(self) -> str | None:
        """The schema version stamped in the store; ``None`` for a new file."""
        try:
            found = self._db.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
        except sqlite3.OperationalError:  # no meta table yet
            return None
        return None if found is None else str(found[0])

    def _upgrade(self) -> None:
        """Inside the opening transaction: stamp a new store, convert a schema-1 one, refuse
        a newer one (before writing anything)."""
        version = self._version() or SCHEMA_VERSION
        if version not in _KNOWN_VERSIONS:
            raise InvalidInputError(
                f"executions store {self.path}: schema {version} is newer than this stepsaga "
                f"reads ({SCHEMA_VERSION}); upgrade stepsaga",
                field="home",
            )
        legacy = self._db.execute(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'events'"
        ).fetchone()
        if legacy is not None:  # schema 1: the same events, keyed by ARN, details plain
            self._db.execute(
                "INSERT OR IGNORE INTO execution_ids (arn) "
                "SELECT DISTINCT execution_arn FROM events ORDER BY execution_arn"
            )
            self._db.execute(
                "INSERT INTO history SELECT i.id, e.id, e.type, e.previous_id, e.timestamp, "
                "e.details FROM events e JOIN execution_ids i ON i.arn = e.execution_arn"
            )
            self._db.execute("DROP TABLE events")
        for table, column, kind in _ADDED_COLUMNS:  # schemas 1 to 3: no variables yet
            present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        self._db.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; nested uses join the outer transaction."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        if self._db.in_transaction:  # a ledger's outcome waits in it (one-file home)
            with self._joined():
                yield
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:  # locked past the busy timeout
            raise _unusable(self.path, exc, self._busy_timeout) from None
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._forget()
            self._shared.rollback()
            raise
        self._depth = 0
        self._shared.commit()

    @contextmanager
    def _joined(self) -> Iterator[None]:
        """Join the transaction a ledger's outcome opened: one commit makes both durable.
        If the engine's part fails (e.g. another process took the execution over), only
        that part is rolled back: the outcome is true whatever the engine does with it."""
        self._depth = 1
        self._db.execute("SAVEPOINT engine")
        try:
            yield
        except BaseException:
            self._depth = 0
            self._forget()
            self._db.execute("ROLLBACK TO engine")
            self._db.execute("RELEASE engine")
            self._shared.commit()
            raise
        self._depth = 0
        self._db.execute("RELEASE engine")
        self._shared.commit()

    def _forget(self) -> None:
        """After a rollback: the cached tails and ids may name rows it just removed."""
        self._tails.clear()
        self._ids.clear()

    def lend(self) -> AbstractContextManager[None]:
        """While the block runs, a ledger kept in this same file writes through this
        store's connection (``stepsaga._util.sqlite_share``): its claims commit at once,
        its outcomes wait for this store's next commit."""
        return lending(self._shared)

    @property
    def shared(self) -> SharedConnection:
        return self._shared

    # --- definitions and state machines --------------------------------------------

    def put_definition(self, digest: str, text: str) -> None:
        self._db.execute("INSERT OR IGNORE INTO definitions VALUES (?, ?)", (digest, text))

    def get_definition(self, digest: str) -> str:
        row = self._db.execute(
            "SELECT text FROM definitions WHERE digest = ?", (digest,)
        ).fetchone()
        if row is None:
            raise KeyError(digest)
        return str(row[0])

    def get_state_machine(self, arn: str) -> tuple[str, str, str, float, float] | None:
        row = self._db.execute(
            "SELECT arn, name, digest, created, updated FROM state_machines WHERE arn = ?", (arn,)
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3], row[4])

    def list_state_machines(self) -> list[tuple[str, str, str, float, float]]:
        rows = self._db.execute(
            "SELECT arn, name, digest, created, updated FROM state_machines ORDER BY name"
        ).fetchall()
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def upsert_state_machine(self, arn: str, name: str, digest: str, now: float) -> None:
        self._db.execute(
            "INSERT INTO state_machines VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (arn) DO UPDATE SET digest = excluded.digest, updated = excluded.updated",
            (arn, name, digest, now, now),
        )

    # --- executions ------------------------------------------------------------------

    def insert_execution(self, values: Mapping[str, Any]) -> None:
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self._db.execute(
            f"INSERT INTO executions ({columns}) VALUES ({marks})", tuple(values.values())
        )

    def get_execution(self, arn: str) -> ExecutionRow | None:
        row = self._db.execute(
            f"SELECT {', '.join(_EXECUTION_COLUMNS)} FROM executions WHERE arn = ?", (arn,)
        ).fetchone()
        return None if row is None else ExecutionRow(*row)

    def list_executions(
        self, state_machine_arn: str | None, status: str | None, limit: int | None
    ) -> list[ExecutionRow]:
        where, args = _where(state_machine_arn=state_machine_arn, status=status)
        sql = f"SELECT {', '.join(_EXECUTION_COLUMNS)} FROM executions{where}"
        sql += " ORDER BY start_date DESC, arn"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [ExecutionRow(*row) for row in self._db.execute(sql, args).fetchall()]

    def page_executions(self, page: ExecutionPageQuery) -> list[ExecutionRow]:
        """Newest first (``start_date`` descending, then ``arn``), at most ``page.limit``
        rows after the keyset ``page.after``: one indexed query, never a read of every row."""
        if page.statuses is not None and not page.statuses:
            return []
        sql, args = _page_sql(page)
        return [ExecutionRow(*row) for row in self._db.execute(sql, args).fetchall()]

    def count_executions(self, page: ExecutionPageQuery) -> int:
        """How many rows :meth:`page_executions` would page through from the first page
        (``page.after`` and ``page.limit`` ignored): one ``COUNT`` over the same index."""
        if page.statuses is not None and not page.statuses:
            return 0
        where, args = _page_where(replace(page, after=None))
        row = self._db.execute(f"SELECT COUNT(*) FROM executions{where}", args).fetchone()
        return int(row[0])

    def find_by_value(self, value: str, *, within: int, limit: int) -> list[ExecutionRow]:
        """Of the newest ``within`` executions (the start-time index), those whose input
        has ``value`` as one of its top-level strings (case-insensitive), newest first, at
        most ``limit``: a bounded scan, whatever the store's size."""
        columns = ", ".join(_EXECUTION_COLUMNS)
        sql = (
            f"SELECT {columns} FROM (SELECT {columns} FROM executions "
            "ORDER BY start_date DESC LIMIT ?) AS newest WHERE EXISTS ("
            "SELECT 1 FROM json_each(newest.input) AS field "
            "WHERE field.type = 'text' AND field.value = ? COLLATE NOCASE) "
            "ORDER BY start_date DESC, arn LIMIT ?"
        )
        rows = self._db.execute(sql, (int(within), value, int(limit))).fetchall()
        return [ExecutionRow(*row) for row in rows]

    def page_plan(self, page: ExecutionPageQuery) -> list[str]:
        """``EXPLAIN QUERY PLAN`` of :meth:`page_executions` (tests check it uses an index)."""
        sql, args = _page_sql(page)
        return [str(row[3]) for row in self._db.execute(f"EXPLAIN QUERY PLAN {sql}", args)]

    def executions_of_case(self, case_id: str) -> list[str]:
        """ARNs of the executions whose input's ``case_id`` is ``case_id`` (the index's
        expression, written the same way so SQLite uses it)."""
        rows = self._db.execute(
            "SELECT arn FROM executions WHERE json_extract(input, '$.case_id') = ? ORDER BY arn",
            (case_id,),
        ).fetchall()
        return [str(row[0]) for row in rows]

    def update_execution(
        self, arn: str, values: Mapping[str, Any], *, owner: str | None = None
    ) -> None:
        """Update columns; with ``owner``, only while that engine still owns the execution."""
        assignments = ", ".join(f"{column} = ?" for column in values)
        sql = f"UPDATE executions SET {assignments} WHERE arn = ?"
        args: list[Any] = [*values.values(), arn]
        if owner is not None:
            sql += " AND owner = ?"
            args.append(owner)
        if self._db.execute(sql, args).rowcount != 1:
            raise LostOwnershipError(arn)

    def claim(
        self, arn: str, owner_values: Mapping[str, Any], *, expected_owner: str | None
    ) -> bool:
        """Become the owner if the current owner is ``expected_owner`` (``None``: nobody)."""
        assignments = ", ".join(f"{column} = ?" for column in owner_values)
        condition = "owner IS NULL" if expected_owner is None else "owner = ?"
        args: list[Any] = [*owner_values.values(), arn]
        if expected_owner is not None:
            args.append(expected_owner)
        sql = f"UPDATE executions SET {assignments} WHERE arn = ? AND {condition}"
        return bool(self._db.execute(sql, args).rowcount == 1)

    def abort_request(self, arn: str) -> tuple[str | None, str | None] | None:
        """``(error, cause)`` of a pending ``stop_execution`` request, if any."""
        row = self._db.execute(
            "SELECT abort_requested, abort_error, abort_cause FROM executions WHERE arn = ?", (arn,)
        ).fetchone()
        if row is None or not row[0]:
            return None
        return row[1], row[2]

    def running_with_owner(self) -> list[ExecutionRow]:
        rows = self._db.execute(
            f"SELECT {', '.join(_EXECUTION_COLUMNS)} FROM executions "
            "WHERE status = 'RUNNING' AND owner IS NOT NULL"
        ).fetchall()
        return [ExecutionRow(*row) for row in rows]

    # --- events and delays -------------------------------------------------------------

    def insert_events(
        self, arn: str, events: Sequence[tuple[int, str, int, float, str | None]]
    ) -> None:
        if not events:
            return
        execution = self._execution_id(arn, create=True)
        assert execution is not None
        last_id, previous = self._tail(arn, execution)
        rows = []
        for event_id, kind, previous_id, timestamp, details in events:
            stored: bytes | None = None
            if details is not None:
                stored, previous = event_codec.encode(details, previous)
            rows.append((execution, event_id, kind, previous_id, timestamp, stored))
            last_id = event_id
        self._db.executemany("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?)", rows)
        self._tails[arn] = (last_id, previous)

    def events(self, arn: str, *, reverse: bool = False) -> list[EventRow]:
        execution = self._execution_id(arn, create=False)
        if execution is None:
            return []
        rows = self._db.execute(
            "SELECT id, type, previous_id, timestamp, details FROM history "
            "WHERE execution_id = ? ORDER BY id",
            (execution,),
        ).fetchall()
        texts = event_codec.decode(row[4] for row in rows)
        events = [
            EventRow(row[0], row[1], row[2], row[3], text)
            for row, text in zip(rows, texts, strict=True)
        ]
        return events[::-1] if reverse else events

    def _execution_id(self, arn: str, *, create: bool) -> int | None:
        """The small integer ``arn``'s events are keyed by (made on its first event)."""
        if arn in self._ids:
            return self._ids[arn]
        if create:
            self._db.execute("INSERT OR IGNORE INTO execution_ids (arn) VALUES (?)", (arn,))
        row = self._db.execute("SELECT id FROM execution_ids WHERE arn = ?", (arn,)).fetchone()
        if row is None:
            return None
        self._ids[arn] = int(row[0])
        return self._ids[arn]

    def _tail(self, arn: str, execution: int) -> tuple[int, bytes]:
        """The last event id of ``arn`` and its last details' plain bytes: from memory when
        the table still ends there, else decoded from the table."""
        (last_id,) = self._db.execute(
            "SELECT COALESCE(MAX(id), 0) FROM history WHERE execution_id = ?", (execution,)
        ).fetchone()
        cached = self._tails.get(arn)
        if cached is not None and cached[0] == last_id:
            return cached
        if last_id == 0:  # a new execution's first events: nothing to read back
            return 0, b""
        previous = b""
        for event in self.events(arn):
            if event.details is not None:
                previous = event.details.encode()
        return last_id, previous

    def insert_delays(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO delays VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", list(rows)
        )

    def delays(self, arn: str) -> list[tuple[Any, ...]]:
        return self._db.execute(
            "SELECT execution_arn, event_id, kind, state, attempt, error, seconds, slept, "
            "timestamp FROM delays WHERE execution_arn = ? ORDER BY event_id",
            (arn,),
        ).fetchall()

    # --- Parallel branches and Map iterations -------------------------------------------

    def put_frames(self, arn: str, rows: Iterable[FrameRow]) -> None:
        self._db.executemany(
            f"INSERT OR REPLACE INTO frames (execution_arn, {_FRAME_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    arn,
                    r.path,
                    r.status,
                    r.output,
                    r.cursor_state,
                    r.cursor_input,
                    r.token,
                    r.variables,
                )
                for r in rows
            ],
        )

    def frames(self, arn: str, prefix: str) -> dict[str, FrameRow]:
        """Rows whose path starts with ``prefix`` (a state's branches and their own)."""
        rows = self._db.execute(
            f"SELECT {_FRAME_COLUMNS} FROM frames "
            "WHERE execution_arn = ? AND substr(path, 1, ?) = ?",
            (arn, len(prefix), prefix),
        ).fetchall()
        return {row[0]: FrameRow(*row) for row in rows}

    def frame_for_token(self, arn: str, token: str) -> FrameRow | None:
        """The branch that waits (or waited) for ``token``; ``None`` for a top-level task."""
        row = self._db.execute(
            f"SELECT {_FRAME_COLUMNS} FROM frames WHERE execution_arn = ? AND token = ?",
            (arn, token),
        ).fetchone()
        return None if row is None else FrameRow(*row)

    def answered_waiting_token(self, arn: str) -> TokenRow | None:
        """A token answered (or timed out) whose branch still waits for it, oldest first."""
        columns = ", ".join(f"t.{f.name}" for f in fields(TokenRow))
        row = self._db.execute(
            f"SELECT {columns} FROM frames f JOIN task_tokens t ON t.token = f.token "
            "WHERE f.execution_arn = ? AND f.status = 'WAITING' AND t.status != 'WAITING' "
            "ORDER BY t.closed LIMIT 1",
            (arn,),
        ).fetchone()
        return None if row is None else TokenRow(*row)

    def delete_frames(self, arn: str, prefix: str) -> None:
        self._db.execute(
            "DELETE FROM frames WHERE execution_arn = ? AND substr(path, 1, ?) = ?",
            (arn, len(prefix), prefix),
        )

    # --- task tokens -----------------------------------------------------------------

    def insert_token(self, values: Mapping[str, Any]) -> None:
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self._db.execute(
            f"INSERT INTO task_tokens ({columns}) VALUES ({marks})", tuple(values.values())
        )

    def get_token(self, token: str) -> TokenRow | None:
        columns = ", ".join(f.name for f in fields(TokenRow))
        row = self._db.execute(
            f"SELECT {columns} FROM task_tokens WHERE token = ?",
            (token,),
        ).fetchone()
        return None if row is None else TokenRow(*row)

    def update_token(self, token: str, values: Mapping[str, Any], *, expected_status: str) -> bool:
        assignments = ", ".join(f"{column} = ?" for column in values)
        cursor = self._db.execute(
            f"UPDATE task_tokens SET {assignments} WHERE token = ? AND status = ?",
            (*values.values(), token, expected_status),
        )
        return bool(cursor.rowcount == 1)

    def close_tokens(self, arn: str, status: str, now: float) -> None:
        """Close every token of ``arn`` still waiting (its execution ended)."""
        self._db.execute(
            "UPDATE task_tokens SET status = ?, closed = ? "
            "WHERE execution_arn = ? AND status = 'WAITING'",
            (status, now, arn),
        )

    def tokens(
        self, *, execution_arn: str | None = None, status: str | None = None
    ) -> list[TokenRow]:
        where, args = _where(execution_arn=execution_arn, status=status)
        sql = f"SELECT {', '.join(f.name for f in fields(TokenRow))} FROM task_tokens{where}"
        sql += " ORDER BY created"
        return [TokenRow(*row) for row in self._db.execute(sql, args).fetchall()]


def check_synchronous(value: str) -> str:
    """``value`` upper-cased if it is one of :data:`SYNCHRONOUS_MODES` (the only text that
    reaches the ``PRAGMA``), else ``InvalidInputError`` naming them."""
    mode = value.strip().upper() if isinstance(value, str) else ""
    if mode not in SYNCHRONOUS_MODES:
        raise InvalidInputError(
            f"engine synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {value!r}",
            field="synchronous",
        )
    return mode


def _unusable(path: Path, exc: sqlite3.DatabaseError, waited: float) -> Exception:
    """A file that cannot be opened, as one line naming it (the CLI's exit 1): locked by
    another process, or not an executions database at all (corrupt, overwritten)."""
    text = " ".join(str(exc).split())
    if "locked" in text.lower() or "busy" in text.lower():
        return StoreUnavailableError(
            f"executions store {path} is locked by another process (waited {waited:g} s)",
            path=str(path),
        )
    return StoreUnavailableError(
        f"{path} is not a usable executions database: {text}", path=str(path)
    )


def _where(**filters: str | None) -> tuple[str, list[str]]:
    """`` WHERE a = ? AND b = ?`` for the filters given (None means "any"), and their
    values; column names come from the code, never from input."""
    given = {column: value for column, value in filters.items() if value is not None}
    if not given:
        return "", []
    return " WHERE " + " AND ".join(f"{column} = ?" for column in given), list(given.values())
