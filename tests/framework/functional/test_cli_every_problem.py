"""A file with several bad fields is refused naming every one of them, one line each
(still exit 2, nothing written); a union's members refusing one value read as one field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services import parse_faults
from stepsaga._model.inputs import MAX_PROBLEMS
from stepsaga._project.home import StateHome
from stepsaga.errors import InvalidInputError
from tests.framework.functional.cli_support import case_data, cli, files, write_json
from workflows.case import parse_case

#: One way to break each field, and the field the refusal must name.
BREAKS: dict[str, tuple[tuple[str, ...], Any]] = {
    "approval.approved_by": (("approval", "approved_by"), "x"),
    "order_id": (("order_id",), None),
    "refund.amount": (("refund", "amount"), {"a": 1}),
    "refund.currency": (("refund", "currency"), "DOLLARS"),
    "reserve.quantity": (("reserve", "quantity"), "many"),
    "shipment.address.country": (("shipment", "address", "country"), []),
    "colour": (("colour",), 1),
}


def _broken(fields: list[str]) -> dict[str, Any]:
    data = copy.deepcopy(case_data())
    for field in fields:
        path, value = BREAKS[field]
        node = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return data


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(sorted(BREAKS)), min_size=1, unique=True))
def test_every_broken_field_is_named_once(fields: list[str]) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_case(_broken(fields))
    refused = caught.value
    problems = refused.data["problems"]
    assert sorted(line.split(":", 1)[0] for line in problems) == sorted(fields)
    assert refused.data["field"] == problems[0].split(":", 1)[0]
    assert "\n" not in refused.message


def test_the_cli_prints_one_line_per_field_and_writes_nothing(
    home: StateHome, tmp_path: Path
) -> None:
    fields = ["approval.approved_by", "order_id", "refund.amount", "colour"]
    result = cli(home, "start", str(write_json(tmp_path / "case.json", _broken(fields))))
    assert result.code == 2
    assert result.out == ""
    assert result.err.splitlines() == [
        "error: approval.approved_by: String should have at least 3 characters",
        "error: order_id: Input should be a valid string",
        "error: refund.amount: Input should be a valid string",
        "error: colour: Extra inputs are not permitted",
    ]
    assert files(home) == []


def test_faults_files_too_and_the_list_is_bounded() -> None:
    rules = [{"service": "nowhere", "operation": "x", "fault": "boom"}] * (MAX_PROBLEMS + 5)
    with pytest.raises(InvalidInputError) as caught:
        parse_faults({"faults": rules})
    refused = caught.value
    problems = refused.data["problems"]
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].endswith("more problems not shown")
    assert all(line.startswith("faults.") for line in problems[:-1])
