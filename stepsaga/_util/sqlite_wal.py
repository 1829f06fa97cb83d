"""Putting a SQLite file in WAL mode, also while other processes open it at the same time.

``PRAGMA journal_mode=WAL`` on a file not yet in WAL mode needs an exclusive lock, and
SQLite does not wait for that lock the way it waits for others (the busy timeout does not
apply): a process opening a fresh home while another one is creating it failed at once with
"database is locked". Every store (ledger, executions, services) goes through here and
retries for as long as its own busy timeout.

A file created here gets ``PAGE_SIZE`` pages (``PRAGMA page_size`` only applies before the
first write, so an existing file keeps its own). WAL frames are whole pages and every
commit writes each page it touched, so the page size is most of a commit's bytes: a step's
one-row commits write about 2.5 times less WAL with 1 KiB pages than with SQLite's 4 KiB
default (per three-step execution: engine 113 → 52 KiB, ledger 144 → 55 KiB), for the
same store size (``docs/explanation/performance.md``). The automatic checkpoint is set in bytes, not
pages (``CHECKPOINT_BYTES``: SQLite's default of 1,000 pages of 4 KiB), so smaller pages do
not checkpoint (and sync the database file) more often.
"""

from __future__ import annotations

import sqlite3
import time

_PAUSE_SECONDS = 0.005
#: Bytes per page of a new file: see the module docstring.
PAGE_SIZE = 1024
#: WAL bytes after which a commit checkpoints (``PRAGMA wal_autocheckpoint``, in pages).
CHECKPOINT_BYTES = 1000 * 4096


def enable_wal(conn: sqlite3.Connection, *, timeout_seconds: float) -> None:
    """Switch ``conn``'s file to WAL, retrying a locked file until ``timeout_seconds``."""
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op once the file has pages
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            (page_size,) = conn.execute("PRAGMA page_size").fetchone()
            conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_BYTES // page_size}")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(_PAUSE_SECONDS)
