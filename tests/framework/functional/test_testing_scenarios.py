"""Every replacement-order scenario runs on the embedded engine (always) and on Step
Functions Local (``make test-docker``; skipped with one line without a Docker daemon), and
the same :meth:`Scenario.check` judges both."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from stepsaga.engine import MockConfig
from stepsaga.errors import SAGA_COMPENSATED, SAGA_COMPENSATION_FAILED
from stepsaga.testing import EngineBackend, MockConfigBuilder, SagaRunner
from stepsaga.testing._scenarios import Scenario
from tests.scenarios import (
    REPLACEMENT_ORDER_SCENARIOS,
    replacement_order_input,
    replacement_order_mock_config,
)
from workflows.replacement_order import saga

EXAMPLE = Path(__file__).parents[3] / "examples" / "mock-config" / "replacement-order.json"


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    return replacement_order_mock_config()


@pytest.mark.parametrize("scenario", REPLACEMENT_ORDER_SCENARIOS, ids=lambda s: s.name)
def test_scenario(saga_backend: SagaRunner, scenario: Scenario) -> None:
    arn = saga_backend.deploy_saga(saga)
    execution = saga_backend.run(arn, replacement_order_input(), test_case=scenario.name)
    scenario.check(execution.history)
    # DescribeExecution agrees with the history.
    assert (execution.status, execution.error) == (scenario.status, scenario.error)


def test_the_library_covers_every_route_of_the_issue() -> None:
    by_name = {s.name: s for s in REPLACEMENT_ORDER_SCENARIOS}
    assert list(by_name) == [
        "HappyPath",
        "RefundThrottledTwice",
        "ShipmentRejected",
        "ReleaseFailsOnce",
        "ReleaseExhausted",
        "ReleaseOutcomeUnknown",
        "ReleaseNotApplied",
        "RefundOutcomeUnknown",
        "AttemptBudgetExhausted",
    ]
    # A release that still fails after its retries is reconciled first, then recorded.
    assert by_name["ReleaseExhausted"].error == SAGA_COMPENSATION_FAILED
    assert by_name["ReleaseExhausted"].path[-3:] == (
        "RecordReleaseReservationFailure",
        "ReleaseReservationDecision",
        "CompensationFailed",
    )
    assert by_name["ReleaseOutcomeUnknown"].error == SAGA_COMPENSATED
    assert by_name["ReleaseNotApplied"].path.count("ReleaseReservation") == 2
    assert by_name["ShipmentRejected"].error == SAGA_COMPENSATED
    assert by_name["RefundThrottledTwice"].retries == {"RefundPayment": 2}
    # Every Task state a scenario reaches is mocked, so no backend calls a real function.
    tasks = {n for n, s in _definition_states().items() if s["Type"] == "Task"}
    for scenario in REPLACEMENT_ORDER_SCENARIOS:
        assert set(scenario.path) & tasks == set(scenario.mocks), scenario.name


def _definition_states() -> dict[str, dict[str, str]]:
    from stepsaga.workflow import compile

    states: dict[str, dict[str, str]] = compile(saga)["States"]
    return states


def test_the_example_mock_config_file_is_current() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") == replacement_order_mock_config().to_json(), (
        "regenerate it: python -m tests.scenarios > " + str(EXAMPLE)
    )
    config = MockConfig.from_file(EXAMPLE)
    for scenario in REPLACEMENT_ORDER_SCENARIOS:
        assert set(config.test_case("replacement-order", scenario.name).responses) == set(
            scenario.mocks
        )


def test_a_scenario_that_expects_otherwise_explains_the_actual_path(
    engine_backend: EngineBackend,
) -> None:
    happy = REPLACEMENT_ORDER_SCENARIOS[0]
    execution = engine_backend.run(
        engine_backend.deploy_saga(saga), replacement_order_input(), test_case="ShipmentRejected"
    )
    with pytest.raises(AssertionError) as failure:
        happy.check(execution.history)
    assert "path differs at state 4: expected the end, got EscalateRefundPayment" in str(
        failure.value
    )
    assert "  3. CreateShipment  caught BusinessRejectedError -> EscalateRefundPayment" in str(
        failure.value
    )


def test_retries_and_catches_not_listed_fail_the_check(engine_backend: EngineBackend) -> None:
    arn = engine_backend.deploy_saga(saga)
    throttled = engine_backend.run(arn, replacement_order_input(), test_case="RefundThrottledTwice")
    with pytest.raises(AssertionError, match="RefundPayment was retried 2 time"):
        replace(REPLACEMENT_ORDER_SCENARIOS[1], retries={}).check(throttled.history)
    rejected = engine_backend.run(arn, replacement_order_input(), test_case="ShipmentRejected")
    with pytest.raises(AssertionError, match=r"unexpected Catch in CreateShipment"):
        replace(REPLACEMENT_ORDER_SCENARIOS[2], caught={}).check(rejected.history)
