"""A broken executions file is one clear error naming it, never a raw sqlite3 exception."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stepsaga.engine._store import Store
from stepsaga.errors import StoreUnavailableError


def test_a_corrupted_file_is_named_and_refused(tmp_path: Path) -> None:
    path = tmp_path / "executions.sqlite3"
    path.write_bytes(b"not a database at all " * 400)

    with pytest.raises(StoreUnavailableError) as caught:
        Store(path)

    assert str(path) in caught.value.message
    assert "not a usable executions database" in caught.value.message


def test_a_locked_file_is_named_and_retryable(tmp_path: Path) -> None:
    path = tmp_path / "executions.sqlite3"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        reader = Store(path, busy_timeout_seconds=0.2)  # reading needs no lock (WAL)
        with pytest.raises(StoreUnavailableError) as caught, reader.transaction():
            pass
        reader.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()

    assert str(path) in caught.value.message
    assert caught.value.retryable
    Store(path).close()  # fine again once the lock is gone
