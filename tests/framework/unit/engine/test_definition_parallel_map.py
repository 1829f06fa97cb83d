"""Loading Parallel and Map: nested machines are validated like the top level; Distributed
Map and callbacks inside branches are refused naming the state and the field."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.engine import REFUSED, STATE_FIELDS, load
from stepsaga.engine._definition import MapState, ParallelState
from stepsaga.errors import InvalidDefinition
from tests.framework.unit.engine.helpers import machine, task

PASS = {"Type": "Pass", "End": True}


def refused(definition: Any) -> InvalidDefinition:
    with pytest.raises(InvalidDefinition) as info:
        load(definition)
    return info.value


def parallel(*branches: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"Type": "Parallel", "Branches": list(branches), **ending(fields)}


def inline_map(processor: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"Type": "Map", "ItemProcessor": processor, **ending(fields)}


def ending(fields: dict[str, Any]) -> dict[str, Any]:
    return fields if "Next" in fields else {"End": True, **fields}


def test_a_parallel_and_a_map_load_with_their_nested_tasks() -> None:
    definition = load(
        machine(
            {
                "Fork": parallel(
                    machine({"A": task("a")}),
                    machine({"Each": inline_map(machine({"B": task("b")}), MaxConcurrency=3)}),
                    Next="End",
                ),
                "End": {"Type": "Succeed"},
            }
        )
    )
    fork = definition.states["Fork"]
    assert isinstance(fork, ParallelState)
    each = fork.branches[1].states["Each"]
    assert isinstance(each, MapState)
    assert (each.max_concurrency, each.processor.start_at) == (3, "B")
    assert [s.name for s in definition.task_states()] == ["A", "B"]


@pytest.mark.parametrize(
    ("state", "field", "message"),
    [
        (parallel(), "Branches", "non-empty"),
        (parallel(machine({"X": PASS}), Foo=1), "Foo", "unknown"),
        (parallel({"StartAt": "X", "States": {"X": PASS}, "Foo": 1}), "Branches[0].Foo", "unknown"),
        (parallel({"StartAt": "Y", "States": {"X": PASS}}), "Branches[0].StartAt", "'Y'"),
        (parallel({"StartAt": "X", "States": {}}), "Branches[0].States", "non-empty"),
        (
            inline_map(
                {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "X", "States": {"X": PASS}}
            ),
            "ItemProcessor.ProcessorConfig.Mode",
            "Distributed Map",
        ),
        (
            inline_map(
                {
                    "ProcessorConfig": {"Mode": "INLINE", "ExecutionType": "EXPRESS"},
                    "StartAt": "X",
                    "States": {"X": PASS},
                }
            ),
            "ItemProcessor.ProcessorConfig.ExecutionType",
            "Distributed Map",
        ),
        (
            inline_map(machine({"X": PASS}), ItemReader={"Resource": "s3"}),
            "ItemReader",
            "Distributed Map",
        ),
        (
            inline_map(machine({"X": PASS}), ToleratedFailurePercentage=5),
            "ToleratedFailurePercentage",
            "Distributed Map",
        ),
        (
            {
                "Type": "Map",
                "Iterator": machine({"X": PASS}),
                "ItemProcessor": machine({"Y": PASS}),
                "End": True,
            },
            "ItemProcessor",
            "exactly one",
        ),
        (
            inline_map(machine({"X": PASS}), ItemSelector={}, Parameters={}),
            "Parameters",
            "not both",
        ),
        (inline_map(machine({"X": PASS}), MaxConcurrency=-1), "MaxConcurrency", "integer"),
        (
            inline_map(machine({"X": PASS}), MaxConcurrency=1, MaxConcurrencyPath="$.n"),
            "MaxConcurrencyPath",
            "not both",
        ),
        (inline_map(machine({"X": PASS}), ItemsPath="$.a[*]"), "ItemsPath", "wildcard"),
        (inline_map(machine({"X": PASS}), ItemsPath=None), "ItemsPath", "JSONPath"),
        (
            inline_map(machine({"X": PASS}), Catch=[{"ErrorEquals": ["E"], "Next": "Nope"}]),
            "Catch[0].Next",
            "Nope",
        ),
    ],
)
def test_refusals_name_state_and_field(state: dict[str, Any], field: str, message: str) -> None:
    error = refused(machine({"A": state}))
    assert error.field == field
    assert message in error.message
    assert error.state in ("A", "X")


def test_transitions_stay_inside_their_branch() -> None:
    error = refused(
        machine(
            {
                "Fork": parallel(machine({"Inner": {"Type": "Pass", "Next": "After"}})),
                "After": {"Type": "Succeed"},
            }
        )
    )
    assert (error.state, error.field) == ("Inner", "Next")


def test_unreachable_states_inside_a_branch_are_refused() -> None:
    error = refused(machine({"Fork": parallel(machine({"X": PASS, "Orphan": PASS}))}))
    assert error.state == "Orphan"


def test_state_names_are_unique_across_the_whole_definition() -> None:
    error = refused(machine({"Fork": parallel(machine({"X": PASS}), machine({"X": PASS}))}))
    assert error.state == "X"
    assert "unique" in error.message
    assert "unique" in refused(machine({"Fork": parallel(machine({"Fork": PASS}))})).message


def test_the_refusal_list_is_the_one_the_loader_uses() -> None:
    features = " ".join(refusal.feature for refusal in REFUSED)
    assert "Distributed Map" in features
    assert "JSONata" in features
    assert "Parallel" not in features
    assert "waitForTaskToken" not in features.replace("lambda:invoke.waitForTaskToken", "")
    fields = {field for refusal in REFUSED for field in refusal.fields}
    for field in sorted(fields):
        error = refused(machine({"A": {"Type": "Pass", "End": True, field: 1}}))
        assert error.field == field
        assert "not supported" in error.message


def test_state_fields_name_every_state_type_the_engine_runs() -> None:
    assert set(STATE_FIELDS) == {
        "Task",
        "Pass",
        "Choice",
        "Wait",
        "Succeed",
        "Fail",
        "Parallel",
        "Map",
    }
    assert "ItemSelector" in STATE_FIELDS["Map"]
    assert "ItemReader" not in STATE_FIELDS["Map"]
