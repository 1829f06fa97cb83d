from __future__ import annotations

import random
from typing import Any

import pytest

from stepsaga.engine._choice import ChoiceRuleError, compile_rule
from stepsaga.engine._errors import StatesError
from stepsaga.engine._payload import Env

DATA = {
    "s": "b",
    "n": 5,
    "t": "2026-11-29T12:00:00Z",
    "flag": True,
    "none": None,
    "other": 7,
    "file": "report.csv",
}


def check(rule: dict[str, Any], data: Any = DATA) -> bool:
    return compile_rule(rule, "Choices[0]", top_level=False)(Env(data, {}, random.Random(0)))


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"Variable": "$.s", "StringEquals": "b"}, True),
        ({"Variable": "$.s", "StringLessThan": "c"}, True),
        ({"Variable": "$.s", "StringGreaterThanEquals": "c"}, False),
        ({"Variable": "$.file", "StringMatches": "*.csv"}, True),
        ({"Variable": "$.file", "StringMatches": "report.\\*"}, False),
        ({"Variable": "$.n", "NumericEquals": 5}, True),
        ({"Variable": "$.n", "NumericLessThanPath": "$.other"}, True),
        ({"Variable": "$.n", "NumericGreaterThan": 5}, False),
        ({"Variable": "$.flag", "BooleanEquals": True}, True),
        ({"Variable": "$.t", "TimestampLessThan": "2026-11-29T13:00:00+01:00"}, False),
        ({"Variable": "$.t", "TimestampEquals": "2026-11-29T13:00:00+01:00"}, True),
        ({"Variable": "$.s", "NumericEquals": 5}, False),  # wrong type is false
        ({"Variable": "$.flag", "NumericEquals": 1}, False),  # a boolean is not a number
        ({"Variable": "$.none", "IsNull": True}, True),
        ({"Variable": "$.missing", "IsPresent": False}, True),
        ({"Variable": "$.n", "IsNumeric": True}, True),
        ({"Variable": "$.t", "IsTimestamp": True}, True),
        ({"Variable": "$.s", "IsString": False}, False),
        ({"Variable": "$.flag", "IsBoolean": True}, True),
        (
            {
                "And": [
                    {"Variable": "$.n", "NumericEquals": 5},
                    {"Variable": "$.s", "StringEquals": "b"},
                ]
            },
            True,
        ),
        (
            {
                "Or": [
                    {"Variable": "$.n", "NumericEquals": 1},
                    {"Variable": "$.s", "StringEquals": "x"},
                ]
            },
            False,
        ),
        ({"Not": {"Variable": "$.n", "NumericEquals": 1}}, True),
    ],
)
def test_rules(rule: dict[str, Any], expected: bool) -> None:
    assert check(rule) is expected


def test_missing_variable_is_a_runtime_error() -> None:
    with pytest.raises(StatesError) as info:
        check({"Variable": "$.missing", "StringEquals": "x"})
    assert info.value.error == "States.Runtime"


def test_context_variables() -> None:
    rule = compile_rule(
        {"Variable": "$$.Execution.Name", "StringEquals": "e"}, "c", top_level=False
    )
    assert rule(Env({}, {"Execution": {"Name": "e"}}, random.Random(0)))


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"Variable": "$.n", "NumericEquals": "5"}, "takes a number"),
        ({"Variable": "$.n", "NumericEquals": 5, "StringEquals": "x"}, "exactly one"),
        ({"Variable": "$.n", "Approximately": 5}, "unsupported"),
        ({"NumericEquals": 5}, "needs Variable"),
        ({"And": []}, "non-empty"),
        ({"Variable": "$..n", "IsPresent": True}, "recursive"),
        ({"Variable": "$.t", "TimestampEquals": "yesterday"}, "RFC 3339"),
    ],
)
def test_bad_rules_are_refused(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ChoiceRuleError, match=message):
        compile_rule(rule, "Choices[0]", top_level=False)
