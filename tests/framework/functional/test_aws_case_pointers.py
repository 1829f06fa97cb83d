"""Case pointers on moto: ``status``/``history`` of a case id or a name cost the same AWS
calls at 300 and at 3,000 executions (no ``ListExecutions``), and a pointer without its
execution says why instead of "not found"."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stepsaga._util.clock import ManualClock
from stepsaga.backends._aws.pointers import Pointer, case_pointers, record_pointer
from stepsaga.errors import ExecutionAlreadyExists, InvalidInputError, NotFoundError
from tests.framework.functional.aws_support import TABLE, FakeAws, fake_aws
from tests.framework.functional.cli_support import case_data
from workflows.case import parse_case

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


class CallCounter:
    """Every AWS call the clients make, by ``service:Operation`` (botocore ``before-call``)."""

    def __init__(self, *clients: Any) -> None:
        self.calls: Counter[str] = Counter()
        for client in clients:
            client.meta.events.register("before-call", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[f"{model.service_model.service_name}:{model.name}"] += 1

    def of(self, action: Callable[[], object]) -> Counter[str]:
        self.calls.clear()
        action()
        return Counter(self.calls)


def _identity(n: int, tenant: str = "acme", revision: int = 1) -> dict[str, Any]:
    return {"tenant_id": tenant, "case_id": f"CASE-{n}", "approval": {"revision": revision}}


def _fill(aws: FakeAws, start: int, stop: int) -> None:
    aws.seed_recorded([_identity(n) for n in range(start, stop)])


def test_a_lookup_costs_the_same_calls_at_300_and_3000_executions(aws: FakeAws) -> None:
    backend = aws.backend()
    # The case looked up has two tenants' worth of lookalikes and a second revision.
    aws.start_recorded(_identity(0, revision=1))
    aws.set_status("acme-CASE-0-r1", "SUCCEEDED")
    aws.start_recorded(_identity(0, revision=2))
    aws.start_recorded(_identity(0, tenant="globex"))
    counter = CallCounter(aws.sfn, aws.ddb)

    def measured() -> list[Counter[str]]:
        return [
            counter.of(lambda: backend.status("CASE-0", tenant="acme")),
            counter.of(lambda: backend.status("acme-CASE-0-r2")),
            counter.of(lambda: backend.history("CASE-0", tenant="globex")),
        ]

    _fill(aws, 1, 300)
    small = measured()
    _fill(aws, 300, 3000)
    pages = aws.sfn.get_paginator("list_executions").paginate(stateMachineArn=aws.state_machine_arn)
    assert sum(len(page["executions"]) for page in pages) == 3002
    large = measured()

    assert large == small
    # A case id: its pointers (Query), the id tried as a name and the chosen execution
    # (DescribeExecution x2); then status reads the ledger (GetItem per planned action,
    # the open-items index). A name: itself, and its case-id Query that finds none.
    assert large == [
        {
            "dynamodb:Query": 2,
            "stepfunctions:DescribeExecution": 2,
            "dynamodb:GetItem": 4,
        },
        {
            "dynamodb:Query": 2,
            "stepfunctions:DescribeExecution": 1,
            "dynamodb:GetItem": 4,
        },
        {
            "dynamodb:Query": 1,
            "stepfunctions:DescribeExecution": 2,
            "stepfunctions:GetExecutionHistory": 1,
        },
    ]
    assert backend.status("CASE-0", tenant="acme").name == "acme-CASE-0-r2"  # newest wins


def test_start_records_one_pointer_and_a_restart_keeps_it(aws: FakeAws) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    clock = ManualClock(now)
    backend = aws.backend(clock=clock)
    case = parse_case(case_data())
    counter = CallCounter(aws.ddb)
    first = counter.of(lambda: backend.start(case))
    assert first["dynamodb:PutItem"] == 1
    (pointer,) = case_pointers(aws.ddb, TABLE, "CASE-1001")
    assert pointer == Pointer.of(aws.state_machine_arn, "acme", "CASE-1001", 1, at=now)
    clock.advance(60)
    backend.start(case)
    assert case_pointers(aws.ddb, TABLE, "CASE-1001") == [pointer]  # the first start_at kept


def test_a_pointer_naming_another_state_machine_is_never_overwritten(aws: FakeAws) -> None:
    other = aws.state_machine_arn.replace("dev-", "prod-")
    theirs = Pointer.of(other, "acme", "CASE-1001", 1, at=NOW)
    record_pointer(aws.ddb, TABLE, theirs)
    with pytest.raises(ExecutionAlreadyExists, match=f"already runs as {theirs.execution_arn}"):
        aws.backend().start(parse_case(case_data()))
    assert case_pointers(aws.ddb, TABLE, "CASE-1001") == [theirs]
    assert aws.sfn.list_executions(stateMachineArn=aws.state_machine_arn)["executions"] == []


def test_a_start_interrupted_before_start_execution_says_not_started_and_can_run_again(
    aws: FakeAws,
) -> None:
    backend = aws.backend(clock=ManualClock(NOW + timedelta(minutes=5)))
    record_pointer(
        aws.ddb, TABLE, Pointer.of(aws.state_machine_arn, "acme", "CASE-1001", 1, at=NOW)
    )
    with pytest.raises(NotFoundError) as caught:
        backend.status("CASE-1001")
    assert caught.value.message == (
        "case CASE-1001 revision 1 of tenant acme: execution acme-CASE-1001-r1 was recorded at "
        "2026-11-29T12:00:00Z but never started (the start was interrupted before "
        "StartExecution); start the case again"
    )
    again = aws.backend()  # the case file's approval is of today
    assert again.start(parse_case(case_data())).name == "acme-CASE-1001-r1"
    assert again.status("CASE-1001").status == "RUNNING"


def test_an_execution_aws_forgot_after_90_days_is_named_not_lost(aws: FakeAws) -> None:
    """moto never forgets an execution: a pointer without one, started 100 days ago, is
    what AWS leaves of a case closed more than 90 days ago."""
    started = NOW - timedelta(days=100)
    record_pointer(
        aws.ddb, TABLE, Pointer.of(aws.state_machine_arn, "acme", "CASE-OLD", 1, at=started)
    )
    with pytest.raises(NotFoundError) as caught:
        aws.backend(clock=ManualClock(NOW)).history("CASE-OLD")
    assert caught.value.message == (
        "case CASE-OLD revision 1 of tenant acme: execution acme-CASE-OLD-r1 (started "
        "2026-08-21T12:00:00Z) closed more than 90 days ago (AWS keeps 90 days)"
    )


def test_an_execution_started_without_a_pointer_is_found_by_name_only(aws: FakeAws) -> None:
    data = _identity(7)
    aws.sfn.start_execution(
        stateMachineArn=aws.state_machine_arn, name="acme-CASE-7-r1", input=json.dumps(data)
    )
    backend = aws.backend()
    assert backend.status("acme-CASE-7-r1").case_id == "CASE-7"
    with pytest.raises(NotFoundError, match="started before stepsaga recorded pointers"):
        backend.status("CASE-7")


def test_a_revision_still_waits_for_an_earlier_one_started_without_a_pointer(
    aws: FakeAws,
) -> None:
    data = case_data()
    aws.sfn.start_execution(
        stateMachineArn=aws.state_machine_arn,
        name="acme-CASE-1001-r1",
        input=json.dumps(parse_case(data).execution_input()),
    )
    data["approval"]["revision"] = 2
    with pytest.raises(InvalidInputError, match="revision 1\\) is RUNNING"):
        aws.backend().start(parse_case(data))
    assert case_pointers(aws.ddb, TABLE, "CASE-1001") == []  # refused: nothing written
