"""``Saga(query_language="JSONata")`` and the JSONPath → JSONata translation behind it: every
construct the compiler can emit translates to a machine the engine runs with the same
result, and what does not translate is refused naming the state and field."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga import Saga
from stepsaga._project.home import StateHome
from stepsaga._util.clock import ManualClock
from stepsaga.engine import LocalEngine, load
from stepsaga.engine._definition import LAMBDA_INVOKE
from stepsaga.errors import SagaDefinitionError
from stepsaga.workflow import compile
from stepsaga.workflow._graph import GraphFormat, draw
from stepsaga.workflow._jsonata import TranslationError, to_jsonata
from tests.framework.unit.workflow.test_groups import sagas
from workflows.replacement_order import saga


def machine(states: dict[str, Any]) -> dict[str, Any]:
    return {"StartAt": next(iter(states)), "States": states}


def echo_task(**fields: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {
            "FunctionName": "echo",
            "Payload": {"v.$": "$.v", "name.$": "$$.State.Name"},
        },
        **fields,
    }


DATA = {"v": 3, "s": "applied", "items": [{"sku": "A"}, {"sku": "B"}], "wait": 0, "err": "E.x"}

MACHINES: dict[str, dict[str, Any]] = {
    "pass shapes": machine(
        {
            "A": {
                "Type": "Pass",
                "Parameters": {"case.$": "$", "results": {}, "list": [1, {"x.$": "$.v"}]},
                "Next": "B",
            },
            "B": {"Type": "Pass", "Result": {"r": 1}, "ResultPath": "$.results.B", "Next": "C"},
            "C": {"Type": "Pass", "InputPath": "$.case", "ResultPath": "$.copy", "Next": "D"},
            "D": {"Type": "Pass", "ResultPath": None, "OutputPath": "$.copy", "End": True},
        }
    ),
    "task result selector and path": machine(
        {
            "T": echo_task(
                ResultSelector={"got.$": "$.Payload", "code.$": "$.StatusCode"},
                ResultPath="$.out.t",
                Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "F"}],
                End=True,
            ),
            "F": {"Type": "Fail", "ErrorPath": "$.failure.Error", "CausePath": "$.failure.Cause"},
        }
    ),
    "choice operators": machine(
        {
            "C": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.s", "StringEquals": "nope", "Next": "X"},
                    {"Variable": "$.v", "NumericGreaterThan": 5, "Next": "X"},
                    {"Variable": "$.s", "NumericGreaterThan": 1, "Next": "X"},
                    {
                        "And": [
                            {"Variable": "$.v", "NumericLessThanEquals": 3},
                            {"Not": {"Variable": "$.missing", "IsPresent": True}},
                            {"Variable": "$.s", "IsString": True},
                        ],
                        "Next": "Y",
                    },
                ],
                "Default": "X",
            },
            "X": {"Type": "Fail", "Error": "Wrong"},
            "Y": {"Type": "Succeed", "OutputPath": "$.items"},
        }
    ),
    "wait and fail paths": machine(
        {
            "W": {"Type": "Wait", "SecondsPath": "$.wait", "Next": "F"},
            "F": {"Type": "Fail", "ErrorPath": "$.err", "Cause": "static"},
        }
    ),
    "parallel and map": machine(
        {
            "P": {
                "Type": "Parallel",
                "Parameters": {"v.$": "$.v"},
                "Branches": [
                    machine({"B1": {"Type": "Pass", "End": True}}),
                    machine({"B2": {"Type": "Pass", "Result": 2, "End": True}}),
                ],
                "ResultPath": "$.parallel",
                "Next": "M",
            },
            "M": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "ItemSelector": {
                    "sku.$": "$$.Map.Item.Value.sku",
                    "index.$": "$$.Map.Item.Index",
                    "v.$": "$.v",
                },
                "MaxConcurrency": 1,
                "ItemProcessor": machine({"I": {"Type": "Pass", "End": True}}),
                "ResultSelector": {"lines.$": "$", "skus.$": "$[*].sku", "none.$": "$[*].nope"},
                "ResultPath": "$.map",
                "End": True,
            },
        }
    ),
    "variables": machine(
        {
            "A": {"Type": "Pass", "Assign": {"kept.$": "$.v"}, "Next": "B"},
            "B": {"Type": "Pass", "Parameters": {"kept.$": "$kept"}, "End": True},
        }
    ),
}


def run(tmp_path: Path, definition: dict[str, Any], name: str) -> dict[str, Any]:
    engine = LocalEngine(
        StateHome(tmp_path / name),
        {"echo": lambda event, context: event},
        clock=ManualClock(),
        sleeper=lambda seconds: None,
        rng=random.Random(1),
    )
    try:
        arn = engine.create_state_machine("m", definition)
        result = engine.start_execution(arn, "e", json.dumps(DATA))
        return {k: result.get(k) for k in ("status", "output", "error", "cause")}
    finally:
        engine.close()


@pytest.mark.parametrize("name", MACHINES)
def test_the_translation_runs_to_the_same_result(tmp_path: Path, name: str) -> None:
    definition = MACHINES[name]
    translated = to_jsonata(definition)
    assert translated["QueryLanguage"] == "JSONata"
    load(translated)  # the engine refuses nothing the translation emits
    assert run(tmp_path, translated, "jsonata") == run(tmp_path, definition, "jsonpath")


def test_saga_query_language_selects_the_compiled_language() -> None:
    jsonpath = compile(saga)
    jsonata = compile(dataclasses.replace(saga, query_language="JSONata"))
    assert "QueryLanguage" not in jsonpath
    assert jsonata["QueryLanguage"] == "JSONata"
    assert list(jsonata["States"]) == list(jsonpath["States"])
    for name, state in jsonata["States"].items():
        assert state["Type"] == jsonpath["States"][name]["Type"]
        assert not {"Parameters", "ResultSelector", "ResultPath", "InputPath"} & set(state)
    load(jsonata)


def test_an_unknown_query_language_is_refused() -> None:
    with pytest.raises(SagaDefinitionError, match="query_language"):
        dataclasses.replace(saga, query_language="XPath")


@pytest.mark.parametrize(
    ("state", "field"),
    [
        ({"Type": "Pass", "Parameters": {"x.$": "States.UUID()"}, "End": True}, "x.$"),
        ({"Type": "Pass", "Parameters": {"x.$": "$.a[?(@.b)]"}, "End": True}, "x.$"),
        ({"Type": "Pass", "Parameters": {"x.$": "$.a[*].b[*]"}, "End": True}, "x.$"),
        (
            {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.t", "TimestampEquals": "2026-01-01T00:00:00Z", "Next": "P"}
                ],
            },
            "TimestampEquals",
        ),
    ],
)
def test_what_does_not_translate_is_refused_naming_the_field(
    state: dict[str, Any], field: str
) -> None:
    with pytest.raises(TranslationError, match="state 'P'") as info:
        to_jsonata(machine({"P": state}))
    assert field in str(info.value)


@pytest.mark.parametrize("fmt", list(GraphFormat))
def test_the_graph_of_the_jsonata_saga_is_the_jsonpath_ones(fmt: GraphFormat) -> None:
    jsonata = compile(dataclasses.replace(saga, query_language="JSONata"))
    assert draw(jsonata, fmt, name=saga.name) == draw(compile(saga), fmt, name=saga.name)


KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda k: k not in ("and", "or", "in", "true", "false", "null", "function")
)
SCALARS = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=10,
)


def paths(document: Any, prefix: str = "$") -> list[str]:
    """Every reference path into ``document`` made of names (what the compiler emits)."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths(value, f"{prefix}.{key}")
    return found


