"""The store's durability setting, the case index, and what a start writes."""

from __future__ import annotations

import sqlite3

import pytest

from stepsaga.engine._engine import SYNCHRONOUS_ENV, synchronous_from_env
from stepsaga.errors import InvalidInputError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import machine

PASS = machine({"Done": {"Type": "Pass", "End": True}})
SYNCHRONOUS = {"NORMAL": 1, "FULL": 2, "EXTRA": 3}


def test_the_default_is_normal_and_full_is_one_argument_away(make_engine: MakeEngine) -> None:
    assert make_engine().store._db.execute("PRAGMA synchronous").fetchone()[0] == 1
    full = make_engine(synchronous="full")
    assert full.store._db.execute("PRAGMA synchronous").fetchone()[0] == SYNCHRONOUS["FULL"]


@pytest.mark.parametrize("value", ["NORMAL", "full", " Extra "])
def test_the_environment_names_the_setting(value: str) -> None:
    assert synchronous_from_env({SYNCHRONOUS_ENV: value}) == value.strip().upper()
    assert synchronous_from_env({}) == "NORMAL"


def test_the_environment_setting_reaches_the_store(
    make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SYNCHRONOUS_ENV, "FULL")
    assert make_engine().store._db.execute("PRAGMA synchronous").fetchone()[0] == 2


@pytest.mark.parametrize("value", ["OFF", "fast", "1; DROP TABLE executions"])
def test_a_setting_that_would_not_survive_a_crash_is_refused(
    make_engine: MakeEngine, value: str
) -> None:
    with pytest.raises(InvalidInputError, match="NORMAL, FULL, EXTRA"):
        make_engine(synchronous=value)
    with pytest.raises(InvalidInputError, match=SYNCHRONOUS_ENV):
        synchronous_from_env({SYNCHRONOUS_ENV: value})


def test_executions_of_a_case_come_from_the_index(make_engine: MakeEngine) -> None:
    engine = make_engine()
    arn = engine.create_state_machine("m", PASS)
    wanted = [
        engine.start_execution(arn, f"e{i}", {"case_id": case, "tenant_id": "t"})["executionArn"]
        for i, case in enumerate(["C-1", "C-2", "C-1"])
    ]
    engine.start_execution(arn, "no-case", [1, 2])  # an input that is no case at all
    assert engine.executions_of_case("C-1") == sorted([wanted[0], wanted[2]])
    assert engine.executions_of_case("C-9") == []
    plan = engine.store._db.execute(
        "EXPLAIN QUERY PLAN SELECT arn FROM executions WHERE json_extract(input, '$.case_id') = ?",
        ("C-1",),
    ).fetchall()
    assert any("executions_by_case" in str(row) for row in plan), plan


def test_an_unchanged_definition_is_neither_reparsed_nor_rewritten(
    make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine()
    arn = engine.ensure_state_machine("m", PASS)
    statements: list[str] = []
    engine.store._db.set_trace_callback(statements.append)
    from stepsaga.engine import _definition as definition

    def fail(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(definition, "load", fail)
    assert engine.ensure_state_machine("m", PASS) == arn
    assert not [s for s in statements if s.split()[0].upper() in {"BEGIN", "INSERT", "UPDATE"}]


def test_a_changed_definition_is_still_updated(make_engine: MakeEngine) -> None:
    engine = make_engine()
    arn = engine.ensure_state_machine("m", PASS)
    other = machine({"Other": {"Type": "Pass", "End": True}})
    engine.ensure_state_machine("m", other)
    assert '"Other"' in engine.describe_state_machine(arn)["definition"]
    assert isinstance(engine.store._db, sqlite3.Connection)
