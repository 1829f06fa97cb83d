"""The multi-warehouse saga (a per-item step and a parallel group) compiled to JSONata
passes every scenario the JSONPath one does on the embedded engine, with the same events.

Iterations run on threads and share each state's mocked responses in the order they ask
for them, so which line gets the uncertain outcome varies from run to run in either
language: events are compared as a multiset of (type, state), and the data flow is
compared event by event on the replacement-order saga (``test_jsonata_scenarios.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from stepsaga.testing import EngineBackend, MockConfigBuilder
from stepsaga.testing._backends import Execution
from stepsaga.testing._scenarios import Scenario
from tests.framework.functional.test_jsonata_scenarios import trace
from tests.multi_warehouse_scenarios import (
    MULTI_WAREHOUSE_SCENARIOS,
    multi_warehouse_input,
    multi_warehouse_mock_config,
)
from workflows.multi_warehouse import saga

JSONATA = dataclasses.replace(saga, query_language="JSONata")


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    return multi_warehouse_mock_config()


@pytest.mark.parametrize("scenario", MULTI_WAREHOUSE_SCENARIOS, ids=lambda s: s.name)
def test_the_jsonata_saga_passes_the_scenario_as_the_jsonpath_one_does(
    engine_backend: EngineBackend, scenario: Scenario
) -> None:
    jsonata = engine_backend.run(
        engine_backend.deploy_saga(JSONATA), multi_warehouse_input(), test_case=scenario.name
    )
    scenario.check(jsonata.history)
    assert (jsonata.status, jsonata.error) == (scenario.status, scenario.error)

    jsonpath = engine_backend.run(
        engine_backend.deploy_saga(saga), multi_warehouse_input(), test_case=scenario.name
    )
    assert shape(jsonata) == shape(jsonpath)
    assert (jsonata.status, jsonata.error) == (jsonpath.status, jsonpath.error)


def shape(execution: Execution) -> list[tuple[str, str]]:
    return sorted((kind, str(data.get("name", ""))) for kind, data in trace(execution))
