"""The MockConfig builder writes exactly the Step Functions Local format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepsaga.engine import MockConfig
from stepsaga.engine._mockconfig import MockedResponse
from stepsaga.testing import MockConfigBuilder, Return, Throw

OK = Return.payload({"id": "R-1"})


def test_a_test_case_in_the_file_format() -> None:
    builder = MockConfigBuilder().test_case(
        "orders",
        "RetryPath",
        {
            "Reserve": OK,
            "Refund": [Throw("TransientError", "throttled", times=2), Return.payload({"id": 2})],
        },
    )
    assert builder.to_dict() == {
        "StateMachines": {
            "orders": {
                "TestCases": {
                    "RetryPath": {"Reserve": "Reserve_RetryPath", "Refund": "Refund_RetryPath"}
                }
            }
        },
        "MockedResponses": {
            "Reserve_RetryPath": {"0": {"Return": {"StatusCode": 200, "Payload": {"id": "R-1"}}}},
            "Refund_RetryPath": {
                "0-1": {"Throw": {"Error": "TransientError", "Cause": "throttled"}},
                "2": {"Return": {"StatusCode": 200, "Payload": {"id": 2}}},
            },
        },
    }


def test_consecutive_equal_responses_share_one_range() -> None:
    throttled = Throw("Lambda.TooManyRequestsException")
    builder = MockConfigBuilder().test_case(
        "m", "c", {"S": [throttled, throttled, Return(1), Return(True), Return(1, times=2)]}
    )
    # JSON equality: true is not 1, so the two Returns of 1 around it stay apart.
    assert list(builder.to_dict()["MockedResponses"]["S_c"]) == ["0-1", "2", "3", "4-5"]


def test_a_states_identical_responses_are_shared_between_test_cases() -> None:
    builder = (
        MockConfigBuilder()
        .test_case("m", "First", {"A": OK, "B": OK})
        .test_case("m", "Second", {"A": OK, "B": Throw("E")})
    )
    cases = builder.to_dict()["StateMachines"]["m"]["TestCases"]
    assert cases["Second"] == {"A": "A_First", "B": "B_Second"}
    assert cases["First"]["B"] == "B_First"  # the same responses, another state: own name
    assert sorted(builder.to_dict()["MockedResponses"]) == ["A_First", "B_First", "B_Second"]


def test_a_response_name_taken_by_another_state_gets_a_suffix() -> None:
    builder = MockConfigBuilder().test_case("m", "B_c", {"A": OK}).test_case("m", "c", {"A_B": OK})
    # "A" in case "B_c" and "A_B" in case "c" both want the name "A_B_c".
    assert builder.to_dict()["StateMachines"]["m"]["TestCases"]["c"] == {"A_B": "A_B_c_2"}


def test_round_trip_through_the_engine_reader(tmp_path: Path) -> None:
    builder = MockConfigBuilder().test_case(
        "m", "c", {"S": [Throw("E", "why", times=3), Return({"ok": 1})], "T": Return(None)}
    )
    path = builder.write(tmp_path / "MockConfigFile.json")
    parsed = MockConfig.from_file(path).test_case("m", "c")
    assert parsed.responses["S"] == (
        *[MockedResponse(returns=False, error="E", cause="why")] * 3,
        MockedResponse(returns=True, value={"ok": 1}),
    )
    assert parsed.responses["T"] == (MockedResponse(returns=True, value=None),)
    assert json.loads(path.read_text(encoding="utf-8")) == builder.to_dict()
    assert builder.build().test_case("m", "c") == parsed


def test_several_state_machines_in_one_file() -> None:
    builder = MockConfigBuilder().test_case("a", "c", {"S": OK}).test_case("b", "c", {"S": OK})
    assert set(builder.to_dict()["StateMachines"]) == {"a", "b"}
    assert builder.build().test_case("b", "c").response_names == {"S": "S_c"}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)
_response = st.one_of(
    st.builds(Return, _json, times=st.integers(1, 3)),
    st.builds(
        Throw,
        st.sampled_from(["TransientError", "States.Timeout", "Lambda.ServiceException"]),
        st.text(max_size=10),
        times=st.integers(1, 3),
    ),
)


@given(st.lists(_response, min_size=1, max_size=6))
def test_any_response_list_expands_back_to_itself(responses: list[Return | Throw]) -> None:
    parsed = MockConfigBuilder().test_case("m", "c", {"S": responses}).build().test_case("m", "c")
    expected: list[MockedResponse] = []
    for r in responses:
        one = (
            MockedResponse(returns=True, value=r.value)
            if isinstance(r, Return)
            else MockedResponse(returns=False, error=r.error, cause=r.cause)
        )
        expected.extend([one] * r.times)
    assert [json.dumps(m.to_json(), sort_keys=True) for m in parsed.responses["S"]] == [
        json.dumps(m.to_json(), sort_keys=True) for m in expected
    ]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Return(1, times=0), "times must be an integer >= 1, got 0"),
        (lambda: Throw("E", times=True), "times must be an integer >= 1, got True"),
        (lambda: Return(float("nan")), "Return value is not JSON"),
        (lambda: Return({1j}), "Return value is not JSON"),
        (lambda: Throw(""), "Throw needs an error name, got ''"),
        (lambda: Throw("E", 3), "Throw cause must be a string, got 3"),  # type: ignore[arg-type]
    ],
)
def test_invalid_responses_are_refused(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        make()


@pytest.mark.parametrize(
    ("machine", "case", "states", "message"),
    [
        ("", "c", {"S": OK}, "state machine name must be a non-empty string, got ''"),
        ("m", "", {"S": OK}, "test case name must be a non-empty string, got ''"),
        ("m", "c", {}, "test case 'c' mocks no state"),
        ("m", "c", {"": OK}, "test case 'c': state names are non-empty strings"),
        ("m", "c", {"S": []}, "test case 'c': state 'S' has no response"),
        ("m", "c", {"S": [OK, {"Return": 1}]}, "responses are Return or Throw, got {'Return': 1}"),
    ],
)
def test_invalid_test_cases_are_refused(machine: str, case: str, states: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        MockConfigBuilder().test_case(machine, case, states)


def test_a_test_case_is_defined_once() -> None:
    builder = MockConfigBuilder().test_case("m", "c", {"S": OK})
    with pytest.raises(ValueError, match="test case 'c' of 'm' is already defined"):
        builder.test_case("m", "c", {"S": OK})


def test_return_payload_is_the_lambda_invoke_result() -> None:
    assert Return.payload({"a": 1}, times=2) == Return({"StatusCode": 200, "Payload": {"a": 1}}, 2)
