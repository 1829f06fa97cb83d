"""The replacement-order saga compiled to JSONata passes every scenario the JSONPath one
does, on the embedded engine, and runs the same way: the same states entered, the same
Lambda parameters scheduled, the same outputs at every state exit, the same end."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from stepsaga.testing import EngineBackend, MockConfigBuilder
from stepsaga.testing._backends import Execution
from stepsaga.testing._scenarios import Scenario
from tests.scenarios import (
    REPLACEMENT_ORDER_SCENARIOS,
    replacement_order_input,
    replacement_order_mock_config,
)
from workflows.replacement_order import saga

JSONATA = dataclasses.replace(saga, query_language="JSONata")
TOKEN = re.compile(r"sst1\.[0-9a-f]{48}")  # a task token: random in each execution


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder:
    return replacement_order_mock_config()


def trace(execution: Execution) -> list[tuple[str, Any]]:
    """What must not depend on the query language: each event's type and its data (the
    execution's own name and task tokens, which the payloads carry, written as placeholders)."""
    name = execution.arn.rsplit(":", 1)[-1]
    out: list[tuple[str, Any]] = []
    for event in execution.history.events:
        details: dict[str, Any] = next(
            (v for k, v in event.items() if k.endswith("EventDetails")), {}
        )
        data = {
            k: json.loads(v) if k in ("input", "output", "parameters") and v else v
            for k, v in details.items()
            if k in ("name", "input", "output", "parameters", "error", "cause")
        }
        out.append((event["type"], data))
    text = json.dumps(out).replace(json.dumps(name), '"<name>"')
    normalized: list[tuple[str, Any]] = json.loads(TOKEN.sub("<token>", text))
    return normalized


@pytest.mark.parametrize("scenario", REPLACEMENT_ORDER_SCENARIOS, ids=lambda s: s.name)
def test_the_jsonata_saga_passes_the_scenario_as_the_jsonpath_one_does(
    engine_backend: EngineBackend, scenario: Scenario
) -> None:
    # Both deploy under the saga's name (the mock config's); each execution keeps its own.
    jsonata = engine_backend.run(
        engine_backend.deploy_saga(JSONATA), replacement_order_input(), test_case=scenario.name
    )
    scenario.check(jsonata.history)
    assert (jsonata.status, jsonata.error) == (scenario.status, scenario.error)

    jsonpath = engine_backend.run(
        engine_backend.deploy_saga(saga), replacement_order_input(), test_case=scenario.name
    )
    ours, reference = trace(jsonata), trace(jsonpath)
    for index, (event, expected) in enumerate(zip(ours, reference, strict=False)):
        assert event == expected, f"event {index + 1} differs"
    assert len(ours) == len(reference)
    assert (jsonata.output, jsonata.cause) == (jsonpath.output, jsonpath.cause)
