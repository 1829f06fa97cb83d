"""``list_executions``' rules on their own: the outcome → status table against the one
outcome rule, the flags' refusals, ``--since``, the page token, and the store's query plan."""

from __future__ import annotations

import base64
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends import CaseOutcome
from stepsaga.backends._listing import ExecutionQuery, PageToken, parse_since
from stepsaga.backends._naming import case_of_name, execution_name, tenant_prefix
from stepsaga.backends._outcome import OUTCOME_STATUSES, OutcomeFacts, derive_outcome
from stepsaga.engine._models import ExecutionStatus
from stepsaga.engine._store import ExecutionPageQuery, Store
from stepsaga.errors import (
    EXECUTION_STOPPED,
    SAGA_COMPENSATED,
    SAGA_COMPENSATION_FAILED,
    InvalidInputError,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
STATUSES = [status.value for status in ExecutionStatus]


@given(
    status=st.sampled_from(STATUSES),
    error=st.sampled_from(
        [None, SAGA_COMPENSATED, SAGA_COMPENSATION_FAILED, EXECUTION_STOPPED, "TransientError"]
    ),
    waiting=st.booleans(),
)
def test_every_outcome_comes_from_a_status_its_table_names(
    status: str, error: str | None, waiting: bool
) -> None:
    outcome = derive_outcome(OutcomeFacts(status, error, ("AwaitDecisionX",) if waiting else ()))
    assert status in OUTCOME_STATUSES[outcome]


def test_the_table_names_every_outcome() -> None:
    assert set(OUTCOME_STATUSES) == set(CaseOutcome)


def _query(**flags: object) -> ExecutionQuery:
    return ExecutionQuery.build(now=NOW, **flags)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"limit": 0}, "--limit must be a whole number from 1 to 1000"),
        ({"limit": 1001}, "--limit must be a whole number from 1 to 1000"),
        ({"limit": True}, "--limit must be a whole number from 1 to 1000"),
        ({"status": "DONE"}, "--status: 'DONE' is not one of RUNNING, SUCCEEDED, FAILED"),
        ({"outcome": "ok"}, "--outcome: 'ok' is not one of completed, compensated"),
        ({"tenant": "  "}, "--tenant: must not be empty"),
        ({"since": "yesterday"}, "--since: 'yesterday' is neither an ISO-8601 time"),
        ({"since": "2026-11-29T09:30:00"}, "--since: must carry a timezone"),
        ({"since": "1e3s"}, "--since: '1e3s' is neither"),
    ],
)
def test_each_flag_is_refused_in_one_line_naming_it(flags: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        _query(**flags)
    assert caught.value.message.startswith(message)
    assert "\n" not in caught.value.message


def test_statuses_and_outcomes_are_read_in_any_case() -> None:
    query = _query(status="pending-redrive", outcome="AWAITING_RECONCILIATION")
    assert query.status is ExecutionStatus.PENDING_REDRIVE
    assert query.outcome is CaseOutcome.AWAITING_RECONCILIATION
    assert query.statuses() == frozenset()  # no execution can be both: nothing to read
    assert _query(outcome="failed").statuses() == frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
    assert _query(status="FAILED", outcome="failed").statuses() == frozenset({"FAILED"})
    assert _query().statuses() is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-29T09:30:00Z", datetime(2026, 11, 29, 9, 30, tzinfo=UTC)),
        ("2026-11-29T10:30:00+01:00", datetime(2026, 11, 29, 9, 30, tzinfo=UTC)),
        ("2026-11-28", datetime(2026, 11, 28, tzinfo=UTC)),
        ("90s", NOW - timedelta(seconds=90)),
        ("15m", NOW - timedelta(minutes=15)),
        ("6h", NOW - timedelta(hours=6)),
        ("7d", NOW - timedelta(days=7)),
        ("2w", NOW - timedelta(weeks=2)),
    ],
)
def test_since_forms(text: str, expected: datetime) -> None:
    assert parse_since(text, NOW) == expected


