from __future__ import annotations

import random
from typing import Any

import pytest

from stepsaga.engine._errors import StatesError
from stepsaga.engine._intrinsics import parse_call
from stepsaga.engine._payload import Env


def run(text: str, data: Any = None, context: Any = None) -> Any:
    return parse_call(text).evaluate(Env(data or {}, context or {}, random.Random(1)))


def test_format_with_paths_literals_and_escapes() -> None:
    data = {"name": "Ada", "n": 3, "ok": True}
    assert run("States.Format('Hi {}, {} items, ok={}', $.name, $.n, $.ok)", data) == (
        "Hi Ada, 3 items, ok=true"
    )
    assert run(r"States.Format('\{literal\} {} it\'s', 'x')") == "{literal} x it's"


def test_format_accepts_any_json_value() -> None:
    data = {"o": {"a": 1, "b": ["x", 2.5, None, {"c": True}]}, "l": [], "e": {}}
    assert run("States.Format('{} {} {}', $.o, $.l, $.e)", data) == (
        "{a=1, b=[x, 2.5, null, {c=true}]} [] {}"
    )
    assert run("States.Format('{}', $.s)", {"s": 'say "hi"'}) == 'say "hi"'


def test_format_refuses_wrong_counts() -> None:
    with pytest.raises(StatesError, match="placeholders"):
        run("States.Format('{} {}', 'one')")


def test_json_round_trip_and_nesting() -> None:
    assert run("States.StringToJson($.s)", {"s": '{"a":[1,2]}'}) == {"a": [1, 2]}
    assert run("States.JsonToString($.o)", {"o": {"a": 1}}) == '{"a":1}'
    assert run("States.StringToJson(States.JsonToString($.o))", {"o": [1]}) == [1]


def test_array_functions() -> None:
    assert run("States.Array(1, 'two', $.x, null)", {"x": True}) == [1, "two", True, None]
    assert run("States.ArrayLength($.l)", {"l": [1, 2, 3]}) == 3
    assert run("States.ArrayGetItem($.l, 1)", {"l": [1, 2, 3]}) == 2
    assert run("States.ArrayContains($.l, 2)", {"l": [1, 2]}) is True
    assert run("States.ArrayUnique($.l)", {"l": [1, 1, 2]}) == [1, 2]
    assert run("States.ArrayRange(1, 9, 4)") == [1, 5, 9]
    assert run("States.MathAdd($.n, -1)", {"n": 5}) == 4


def test_uuid_is_from_the_injected_rng() -> None:
    first, second = run("States.UUID()"), run("States.UUID()")
    assert first == second  # same seed, same id
    assert len(first) == 36


def test_hash_and_base64() -> None:
    assert run("States.Hash('abc', 'SHA-256')").startswith("ba7816bf")
    assert run("States.Base64Decode(States.Base64Encode('hé'))") == "hé"


def test_context_paths_in_arguments() -> None:
    assert run("States.Format('{}', $$.Execution.Name)", {}, {"Execution": {"Name": "e"}}) == "e"


def test_missing_path_argument_is_a_runtime_error() -> None:
    with pytest.raises(StatesError) as info:
        run("States.JsonToString($.nope)")
    assert info.value.error == "States.Runtime"
    assert info.value.terminal


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("States.MathSubtract(1, 2)", "not supported"),
        ("States.MathRandom(1)", "takes 2 to 3"),
        ("States.ArrayLength()", "takes 1"),
        ("States.Format('x'", "expected"),
        ("States.Format('unterminated)", "unterminated"),
    ],
)
def test_bad_calls_are_refused_when_parsed(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_call(text)


def test_array_partition_chunks_with_a_shorter_last_one() -> None:
    # AWS's example: [1..9] in chunks of 4 → [[1,2,3,4],[5,6,7,8],[9]].
    assert run("States.ArrayPartition(States.ArrayRange(1, 9, 1), 4)") == [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9],
    ]
    assert run("States.ArrayPartition($.l, 5)", {"l": []}) == []
    with pytest.raises(StatesError, match="at least 1"):
        run("States.ArrayPartition($.l, 0)", {"l": [1]})


def test_math_random_is_within_start_inclusive_end_exclusive_and_a_seed_repeats() -> None:
    values = {run("States.MathRandom(1, 4)") for _ in range(50)}
    assert values <= {1, 2, 3}
    seeded = [run("States.MathRandom(1, 999, 42)") for _ in range(3)]
    assert len(set(seeded)) == 1
    with pytest.raises(StatesError, match="smaller"):
        run("States.MathRandom(5, 5)")


def test_string_split_splits_on_each_delimiter_character() -> None:
    # AWS's example: States.StringSplit('This.is+a,test=string', '.+,=').
    assert run("States.StringSplit('This.is+a,test=string', '.+,=')") == [
        "This",
        "is",
        "a",
        "test",
        "string",
    ]
    assert run("States.StringSplit($.s, ',')", {"s": "1,2,3,4,5"}) == ["1", "2", "3", "4", "5"]
    with pytest.raises(StatesError, match="strings"):
        run("States.StringSplit($.n, ',')", {"n": 5})


def test_intrinsic_arguments_read_variables() -> None:
    env = Env({}, {}, random.Random(1), {"order": {"lines": [1, 2]}})
    assert parse_call("States.ArrayLength($order.lines)").evaluate(env) == 2


def test_array_range_with_a_negative_step_counts_down() -> None:
    """Undecided by AWS's documentation; see docs/reference/engine.md."""
    assert run("States.ArrayRange(9, 1, -2)") == [9, 7, 5, 3, 1]
    assert run("States.ArrayRange(5, 5, -3)") == [5]
    assert run("States.ArrayRange(1, 9, -2)") == []
    with pytest.raises(StatesError, match="step"):
        run("States.ArrayRange(1, 9, 0)")
