"""A locked, corrupted or foreign SQLite file gives a clear error from the family."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stepsaga.errors import InvalidInputError, StoreUnavailableError
from stepsaga.ledger import open_ledger
from tests.framework.conformance.ledger.helpers import Counter, make_action


def test_a_locked_file_is_store_unavailable_and_retryable(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with open_ledger(f"sqlite:///{db}?busy_timeout_ms=50") as ledger:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StoreUnavailableError) as caught:
                ledger.perform(make_action(), Counter())
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert caught.value.retryable
        assert "locked" in caught.value.message
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        # Once the lock is gone the same ledger works again.
        assert ledger.perform(make_action(), Counter()) == {"refund_id": "RF-1"}


def test_a_corrupted_file_is_invalid_input(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    db.write_bytes(b"\x00garbage" * 4096)
    with pytest.raises(InvalidInputError, match="not a usable ledger database"):
        open_ledger(f"sqlite:///{db}")


def test_a_file_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(InvalidInputError, match="newer stepsaga"):
        open_ledger(f"sqlite:///{db}")


def test_a_directory_is_not_a_ledger(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        open_ledger(f"sqlite:///{tmp_path}")


def test_a_ledger_can_be_reopened_after_close(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path / 'l.db'}")
    ledger.perform(make_action(), Counter())
    ledger.close()
    record = ledger.get(make_action().key)
    assert record is not None
