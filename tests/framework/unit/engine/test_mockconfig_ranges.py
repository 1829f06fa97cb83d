"""Mock config ranges stay ranges: a 180-byte file cannot grow to gigabytes, and a huge
invocation number is an input error (exit 2), never a crash."""

from __future__ import annotations

import copy
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from stepsaga.engine import MockConfig
from stepsaga.engine._mockconfig import MAX_INVOCATION, MockedResponse, MockTestCase, ResponseRanges
from stepsaga.errors import MockConfigError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script
from tests.framework.unit.engine.test_mockconfig import CONFIG, DEFINITION

THROW = {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "slow down"}}
OK = {"Return": {"StatusCode": 200, "Payload": {"refund": "ok"}}}


def config_with(responses: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(CONFIG)
    config["MockedResponses"]["ThrottledTwiceThenOk"] = responses
    return config


def test_a_huge_range_is_one_entry_not_a_list() -> None:
    raw = config_with({"0-300000000": THROW, "300000001": OK})
    assert len(json.dumps(raw["MockedResponses"]["ThrottledTwiceThenOk"])) < 200
    tracemalloc.start()
    started = time.perf_counter()
    try:
        case = MockConfig.from_dict(raw).test_case("order", "RefundThrottled")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 1
    assert peak < 1_000_000, f"{peak} bytes for one range"
    responses = case.responses["Refund"]
    assert len(responses) == 300_000_002
    assert (
        responses[0]
        == responses[300_000_000]
        == MockedResponse(returns=False, error="Lambda.TooManyRequestsException", cause="slow down")
    )
    assert responses[300_000_001].returns
    assert case.response("Refund", 300_000_002) is None
    assert len(json.dumps(case.to_json())) < 500  # what an execution row stores


def test_lookup_by_bounds_matches_the_expanded_list() -> None:
    a, b, c = (MockedResponse(returns=True, value=n) for n in range(3))
    ranges = ResponseRanges([(1, a), (2, b), (5, c)])
    expanded = [a, a, b, c, c, c]
    assert list(ranges) == expanded
    assert [ranges[i] for i in range(6)] == expanded
    assert ranges == tuple(expanded)
    assert ranges[-1] == c
    assert ranges[1:4] == (a, b, c)
    with pytest.raises(IndexError):
        ranges[6]
    assert ResponseRanges.of(expanded) == ranges
    assert ResponseRanges.of(expanded).ranges == ((0, 1, a), (2, 2, b), (3, 5, c))


def test_a_test_case_round_trips_through_its_stored_form() -> None:
    case = MockConfig.from_dict(config_with({"0-9": THROW, "10": OK})).test_case(
        "order", "RefundThrottled"
    )
    stored = json.loads(json.dumps(case.to_json()))
    assert stored["States"]["Refund"]["Ranges"][0]["To"] == 9
    assert MockTestCase.from_json(stored) == case


def test_an_execution_row_written_with_expanded_responses_still_reads() -> None:
    """Rows written before ranges were kept as ranges list one response per invocation."""
    old = {
        "StateMachine": "order",
        "TestCase": "RefundThrottled",
        "States": {
            "Refund": {
                "MockedResponse": "ThrottledTwiceThenOk",
                "Responses": [THROW, THROW, OK],
            }
        },
    }
    case = MockTestCase.from_json(old)
    assert [r.returns for r in case.responses["Refund"]] == [False, False, True]
    assert case.responses["Refund"].ranges[0][:2] == (0, 1)


@pytest.mark.parametrize(
    "key",
    [
        f"0-{MAX_INVOCATION + 1}",
        str(MAX_INVOCATION + 1),
        "0-" + "9" * 5000,
        "9" * 30,
    ],
    ids=["just above", "single", "thousands of digits", "thirty digits"],
)
def test_an_invocation_number_above_the_maximum_is_refused(key: str) -> None:
    with pytest.raises(MockConfigError) as caught:
        MockConfig.from_dict(config_with({key: THROW}))
    assert f"above the maximum {MAX_INVOCATION}" in caught.value.message
    assert len(caught.value.message) < 300


def test_the_maximum_itself_is_accepted() -> None:
    config = MockConfig.from_dict(config_with({f"0-{MAX_INVOCATION}": THROW}))
    assert len(config.mocked_responses["ThrottledTwiceThenOk"]) == MAX_INVOCATION + 1


@pytest.mark.parametrize("key", ["\u0660", "0-\u0663", "\uff11", "0x1", "-1", "1-", "1 2"])
def test_invocation_numbers_are_ascii_digits(key: str) -> None:
    with pytest.raises(MockConfigError, match="is not an invocation number"):
        MockConfig.from_dict(config_with({key: THROW}))


def test_a_state_mapped_to_a_non_string_is_refused() -> None:
    config = copy.deepcopy(CONFIG)
    config["StateMachines"]["order"]["TestCases"]["HappyPath"]["Reserve"] = ["ReserveOk"]
    with pytest.raises(MockConfigError, match="MockedResponses does not define"):
        MockConfig.from_dict(config)


def test_an_execution_retries_through_a_huge_range(make_engine: MakeEngine, tmp_path: Path) -> None:
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps(config_with({"0-1": THROW, "2-300000000": OK})))
    engine = make_engine(
        {"reserve": Script({"id": "r"}), "refund": Script({}), "recon": Script({})},
        mock_config=MockConfig.from_file(path),
        time_scale=0,
    )
    arn = engine.create_state_machine("order", DEFINITION)
    result = engine.start_execution(arn, "e1", {}, test_case="RefundThrottled")
    assert result["status"] == "RUNNING"  # through two throttles, now waiting on Recon
