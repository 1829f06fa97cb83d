"""The multi-warehouse scenarios (a per-item step and a parallel group) run on the embedded
engine, moto and LocalStack (``make test``) and on Step Functions Local (``make
test-docker``; skipped with one line without a Docker daemon); the same
:meth:`Scenario.check` judges each."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepsaga.testing import MockConfigBuilder, SagaRunner
from stepsaga.testing._scenarios import Scenario
from stepsaga.workflow import compile
from tests.deviations import LOCALSTACK_SINGLE_MATCH
from tests.multi_warehouse_scenarios import (
    MULTI_WAREHOUSE_SCENARIOS,
    multi_warehouse_input,
    multi_warehouse_mock_config,
)
from workflows.multi_warehouse import saga

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    return multi_warehouse_mock_config()


#: Where a backend deviates from AWS's documentation, per scenario (``saga_backend`` xfails it).
DEVIATIONS = {"ShipmentBranchRejected": pytest.mark.deviates(localstack=LOCALSTACK_SINGLE_MATCH)}


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(s, id=s.name, marks=[DEVIATIONS[s.name]] if s.name in DEVIATIONS else [])
        for s in MULTI_WAREHOUSE_SCENARIOS
    ],
)
def test_scenario(saga_backend: SagaRunner, scenario: Scenario) -> None:
    arn = saga_backend.deploy_saga(saga)
    execution = saga_backend.run(arn, multi_warehouse_input(), test_case=scenario.name)
    scenario.check(execution.history)
    assert (execution.status, execution.error) == (scenario.status, scenario.error)


def test_every_task_a_scenario_reaches_is_mocked() -> None:
    """So no backend ever calls a real function."""
    tasks: set[str] = set()
    pending = [compile(saga)]
    while pending:
        machine = pending.pop()
        for name, state in machine["States"].items():
            if state["Type"] == "Task":
                tasks.add(name)
            pending += state.get("Branches", [])
            if "ItemProcessor" in state:
                pending.append(state["ItemProcessor"])
    for scenario in MULTI_WAREHOUSE_SCENARIOS:
        assert set(scenario.path) & tasks == set(scenario.mocks), scenario.name


def test_the_example_mock_config_is_the_scenarios_one() -> None:
    example = EXAMPLES / "mock-config" / "multi-warehouse-replacement.json"
    assert example.read_text(encoding="utf-8") == multi_warehouse_mock_config().to_json(), (
        f"regenerate it: python -m tests.multi_warehouse_scenarios > {example}"
    )
