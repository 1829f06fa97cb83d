"""The faults file is validated strictly: every mistake is one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.faults import (
    MAX_FAULTS_FILE_BYTES,
    FaultKind,
    FaultRule,
    Faults,
    faults_from_json,
    load_faults,
    parse_faults,
    select_rules,
)
from services.values import Operation
from stepsaga.errors import InvalidInputError

EXAMPLES = Path(__file__).parents[3] / "examples"
REFUND = {"service": "payments", "operation": "refund"}


def test_design_md_example_parses() -> None:
    parsed = parse_faults(
        {
            "faults": [
                {**REFUND, "case_id": "CASE-1001", "attempt": 1, "fault": "lose_response"},
                {"service": "shipping", "operation": "create_shipment", "fault": "reject"},
            ]
        }
    )
    first, second = parsed.faults
    assert (first.operation, first.fault, first.attempt) == (
        Operation.REFUND,
        FaultKind.LOSE_RESPONSE,
        1,
    )
    assert second.case_id is None
    assert second.times is None


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("faults-*.json")), ids=lambda p: p.name)
def test_every_example_faults_file_loads(path: Path) -> None:
    assert load_faults(path).faults


def test_examples_needed_by_the_demo_exist() -> None:
    uncertain = load_faults(EXAMPLES / "faults-shipment-uncertain.json").faults
    assert [(r.operation, r.fault) for r in uncertain] == [
        (Operation.CREATE_SHIPMENT, FaultKind.LOSE_RESPONSE)
    ]
    lost = load_faults(EXAMPLES / "faults-lost-refund-response.json").faults
    assert [(r.operation, r.fault) for r in lost] == [(Operation.REFUND, FaultKind.LOSE_RESPONSE)]
    rejected = load_faults(EXAMPLES / "faults-shipment-rejected.json").faults
    assert [r.fault for r in rejected] == [FaultKind.REJECT]


@pytest.mark.parametrize(
    ("rule", "field", "says"),
    [
        ({**REFUND, "fault": "explode"}, "faults.0.fault", "Input should be"),
        ({**REFUND, "fault": "reject", "colour": "red"}, "faults.0.colour", "Extra inputs"),
        ({"service": "bank", "operation": "refund", "fault": "reject"}, "faults.0.service", ""),
        ({"service": "payments", "operation": "reserve", "fault": "reject"}, "faults.0.operation",
         "payments offers refund, find_refund_by_key, not reserve"),
        ({**REFUND}, "faults.0.fault", "Field required"),
        ({"operation": "refund", "fault": "reject"}, "faults.0.service", "Field required"),
        ({**REFUND, "fault": "reject", "attempt": 0}, "faults.0.attempt", "greater than or equal"),
        ({**REFUND, "fault": "reject", "attempt": True}, "faults.0.attempt", "valid integer"),
        ({**REFUND, "fault": "reject", "attempt": "1"}, "faults.0.attempt", "valid integer"),
        ({**REFUND, "fault": "reject", "times": 0}, "faults.0.times", "greater than or equal"),
        ({**REFUND, "fault": "reject", "times": 1.5}, "faults.0.times", "valid integer"),
        ({**REFUND, "fault": "reject", "case_id": "../etc"}, "faults.0.case_id", "pattern"),
        ({**REFUND, "fault": "slow"}, "faults.0.seconds", "a slow fault needs seconds"),
        ({**REFUND, "fault": "slow", "seconds": 0}, "faults.0.seconds", "more than 0"),
        ({**REFUND, "fault": "slow", "seconds": 601}, "faults.0.seconds", "at most 600"),
        ({**REFUND, "fault": "slow", "seconds": "2"}, "faults.0.seconds", "must be a number"),
        ({**REFUND, "fault": "slow", "seconds": True}, "faults.0.seconds", "must be a number"),
        ({**REFUND, "fault": "throttle", "seconds": 1}, "faults.0.seconds", "only a slow fault"),
        ({"service": "payments", "operation": "find_refund_by_key", "fault": "reject"},
         "faults.0.fault", "needs an operation with an effect"),
        ({"service": "shipping", "operation": "find_shipment_by_reference",
          "fault": "crash_after_effect"}, "faults.0.fault", "needs an operation with an effect"),
    ],
)  # fmt: skip
def test_bad_rules_name_the_field(rule: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_faults({"faults": [rule]})
    assert caught.value.data["field"] == field
    assert caught.value.message.startswith(f"{field}: ")
    assert says in caught.value.message


def test_a_strange_unknown_key_stays_on_one_line() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_faults({"faults": [{**REFUND, "fault": "reject", "a\nb" + "x" * 100: 1}]})
    assert "\n" not in caught.value.message
    assert caught.value.data["field"] == 'faults.0."a\\nb' + "x" * 37 + '"'


def test_unknown_top_level_field_is_named() -> None:
    with pytest.raises(InvalidInputError, match=r"^fault: Extra inputs"):
        parse_faults({"fault": []})


def test_top_level_must_be_an_object() -> None:
    with pytest.raises(InvalidInputError, match="must be a JSON object"):
        parse_faults([])


def test_a_repeated_rule_is_refused_in_favour_of_times() -> None:
    rule = {**REFUND, "fault": "throttle"}
    with pytest.raises(
        InvalidInputError, match=r"faults\.1 repeats faults\.0; use times"
    ) as caught:
        parse_faults({"faults": [rule, rule]})
    assert caught.value.data["field"] == "faults"


def test_empty_list_is_no_faults() -> None:
    assert parse_faults({"faults": []}).faults == ()
    assert parse_faults({}).faults == ()


def test_stored_json_round_trips() -> None:
    parsed = parse_faults(
        {"faults": [{**REFUND, "fault": "slow", "seconds": 1, "times": 2, "case_id": "C-1"}]}
    )
    assert faults_from_json(parsed.to_json()) == parsed
    with pytest.raises(InvalidInputError):
        faults_from_json("{not json")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "empty file"),
        (b"  \n", "empty file"),
        (b"{", "invalid JSON at line 1"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "larger than"),
        (b"[" * 20_000 + b"]" * 20_000, "nested too deeply"),
        (b"[]", "must be a JSON object"),
    ],
)
def test_bad_files_are_one_line(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "faults.json"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=says):
        load_faults(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no such file"):
        load_faults(tmp_path / "absent.json")
    with pytest.raises(InvalidInputError, match="is a directory"):
        load_faults(tmp_path)


def test_size_limit_is_the_documented_one(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text(json.dumps({"faults": []}) + " " * MAX_FAULTS_FILE_BYTES)
    with pytest.raises(InvalidInputError, match=f"larger than {MAX_FAULTS_FILE_BYTES} bytes"):
        load_faults(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=20,
)


@given(json_values)
def test_any_json_is_either_valid_faults_or_one_invalid_input_error(data: object) -> None:
    try:
        parsed = parse_faults(data)
    except InvalidInputError as exc:
        error = exc
    else:
        assert isinstance(parsed, Faults)
        return
    assert "\n" not in error.message
    assert error.message.startswith(f"{error.data['field']}: ")


@given(
    st.dictionaries(
        st.sampled_from(
            ["service", "operation", "fault", "case_id", "attempt", "times", "seconds"]
        ),
        json_values,
    )
)
def test_any_rule_shape_is_valid_or_names_a_field_of_the_rule(rule: dict[str, object]) -> None:
    try:
        parse_faults({"faults": [rule]})
    except InvalidInputError as exc:
        field = exc.data["field"]
    else:
        return
    assert field.startswith("faults.0.")


# --- rule selection (pure) ----------------------------------------------------------------


def rule(**fields: Any) -> FaultRule:
    return FaultRule.model_validate({**REFUND, **fields})


def test_selection_narrows_by_case_and_attempt() -> None:
    only_case = rule(fault="reject", case_id="C-1")
    only_second = rule(fault="throttle", attempt=2)
    rules = [only_case, only_second]
    assert select_rules(rules, Operation.REFUND, "C-2", 1, {}) == []
    assert select_rules(rules, Operation.REFUND, "C-1", 1, {}) == [only_case]
    assert select_rules(rules, Operation.REFUND, "C-2", 2, {}) == [only_second]
    assert select_rules(rules, Operation.FIND_REFUND_BY_KEY, "C-1", 1, {}) == []


def test_selection_skips_rules_that_used_their_times() -> None:
    twice = rule(fault="throttle", times=2)
    fallback = rule(fault="reject")
    rules = [twice, fallback]
    assert select_rules(rules, Operation.REFUND, "C", 1, {twice.fingerprint: 1}) == [twice]
    assert select_rules(rules, Operation.REFUND, "C", 1, {twice.fingerprint: 2}) == [fallback]


def test_slow_rules_add_up_and_one_outcome_rule_wins() -> None:
    slow_a = rule(fault="slow", seconds=1)
    slow_b = rule(fault="slow", seconds=2, times=5)
    first = rule(fault="lose_response")
    second = rule(fault="reject")
    chosen = select_rules([slow_a, first, slow_b, second], Operation.REFUND, "C", 1, {})
    assert chosen == [slow_a, first, slow_b]


def test_fingerprint_ignores_key_order_and_differs_by_content() -> None:
    a = FaultRule.model_validate({"fault": "reject", **REFUND})
    b = FaultRule.model_validate({**REFUND, "fault": "reject"})
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != rule(fault="reject", times=1).fingerprint
