"""One SQLite transaction shared by the embedded engine and a ledger kept in the same file.

When the ledger's tables live in the engine's ``executions.sqlite3`` (a one-file home),
the engine lends its connection to the ledger while a top-level task's handler runs
(:func:`lending`). The ledger then runs every statement on that connection:

* a claim (and any other write but an outcome) commits before ``put`` returns, durably at
  the ledger's level: the claim is on disk before the effect is dispatched;
* an outcome (a record leaving ``IN_PROGRESS``) is written inside an open transaction and
  left there; the engine's next checkpoint (the task's events and cursor) joins it and one
  commit makes both durable. A crash before that commit leaves the claim ``IN_PROGRESS``
  and the engine at its previous boundary: "killed after the effect, before the outcome",
  which the lease rules already settle (takeover of a keyed write, ``UNKNOWN`` → a person
  for a physical one).

SQLite refuses to change ``PRAGMA synchronous`` inside a transaction, so a ledger write
that begins the transaction raises the level to the ledger's first (``FULL`` by default;
the engine runs ``NORMAL``), and :meth:`SharedConnection.commit` restores the engine's own
level once the transaction is committed. Only top-level tasks lend: the handlers of
``Parallel`` branches and ``Map`` iterations run at the same time as each other, and keep
the ledger's own connections and commits.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")


class SharedConnection:
    """The engine store's connection, as a ledger on the same file writes through it."""

    def __init__(self, conn: sqlite3.Connection, path: str, synchronous: str) -> None:
        self.conn = conn
        self.path = os.path.realpath(path)
        self.synchronous = synchronous  # the engine's own level, restored after a commit
        self._raised = False  # the level was raised for the open transaction
        self._owned = False  # a ledger write began the open transaction
        self.pending = False  # a ledger write waits in the open transaction
        #: Commits that carried a ledger write (tests and the bench count them).
        self.commits = 0

    def run(
        self,
        body: Callable[[sqlite3.Connection], tuple[bool, T]],
        *,
        level: str,
        defer: bool,
    ) -> T:
        """Run ``body`` (it says whether to keep what it wrote) under a savepoint of the
        open transaction, begun at ``level`` if none is open. ``defer``: leave it open for
        the engine's next commit; else commit now, durably."""
        conn = self.conn
        began = not conn.in_transaction
        if began:
            self._begin(level)
        elif not self._owned:
            # A handler runs between the engine's transactions, never inside one.
            raise RuntimeError("a ledger write inside an engine transaction it did not begin")
        conn.execute("SAVEPOINT ledger")
        try:
            keep, value = body(conn)
        except BaseException:
            self._undo(began)
            raise
        if not keep:
            self._undo(began)
            return value
        conn.execute("RELEASE ledger")
        self.pending = True
        if not defer:
            self.commit()
        return value

    def _begin(self, level: str) -> None:
        wanted = max(level, self.synchronous, key=_LEVELS.index)
        if wanted != self.synchronous:
            self.conn.execute(f"PRAGMA synchronous = {wanted}")
            self._raised = True
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._restore()
            raise
        self._owned = True

    def _undo(self, began: bool) -> None:
        conn = self.conn
        if began:
            self.rollback()
        else:
            conn.execute("ROLLBACK TO ledger")
            conn.execute("RELEASE ledger")

    def commit(self) -> None:
        """``COMMIT`` the open transaction (the engine's and any ledger write in it)."""
        carried = self.pending
        try:
            self.conn.execute("COMMIT")
        finally:
            self.pending = False
            self._restore()
        if carried:
            self.commits += 1

    def rollback(self) -> None:
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
        finally:
            self.pending = False
            self._restore()

    def _restore(self) -> None:
        self._owned = False
        if self._raised:
            self._raised = False
            self.conn.execute(f"PRAGMA synchronous = {self.synchronous}")


_LENT: ContextVar[SharedConnection | None] = ContextVar("stepsaga_shared_sqlite", default=None)


@contextmanager
def lending(shared: SharedConnection) -> Iterator[None]:
    """While the block runs (in this thread or task), a ledger on ``shared``'s file uses it."""
    token = _LENT.set(shared)
    try:
        yield
    finally:
        _LENT.reset(token)


def lent(path: str) -> SharedConnection | None:
    """The connection lent for ``path`` (a real path), if any."""
    shared = _LENT.get()
    return shared if shared is not None and shared.path == path else None
