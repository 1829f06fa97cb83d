"""Case pointer items on their own: the layout round-trips, names the execution the start
paths start, and a pointer without its execution is explained by its age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from stepsaga.backends._aws.pointers import AWS_KEEPS_CLOSED, Pointer, why_missing
from stepsaga.backends._aws.settings import AwsSettings
from stepsaga.backends._naming import execution_name
from stepsaga.ledger._models import MAX_REVISION

MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:dev-replacement-order"
AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

tenants = st.from_regex(r"\A[a-z0-9][a-z0-9-]{0,31}\Z")
cases = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,47}\Z")
revisions = st.integers(1, MAX_REVISION)


@given(tenants, cases, revisions)
def test_an_item_round_trips_and_names_the_derived_execution(
    tenant: str, case: str, revision: int
) -> None:
    pointer = Pointer.of(MACHINE, tenant, case, revision, at=AT)
    item = pointer.item()
    assert Pointer.from_item(item) == pointer
    assert item["pk"] == {"S": f"CASE#{case}"}
    assert item["sk"]["S"].rsplit("#", 1) == [tenant, f"{revision:06d}"]
    assert "expires_at" not in item  # outlives AWS's 90 days
    name = execution_name(tenant, case, revision)
    assert pointer.execution_name == name
    assert pointer.execution_arn == AwsSettings(MACHINE, "ledger").execution_arn(name)


def test_a_missing_execution_is_interrupted_when_recent_and_forgotten_when_old() -> None:
    pointer = Pointer.of(MACHINE, "acme", "CASE-1", 2, at=AT)
    assert "never started" in why_missing(pointer, AT + timedelta(minutes=1))
    assert "never started" in why_missing(pointer, AT + AWS_KEEPS_CLOSED)
    old = why_missing(pointer, AT + AWS_KEEPS_CLOSED + timedelta(seconds=1))
    assert old == (
        "case CASE-1 revision 2 of tenant acme: execution acme-CASE-1-r2 (started "
        "2026-11-29T12:00:00Z) closed more than 90 days ago (AWS keeps 90 days)"
    )
