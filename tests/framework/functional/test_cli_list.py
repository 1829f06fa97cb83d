"""``stepsaga list`` on the embedded backend: newest first, each filter, and pages that
together hold every execution exactly once (start times tie, tokens are opaque)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.backends._local import LocalBackend
from stepsaga.engine import LocalEngine
from stepsaga.errors import SAGA_COMPENSATED, InvalidInputError
from tests.framework.functional.cli_support import EXAMPLES, cli, files, write_case
from workflows.project import reference_project

SAGA = "replacement-order"
#: Stands in for the saga: ends as the input says (the listing reads only the input).
DEFINITION = {
    "StartAt": "End",
    "States": {
        "End": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.end", "StringEquals": "ok", "Next": "Done"},
                {"Variable": "$.end", "StringEquals": "compensated", "Next": "Compensated"},
            ],
            "Default": "Broken",
        },
        "Done": {"Type": "Succeed"},
        "Compensated": {"Type": "Fail", "Error": SAGA_COMPENSATED},
        "Broken": {"Type": "Fail", "Error": "TransientError"},
    },
}
START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _case(tenant: str, case: str, revision: int = 1, end: str = "ok") -> dict[str, Any]:
    return {
        "tenant_id": tenant,
        "case_id": case,
        "approval": {"revision": revision},
        "end": end,
    }


def _fill(home: StateHome, cases: list[tuple[dict[str, Any], timedelta]]) -> ManualClock:
    """Executions of ``cases``, each started ``offset`` after START (ties allowed)."""
    clock = ManualClock(START)
    with LocalEngine(home, {}, clock=clock, time_scale=0) as engine:
        arn = engine.ensure_state_machine(SAGA, DEFINITION)
        for data, offset in cases:
            clock.set(START + offset)
            name = f"{data['tenant_id']}-{data['case_id']}-r{data['approval']['revision']}"
            engine.start_execution(arn, name, data)
    return clock


def _backend(home: StateHome, clock: ManualClock) -> LocalBackend:
    return LocalBackend(home, reference_project(), clock=clock)


def _walk(backend: LocalBackend, **flags: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    token = None
    while True:
        page = backend.list_executions(next_token=token, **flags)
        pages.append([item.name for item in page.items])
        token = page.next_token
        if token is None:
            return pages


def test_pages_hold_every_execution_once_newest_first(home: StateHome) -> None:
    # Ten executions, several sharing a start time: the keyset must not lose or repeat any.
    offsets = [0, 0, 0, 1, 2, 2, 3, 3, 3, 3]
    cases = [(_case("acme", f"C{i}"), timedelta(seconds=s)) for i, s in enumerate(offsets)]
    backend = _backend(home, _fill(home, cases))
    everything = backend.list_executions().items
    assert len(everything) == 10
    assert [i.start_date for i in everything] == sorted(
        (i.start_date for i in everything), reverse=True
    )
    for limit in (1, 3, 4, 10):
        pages = _walk(backend, limit=limit)
        assert all(len(page) <= limit for page in pages)
        assert [name for page in pages for name in page] == [i.name for i in everything]
        assert len(pages) == -(-10 // limit)  # no empty page at the end


def test_each_filter(home: StateHome) -> None:
    cases = [
        (_case("acme", "A1"), timedelta(seconds=1)),
        (_case("acme", "A2", end="compensated"), timedelta(seconds=2)),
        (_case("globex", "G1", end="broken"), timedelta(hours=3)),
        (_case("globex", "G2", revision=2), timedelta(hours=4)),
    ]
    clock = _fill(home, cases)
    clock.set(START + timedelta(hours=5))
    backend = _backend(home, clock)

    def names(**flags: Any) -> list[str]:
        return [item.name for item in backend.list_executions(**flags).items]

    assert names(tenant="acme") == ["acme-A2-r1", "acme-A1-r1"]
    assert names(status="failed") == ["globex-G1-r1", "acme-A2-r1"]
    assert names(outcome="compensated") == ["acme-A2-r1"]
    assert names(outcome="failed") == ["globex-G1-r1"]
    assert names(outcome="completed", tenant="globex") == ["globex-G2-r2"]
    assert names(since="3h") == ["globex-G2-r2", "globex-G1-r1"]  # 5h after START, minus 3h
    assert names(since="2026-11-29T15:00:00Z") == ["globex-G2-r2", "globex-G1-r1"]
    assert names(saga=SAGA, tenant="nobody") == []
    item = backend.list_executions(tenant="globex", limit=1).items[0]
    assert (item.tenant_id, item.case_id, item.revision, item.saga) == ("globex", "G2", 2, SAGA)
    with pytest.raises(InvalidInputError, match="not-a-saga"):
        backend.list_executions(saga="not-a-saga")


def test_an_outcome_filter_pages_too(home: StateHome) -> None:
    ends = ["ok", "compensated", "ok", "compensated", "compensated", "ok", "compensated"]
    cases = [(_case("acme", f"C{i}", end=end), timedelta(seconds=i)) for i, end in enumerate(ends)]
    backend = _backend(home, _fill(home, cases))
    pages = _walk(backend, outcome="compensated", limit=2)
    assert pages == [["acme-C6-r1", "acme-C4-r1"], ["acme-C3-r1", "acme-C1-r1"]]


def test_cli_list_table_json_and_next_page_command(home: StateHome) -> None:
    cases = [(_case("acme", f"C{i}"), timedelta(seconds=i)) for i in range(3)]
    _fill(home, cases)
    table = cli(home, "list", "--tenant", "acme", "--limit", "2")
    assert table.code == 0, table.err
    assert "acme-C2-r1" in table.out
    assert "acme-C1-r1" in table.out
    assert "acme-C0-r1" not in table.out
    hint = [line for line in table.out.splitlines() if line.startswith("next page: ")]
    assert len(hint) == 1
    command = hint[0].removeprefix("next page: ").split()
    assert command[:6] == ["stepsaga", "list", "--tenant", "acme", "--limit", "2"]
    second = cli(home, *command[1:], "--output", "json")  # pasted as printed
    assert second.code == 0, second.err
    data = second.json()
    assert list(data) == ["executions", "nextToken"]
    assert [e["name"] for e in data["executions"]] == ["acme-C0-r1"]
    assert data["nextToken"] is None
    assert set(data["executions"][0]) == {
        "executionArn", "stateMachineArn", "name", "status", "startDate", "stopDate",
        "redriveCount", "saga", "tenant_id", "case_id", "revision", "outcome",
    }  # fmt: skip
    assert cli(home, "list", "--json").json() == cli(home, "list", "-o", "json").json()


def test_cli_list_refusals_are_one_line_exit_2(home: StateHome) -> None:
    _fill(home, [(_case("acme", "C1"), timedelta(0)), (_case("acme", "C2"), timedelta(1))])
    token = cli(home, "list", "--limit", "1", "--json").json()["nextToken"]
    for args, needle in (
        (["--tenant", "globex", "--limit", "1", "--next-token", token], "--next-token"),
        (["--next-token", "garbage!"], "--next-token"),
        (["--limit", "0"], "--limit"),
        (["--since", "soon"], "--since"),
        (["--outcome", "done"], "--outcome"),
        (["--json", "--output", "table"], "--json and --output table"),
    ):
        result = cli(home, "list", *args)
        assert result.code == 2, (args, result.out)
        assert len(result.err.strip().splitlines()) == 1
        assert needle in result.err


def test_an_empty_home_lists_nothing_and_writes_nothing(home: StateHome) -> None:
    result = cli(home, "list")
    assert (result.code, result.out.strip()) == (0, "no executions")
    assert cli(home, "list", "--json").json() == {"executions": [], "nextToken": None}
    assert files(home) == []


def test_real_cases_show_their_outcomes(home: StateHome, tmp_path: Path) -> None:
    clean = cli(home, "start", str(write_case(tmp_path, "CASE-1")), "--json")
    waiting = cli(
        home,
        "start",
        str(write_case(tmp_path, "CASE-2")),
        "--faults",
        str(EXAMPLES / "faults-shipment-unverifiable.json"),
        "--json",
    )
    assert (clean.code, waiting.code) == (0, 0), clean.err + waiting.err
    listed = cli(home, "list", "--json").json()["executions"]
    assert [(e["case_id"], e["outcome"]) for e in listed] == [
        ("CASE-2", "awaiting_reconciliation"),
        ("CASE-1", "completed"),
    ]
    awaiting = cli(home, "list", "--outcome", "awaiting_reconciliation", "--json").json()
    assert [e["case_id"] for e in awaiting["executions"]] == ["CASE-2"]
