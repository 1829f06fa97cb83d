"""The case file is the trusted boundary: strict, one-line errors naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga._model.case import MAX_CASE_FILE_BYTES
from stepsaga.errors import InvalidInputError
from workflows.case import load_case, parse_case

EXAMPLE = Path(__file__).parents[4] / "examples" / "case-clean.json"


def case_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return data


def test_example_case_loads_and_canonicalizes_money() -> None:
    case = load_case(EXAMPLE)
    data = case.execution_input()
    assert data["tenant_id"] == "acme"
    assert data["refund"] == {"payment_id": "PAY-991", "amount": "20.00", "currency": "USD"}
    assert data["approval"]["approved_at"] == "2026-11-29T09:30:00Z"
    assert "line2" not in data["shipment"]["address"]


@pytest.mark.parametrize(("amount", "currency"), [(20, "usd"), (20.0, "USD"), ("20", "Usd")])
def test_equivalent_amounts_give_the_same_execution_input(amount: object, currency: str) -> None:
    data = case_data()
    data["refund"].update(amount=amount, currency=currency)
    assert parse_case(data).execution_input() == load_case(EXAMPLE).execution_input()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("tenant_id"), "tenant_id"),
        (lambda d: d.update(extra=1), "extra"),
        (lambda d: d["refund"].update(amount="20.001"), "refund"),
        (lambda d: d["refund"].update(amount="-1"), "refund.amount"),
        (lambda d: d["refund"].update(currency="QQQ"), "refund.currency"),
        (lambda d: d["refund"].update(amount=True), "refund.amount"),
        (lambda d: d["reserve"].update(quantity="1"), "reserve.quantity"),
        (lambda d: d["reserve"].update(quantity=0), "reserve.quantity"),
        (lambda d: d["approval"].update(approved_at="2026-11-29T09:30:00"), "approval.approved_at"),
        (lambda d: d["approval"].update(revision=0), "approval.revision"),
        (lambda d: d.update(tenant_id="Acme Corp"), "tenant_id"),
        (lambda d: d.update(case_id="x" * 500), "case_id"),
        (lambda d: d["shipment"].update(items=[]), "shipment.items"),
        (lambda d: d["shipment"]["address"].update(country="Germany"), "shipment.address.country"),
    ],
)
def test_bad_field_is_named_in_one_line(mutate: Any, field: str) -> None:
    data = case_data()
    mutate(data)
    with pytest.raises(InvalidInputError) as info:
        parse_case(data)
    assert info.value.message.startswith(f"{field}:")
    assert "\n" not in info.value.message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "empty file"),
        (b"   \n", "empty file"),
        (b"\xff\xfe{", "not UTF-8"),
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "larger than"),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    ],
)
def test_unreadable_files_give_one_line(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "case.json"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=expected) as info:
        load_case(path)
    assert "\n" not in info.value.message


def test_directory_and_missing_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="is a directory"):
        load_case(tmp_path)
    with pytest.raises(InvalidInputError, match="no such file"):
        load_case(tmp_path / "missing.json")


def test_size_limit_is_enforced() -> None:
    assert MAX_CASE_FILE_BYTES <= 1024 * 1024


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


@given(path=st.sampled_from(["refund", "reserve", "approval", "shipment"]), value=json_values)
def test_any_wrong_value_is_an_input_error_never_a_crash(path: str, value: object) -> None:
    data = case_data()
    data[path] = value
    with pytest.raises(InvalidInputError):
        parse_case(data)


@pytest.mark.parametrize("value", [0, -1, 1764400000, 1764400000000, 1.5e9, "1764400000", " 17 "])
def test_an_approval_time_must_be_an_iso_date_time(value: object) -> None:
    """A number became a date (seconds or milliseconds, guessed), silently deciding the
    retention window and the request digest (found by the chaos harness)."""
    data = case_data()
    data["approval"]["approved_at"] = value
    with pytest.raises(InvalidInputError) as caught:
        parse_case(data)
    assert caught.value.message.startswith("approval.approved_at: ")
    assert "ISO-8601" in caught.value.message
