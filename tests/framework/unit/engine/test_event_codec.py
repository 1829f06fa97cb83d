"""History details are stored deflated against the previous event, and read back exactly."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.engine import _event_codec as event_codec
from stepsaga.engine._store import SCHEMA_VERSION, Store
from stepsaga.errors import InvalidInputError

ARN = "arn:aws:states:us-east-1:123456789012:execution:saga:acme-CASE-1-r1"
texts = st.one_of(
    st.none(),
    st.text(max_size=400),
    st.builds(json.dumps, st.dictionaries(st.text(max_size=20), st.text(max_size=50))),
)


@given(st.lists(texts, max_size=30))
def test_decoding_gives_back_every_text(values: list[str | None]) -> None:
    stored: list[bytes | None] = []
    previous = b""
    for value in values:
        if value is None:
            stored.append(None)
        else:
            blob, previous = event_codec.encode(value, previous)
            stored.append(blob)
    assert list(event_codec.decode(stored)) == values


def test_repeated_documents_cost_a_fraction_of_their_size() -> None:
    case = json.dumps({"case": {"id": "CASE-1", "lines": [{"sku": f"SKU-{i}"} for i in range(20)]}})
    previous = b""
    sizes = []
    for step in range(5):
        text = json.dumps({"name": f"Step{step}", "input": case})
        blob, previous = event_codec.encode(text, previous)
        sizes.append((len(blob), len(text)))
    assert all(blob * 5 < plain for blob, plain in sizes[1:])


def _events(store: Store) -> list[tuple[int, str | None]]:
    return [(e.id, e.details) for e in store.events(ARN)]


def test_a_rolled_back_batch_leaves_no_stale_dictionary(tmp_path: Path) -> None:
    store = Store(tmp_path / "e.sqlite3")
    with store.transaction():
        store.insert_events(ARN, [(1, "ExecutionStarted", 0, 1.0, '{"a": 1}')])

    def write_then_fail() -> None:
        with store.transaction():
            store.insert_events(ARN, [(2, "PassStateEntered", 1, 2.0, '{"lost": true}')])
            raise RuntimeError

    with pytest.raises(RuntimeError):
        write_then_fail()
    with store.transaction():
        store.insert_events(ARN, [(2, "PassStateEntered", 1, 2.0, '{"kept": true}')])
        store.insert_events(ARN, [(3, "PassStateExited", 2, 3.0, '{"kept": 3}')])
    assert _events(store) == [(1, '{"a": 1}'), (2, '{"kept": true}'), (3, '{"kept": 3}')]


def test_two_writers_of_one_execution_chain_on_what_the_table_holds(tmp_path: Path) -> None:
    first, second = Store(tmp_path / "e.sqlite3"), Store(tmp_path / "e.sqlite3")
    with first.transaction():
        first.insert_events(ARN, [(1, "ExecutionStarted", 0, 1.0, '{"by": "first"}')])
    with second.transaction():  # e.g. a callback sent from another process
        second.insert_events(ARN, [(2, "TaskSucceeded", 1, 2.0, '{"by": "second"}')])
    with first.transaction():
        first.insert_events(ARN, [(3, "TaskStateExited", 2, 3.0, '{"by": "first again"}')])
    expected = [(1, '{"by": "first"}'), (2, '{"by": "second"}'), (3, '{"by": "first again"}')]
    assert _events(first) == expected
    assert _events(Store(tmp_path / "e.sqlite3")) == expected
    assert [e.id for e in first.events(ARN, reverse=True)] == [3, 2, 1]


def test_a_schema_1_store_is_converted_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE events (execution_arn TEXT NOT NULL, id INTEGER NOT NULL,
            type TEXT NOT NULL, previous_id INTEGER NOT NULL, timestamp REAL NOT NULL,
            details TEXT, PRIMARY KEY (execution_arn, id));
        """
    )
    old.executemany(
        "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
        [(ARN, 1, "ExecutionStarted", 0, 1.0, '{"input": "{}"}'), (ARN, 2, "X", 1, 2.0, None)],
    )
    old.commit()
    old.close()

    store = Store(path)
    assert _events(store) == [(1, '{"input": "{}"}'), (2, None)]
    with store.transaction():  # new events chain on the converted plain ones
        store.insert_events(ARN, [(3, "ExecutionSucceeded", 2, 3.0, '{"output": "{}"}')])
    assert _events(Store(path))[-1] == (3, '{"output": "{}"}')
    check = sqlite3.connect(path)
    tables = {name for (name,) in check.execute("SELECT name FROM sqlite_schema")}
    (version,) = check.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert "events" not in tables
    assert version == SCHEMA_VERSION


def test_a_store_from_a_newer_stepsaga_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    Store(path).close()
    raw = sqlite3.connect(path)
    raw.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    raw.commit()
    raw.close()
    with pytest.raises(InvalidInputError, match="schema 99 is newer"):
        Store(path)


def test_a_schema_3_store_gains_the_variables_columns_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite3"
    Store(path).close()
    raw = sqlite3.connect(path)  # make it what schema 3 wrote: no variables columns
    raw.execute("ALTER TABLE executions DROP COLUMN variables")
    raw.execute("ALTER TABLE frames DROP COLUMN variables")
    raw.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    raw.commit()
    raw.close()

    Store(path).close()
    check = sqlite3.connect(path)
    for table in ("executions", "frames"):
        columns = {row[1] for row in check.execute(f"PRAGMA table_info({table})")}
        assert "variables" in columns
    (version,) = check.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == SCHEMA_VERSION == "4"
