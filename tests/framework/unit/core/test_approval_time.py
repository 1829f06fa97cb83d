"""``approved_at``: the type's edges (years, timezone overflow) and the window against a clock
(future approvals, approvals older than the ledger's retention window)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from stepsaga._model.approval_time import (
    MAX_CLOCK_SKEW,
    MAX_YEAR,
    MIN_YEAR,
    ApprovedAt,
    check_approval_window,
)
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.errors import InvalidInputError, ReplayWindowExpiredError
from stepsaga.ledger import LedgerPolicy
from tests.framework.functional.cli_support import case_data, files
from tests.framework.unit.handlers.helpers import World, make_world, step_event
from workflows.case import parse_case
from workflows.project import reference_project

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RETENTION = LedgerPolicy().retention
adapter: TypeAdapter[datetime] = TypeAdapter(ApprovedAt)


def case_at(approved_at: str) -> dict[str, object]:
    data = case_data()
    data["approval"]["approved_at"] = approved_at
    return data


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00+01:00",  # UTC is in year 0: astimezone overflowed
        "9999-12-31T23:59:59-01:00",  # UTC is in year 10000
        "0001-01-01T00:59:59+01:00",
        "9999-12-31T23:00:00-23:59",
    ],
)
def test_a_timezone_that_leaves_the_date_range_is_one_line_not_an_overflow(value: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_case(case_at(value))
    assert caught.value.message == (
        "approval.approved_at: is outside the range of dates once converted to UTC"
    )


@pytest.mark.parametrize(
    "value",
    [
        "0999-12-31T23:59:59Z",
        "0001-01-01T00:00:00Z",
        "0100-06-01T00:00:00+00:00",
        "1000-01-01T00:30:00+01:00",  # 0999 in UTC
        "9999-01-01T00:00:00Z",
        "9998-12-31T23:30:00-01:00",  # 9999 in UTC
    ],
)
def test_years_outside_1000_to_9998_in_utc_are_refused(value: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_case(case_at(value))
    assert caught.value.message == (
        f"approval.approved_at: must be in the years {MIN_YEAR} to {MAX_YEAR} (UTC)"
    )


@pytest.mark.parametrize(
    ("value", "utc"),
    [
        ("1000-01-01T00:00:00Z", "1000-01-01T00:00:00Z"),
        ("9998-12-31T23:59:59Z", "9998-12-31T23:59:59Z"),
        ("2026-11-29T10:30:00+01:00", "2026-11-29T09:30:00Z"),
    ],
)
def test_the_edges_inside_the_range_serialize_as_iso(value: str, utc: str) -> None:
    case = parse_case(case_at(value))
    assert case.execution_input()["approval"]["approved_at"] == utc


@given(
    moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)),
    offset_minutes=st.integers(-23 * 60 - 59, 23 * 60 + 59),
)
def test_any_timestamp_is_an_iso_utc_value_or_one_line(
    moment: datetime, offset_minutes: int
) -> None:
    """Every date-time at every offset: accepted with a four-digit UTC year that serializes
    back as ISO-8601, or refused with a ``ValueError`` pydantic reports — never an
    ``OverflowError``."""
    text = moment.replace(tzinfo=timezone(timedelta(minutes=offset_minutes))).isoformat()
    try:
        value = adapter.validate_python(text)
    except ValidationError as exc:
        errors = exc.errors()
    else:
        assert value.tzinfo is UTC
        assert MIN_YEAR <= value.year <= MAX_YEAR
        written = value.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert adapter.validate_python(written) == value.replace(microsecond=0)
        return
    assert len(errors) == 1


# --- the window, against a clock --------------------------------------------------------


@pytest.mark.parametrize(
    "approved_at",
    [
        NOW,
        NOW - RETENTION + timedelta(seconds=1),
        NOW + MAX_CLOCK_SKEW,
        NOW - timedelta(days=1),
    ],
)
def test_approvals_inside_the_window_pass(approved_at: datetime) -> None:
    check_approval_window(approved_at, NOW, RETENTION)


@pytest.mark.parametrize(
    ("approved_at", "says"),
    [
        (NOW + MAX_CLOCK_SKEW + timedelta(seconds=1), "is in the future (more than 5 minutes"),
        (NOW + timedelta(days=3), "is in the future"),
        (datetime(9998, 12, 31, tzinfo=UTC), "is in the future"),
        (NOW - RETENTION, "is older than the ledger's 30 days retention window"),
        (NOW - timedelta(days=400), "retention window"),
        (datetime(1000, 1, 1, tzinfo=UTC), "retention window"),
    ],
)
def test_approvals_outside_the_window_are_refused(approved_at: datetime, says: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_approval_window(approved_at, NOW, RETENTION)
    assert caught.value.message.startswith("approval.approved_at: ")
    assert says in caught.value.message
    assert caught.value.data["field"] == "approval.approved_at"


def test_the_window_follows_the_policy_and_the_skew_given() -> None:
    check_approval_window(NOW - timedelta(days=40), NOW, timedelta(days=90))
    with pytest.raises(InvalidInputError, match="2 hours retention window"):
        check_approval_window(NOW - timedelta(hours=3), NOW, timedelta(hours=2))
    with pytest.raises(InvalidInputError, match="more than 0 seconds ahead"):
        check_approval_window(NOW + timedelta(seconds=1), NOW, RETENTION, timedelta(0))


def test_the_window_agrees_with_the_ledger_at_its_edge(tmp_path: Path) -> None:
    """At exactly ``retention`` the ledger refuses every claim; so does the window."""
    world: World = make_world(tmp_path, clock=ManualClock(NOW))
    try:
        approved = NOW - RETENTION
        event = step_event("ReserveStock")
        event["approved_at"] = approved.strftime("%Y-%m-%dT%H:%M:%SZ")
        with pytest.raises(ReplayWindowExpiredError):
            world.run("ReserveStock", event)
        with pytest.raises(InvalidInputError):
            check_approval_window(approved, NOW, RETENTION)
    finally:
        world.deps.close()


@pytest.mark.parametrize(
    "approved_at",
    [NOW + timedelta(days=2), NOW - RETENTION - timedelta(minutes=1), NOW + timedelta(hours=1)],
    ids=["days ahead", "past the retention window", "an hour ahead"],
)
def test_local_start_refuses_an_approval_outside_the_window_and_writes_nothing(
    tmp_path: Path, approved_at: datetime
) -> None:
    home = StateHome(tmp_path / "home")
    case = parse_case(case_at(approved_at.strftime("%Y-%m-%dT%H:%M:%SZ")))
    with (
        LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend,
        pytest.raises(InvalidInputError, match=r"^approval\.approved_at: "),
    ):
        backend.start(case, time_scale=0)
    assert files(home) == []


def test_local_start_accepts_an_approval_a_little_ahead_of_the_clock(tmp_path: Path) -> None:
    home = StateHome(tmp_path / "home")
    case = parse_case(case_at((NOW + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")))
    with LocalBackend(home, reference_project(), clock=ManualClock(NOW)) as backend:
        assert backend.start(case, time_scale=0).outcome.value == "completed"