@given(st.text(max_size=40))
def test_since_never_fails_but_with_one_line(text: str) -> None:
    refused: InvalidInputError | None = None
    try:
        when = parse_since(text, NOW)
    except InvalidInputError as exc:
        refused = exc
    if refused is None:
        assert when.tzinfo is not None
    else:
        assert refused.data["field"] == "since"
        assert "\n" not in refused.message


def test_a_token_round_trips_and_is_bound_to_its_filters_and_backend() -> None:
    query = _query(tenant="acme", since="6h")
    token = PageToken(
        backend="local", filters=query.filters, since=1.5, after=(1796131177.451647, "arn:x")
    )
    assert PageToken.decode(token.encode(), backend="local", query=query) == token
    later = ExecutionQuery.build(now=NOW + timedelta(hours=1), tenant="acme", since="6h")
    assert PageToken.decode(token.encode(), backend="local", query=later) == token  # as typed
    for other, backend in ((_query(tenant="globex", since="6h"), "local"), (query, "aws")):
        with pytest.raises(InvalidInputError, match="--next-token: not a token of this listing"):
            PageToken.decode(token.encode(), backend=backend, query=other)  # type: ignore[arg-type]


def _b64(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode()


@given(
    st.one_of(
        st.text(max_size=200),
        st.builds(_b64, st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8))),
        st.just(_b64({"backend": "local", "filters": "x", "skip": -1})),
        st.just(_b64({"backend": "local", "filters": "x", "after": [1, 2, 3]})),
        st.just("A" * 5000),
    )
)
def test_any_other_token_is_refused_in_one_line(text: str) -> None:
    query = _query()
    refused: InvalidInputError | None = None
    try:
        PageToken.decode(text, backend="local", query=query)
    except InvalidInputError as exc:
        refused = exc
    # (a text that decodes to a valid token for these filters is one we could have made)
    assert refused is None or refused.data["field"] == "next_token"


@given(
    tenant=st.text("abcXYZ09_-.", min_size=1, max_size=30),
    case=st.text("abcXYZ09_-.", min_size=1, max_size=70),
    revision=st.integers(1, 10**6),
)
def test_names_read_back_as_the_case_or_not_at_all(tenant: str, case: str, revision: int) -> None:
    name = execution_name(tenant, case, revision)
    assert name.startswith(tenant_prefix(tenant))
    assert case_of_name(name) in (None, (tenant, case, revision))
    if "-" not in tenant and "." not in tenant + case and len(name) <= 80:
        assert case_of_name(name) == (tenant, case, revision)


@pytest.mark.parametrize(
    "page",
    [
        ExecutionPageQuery(limit=10),
        ExecutionPageQuery(limit=10, after=(1.0, "arn")),
        ExecutionPageQuery(limit=10, tenant="acme", since=1.0, after=(2.0, "arn")),
        ExecutionPageQuery(limit=10, statuses=frozenset({"FAILED", "ABORTED"})),
        ExecutionPageQuery(limit=10, state_machine_arn="arn:sm", since=5.0),
        ExecutionPageQuery(limit=10, state_machine_arn="arn:sm", tenant="acme"),
    ],
)
def test_every_page_query_reads_through_an_index(tmp_path: Path, page: ExecutionPageQuery) -> None:
    store = Store(tmp_path / "executions.sqlite3")
    try:
        plan = store.page_plan(page)
    finally:
        store.close()
    reads = [step for step in plan if "executions" in step]
    assert reads, plan
    assert all("INDEX" in step for step in reads), plan


def test_a_schema_2_store_gains_the_listing_indexes_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "executions.sqlite3"
    Store(path).close()
    raw = sqlite3.connect(path)
    raw.execute("DROP INDEX executions_by_tenant")
    raw.execute("DROP INDEX executions_by_start")
    raw.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    raw.commit()
    raw.close()
    Store(path).close()
    check = sqlite3.connect(path)
    names = {row[0] for row in check.execute("SELECT name FROM sqlite_schema WHERE type='index'")}
    check.close()
    assert {"executions_by_tenant", "executions_by_start"} <= names