@settings(max_examples=30, deadline=None)
@given(data=st.dictionaries(KEYS, DOCUMENTS, min_size=1, max_size=4), choices=st.data())
def test_any_payload_template_and_result_path_translate_exactly(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any], choices: st.DataObject
) -> None:
    available = paths(data)
    template = choices.draw(
        st.dictionaries(KEYS, st.sampled_from(available).map(lambda p: ("path", p)) | SCALARS)
    )
    parameters = {
        (f"{k}.$" if isinstance(v, tuple) else k): (v[1] if isinstance(v, tuple) else v)
        for k, v in template.items()
    }
    result_path = choices.draw(st.sampled_from([*available, "$.new.place", None]))
    definition = machine(
        {"P": {"Type": "Pass", "Parameters": parameters, "ResultPath": result_path, "End": True}}
    )
    home = tmp_path_factory.mktemp("translate")
    expected = run_with(home, definition, data, "jsonpath")
    assert run_with(home, to_jsonata(definition), data, "jsonata") == expected


def run_with(home: Path, definition: dict[str, Any], data: Any, name: str) -> dict[str, Any]:
    engine = LocalEngine(StateHome(home / name), {}, clock=ManualClock(), rng=random.Random(1))
    try:
        arn = engine.create_state_machine("m", definition)
        result = engine.start_execution(arn, "e", json.dumps(data))
        return {k: result.get(k) for k in ("status", "output", "error")}
    finally:
        engine.close()


@pytest.mark.slow  # every example compiles and loads a big saga twice: ~0.5 s each
@settings(deadline=None, max_examples=30)
@given(sagas())
def test_any_saga_of_steps_groups_and_per_item_steps_compiles_to_jsonata(generated: Saga) -> None:
    """``compile`` loads the JSONata machine into the engine; same states as the JSONPath."""
    jsonata = compile(dataclasses.replace(generated, query_language="JSONata"))
    jsonpath = compile(generated)
    assert load(jsonata).digest != load(jsonpath).digest
    assert {t.name for t in load(jsonata).task_states()} == {
        t.name for t in load(jsonpath).task_states()
    }
