"""Workflow variables (Assign) in JSONPath states, as AWS documents them: values computed from
what the state was entered with, in effect once it exits, one scope per Parallel branch and
Map iteration that reads the enclosing ones and cannot assign them, kept across a redrive."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepsaga.engine import LocalEngine
from stepsaga.errors import BusinessRejectedError
from tests.framework.unit.engine.conftest import MakeEngine
from tests.framework.unit.engine.helpers import Script, machine, task


def run(
    make_engine: MakeEngine, definition: dict[str, Any], data: Any = None, **handlers: Any
) -> tuple[LocalEngine, dict[str, Any]]:
    engine = make_engine(handlers)
    arn = engine.create_state_machine("vars", definition)
    return engine, engine.start_execution(arn, "e1", json.dumps(data or {}))


def exited(engine: LocalEngine, arn: str, name: str) -> dict[str, Any]:
    for event in engine.get_execution_history(arn)["events"]:
        details = event.get("stateExitedEventDetails")
        if details and details["name"] == name:
            return dict(details)
    raise AssertionError(name)


def test_a_variable_assigned_in_one_state_is_read_in_a_later_one(make_engine: MakeEngine) -> None:
    engine, result = run(
        make_engine,
        machine(
            {
                "Remember": {
                    "Type": "Pass",
                    "Assign": {"orderId.$": "$.order.id", "fixed": {"n": 1}},
                    "Next": "Forget",
                },
                "Forget": {"Type": "Pass", "Result": {}, "Next": "Use"},
                "Use": {
                    "Type": "Pass",
                    "Parameters": {"id.$": "$orderId", "n.$": "$fixed.n"},
                    "End": True,
                },
            }
        ),
        {"order": {"id": "ORD-1"}},
    )
    assert result["status"] == "SUCCEEDED", result
    assert json.loads(result["output"]) == {"id": "ORD-1", "n": 1}
    details = exited(engine, result["executionArn"], "Remember")
    assert details["assignedVariables"] == {"orderId": '"ORD-1"', "fixed": '{"n":1}'}
    assert details["assignedVariablesDetails"] == {"truncated": False}


def test_assignments_read_the_values_from_state_entry(make_engine: MakeEngine) -> None:
    _, result = run(
        make_engine,
        machine(
            {
                "One": {"Type": "Pass", "Assign": {"x": 1}, "Next": "Swap"},
                # x and y are computed from the values at entry: y gets the old x.
                "Swap": {"Type": "Pass", "Assign": {"x": 2, "y.$": "$x"}, "Next": "Show"},
                "Show": {
                    "Type": "Pass",
                    "Parameters": {"x.$": "$x", "y.$": "$y"},
                    "End": True,
                },
            }
        ),
    )
    assert json.loads(result["output"]) == {"x": 2, "y": 1}


def test_a_variable_never_assigned_is_a_runtime_error(make_engine: MakeEngine) -> None:
    _, result = run(
        make_engine,
        machine({"Use": {"Type": "Pass", "Parameters": {"v.$": "$nope"}, "End": True}}),
    )
    assert result["status"] == "FAILED"
    assert result["error"] == "States.Runtime"
    assert "$nope" in result["cause"]


def test_task_assign_reads_the_raw_result_and_intrinsics_take_variables(
    make_engine: MakeEngine,
) -> None:
    _, result = run(
        make_engine,
        machine(
            {
                "Reserve": task(
                    "reserve",
                    ResultSelector={"ok": True},
                    Assign={"reservation.$": "$.Payload.id", "lines.$": "$.Payload.lines"},
                    ResultPath=None,
                    Next="Report",
                ),
                "Report": {
                    "Type": "Pass",
                    "Parameters": {
                        "text.$": "States.Format('{} has {} lines', $reservation, "
                        "States.ArrayLength($lines))"
                    },
                    "End": True,
                },
            }
        ),
        reserve=Script({"id": "R-9", "lines": [1, 2, 3]}),
    )
    assert json.loads(result["output"]) == {"text": "R-9 has 3 lines"}


def test_choice_rules_read_variables_and_assign_per_rule_or_default(
    make_engine: MakeEngine,
) -> None:
    definition = machine(
        {
            "Set": {"Type": "Pass", "Assign": {"limit.$": "$.limit"}, "Next": "Decide"},
            "Decide": {
                "Type": "Choice",
                "Choices": [
                    {
                        "Variable": "$.amount",
                        "NumericGreaterThanPath": "$limit",
                        "Assign": {"route": "review"},
                        "Next": "Done",
                    }
                ],
                "Assign": {"route": "auto"},
                "Default": "Done",
            },
            "Done": {"Type": "Pass", "Parameters": {"route.$": "$route"}, "End": True},
        }
    )
    engine = make_engine({})
    arn = engine.create_state_machine("choice", definition)
    high = engine.start_execution(arn, "high", json.dumps({"amount": 50, "limit": 10}))
    low = engine.start_execution(arn, "low", json.dumps({"amount": 5, "limit": 10}))
    assert json.loads(high["output"]) == {"route": "review"}
    assert json.loads(low["output"]) == {"route": "auto"}


def test_catch_assign_reads_the_error_output(make_engine: MakeEngine) -> None:
    _, result = run(
        make_engine,
        machine(
            {
                "Refund": task(
                    "refund",
                    Catch=[
                        {
                            "ErrorEquals": ["States.ALL"],
                            "Assign": {"failure.$": "$.Error"},
                            "ResultPath": None,
                            "Next": "Compensate",
                        }
                    ],
                ),
                "Compensate": {
                    "Type": "Pass",
                    "Parameters": {"because.$": "$failure"},
                    "End": True,
                },
            }
        ),
        refund=Script(BusinessRejectedError("no")),
    )
    assert json.loads(result["output"]) == {"because": "BusinessRejectedError"}


def test_map_iterations_read_outer_variables_and_their_own_do_not_leak(
    make_engine: MakeEngine,
) -> None:
    _, result = run(
        make_engine,
        machine(
            {
                "Set": {
                    "Type": "Pass",
                    "Assign": {"currency": "EUR", "lines.$": "$.lines"},
                    "Next": "Each",
                },
                "Each": {
                    "Type": "Map",
                    "ItemsPath": "$lines",
                    "ItemProcessor": machine(
                        {
                            "Mine": {"Type": "Pass", "Assign": {"inner.$": "$.sku"}, "Next": "Use"},
                            "Use": {
                                "Type": "Pass",
                                "Parameters": {"sku.$": "$inner", "currency.$": "$currency"},
                                "End": True,
                            },
                        }
                    ),
                    "Next": "After",
                },
                "After": {
                    "Type": "Pass",
                    "Parameters": {"items.$": "$", "inner.$": "$inner"},
                    "End": True,
                },
            }
        ),
        {"lines": [{"sku": "A"}, {"sku": "B"}]},
    )
    # Inside, each iteration had its own $inner; after the Map, $inner is not defined.
    assert result["status"] == "FAILED"
    assert result["error"] == "States.Runtime"
    assert "$inner" in result["cause"]


def test_a_branch_cannot_assign_a_variable_of_the_enclosing_scope(
    make_engine: MakeEngine,
) -> None:
    _, result = run(
        make_engine,
        machine(
            {
                "Set": {"Type": "Pass", "Assign": {"total": 0}, "Next": "Fork"},
                "Fork": {
                    "Type": "Parallel",
                    "Branches": [
                        machine({"Add": {"Type": "Pass", "Assign": {"total": 1}, "End": True}})
                    ],
                    "End": True,
                },
            }
        ),
    )
    assert result["status"] == "FAILED"
    assert result["error"] == "States.Runtime"
    assert "enclosing scope" in result["cause"]


def test_parallel_branches_read_outer_variables(make_engine: MakeEngine) -> None:
    _, result = run(
        make_engine,
        machine(
            {
                "Set": {"Type": "Pass", "Assign": {"who": "ops"}, "Next": "Fork"},
                "Fork": {
                    "Type": "Parallel",
                    "Branches": [
                        machine(
                            {"A": {"Type": "Pass", "Parameters": {"a.$": "$who"}, "End": True}}
                        ),
                        machine(
                            {"B": {"Type": "Pass", "Parameters": {"b.$": "$who"}, "End": True}}
                        ),
                    ],
                    "End": True,
                },
            }
        ),
    )
    assert json.loads(result["output"]) == [{"a": "ops"}, {"b": "ops"}]


def test_a_redrive_keeps_the_variables_assigned_before_the_failure(
    make_engine: MakeEngine,
) -> None:
    flaky = Script(BusinessRejectedError("down"), {"ok": 1})
    engine = make_engine({"ship": flaky})
    arn = engine.create_state_machine(
        "redrive",
        machine(
            {
                "Set": {"Type": "Pass", "Assign": {"ref.$": "$.ref"}, "Next": "Ship"},
                "Ship": task(
                    "ship",
                    Parameters={"FunctionName": "ship", "Payload": {"ref.$": "$ref"}},
                    Next="Done",
                ),
                "Done": {"Type": "Pass", "Parameters": {"ref.$": "$ref"}, "End": True},
            }
        ),
    )
    failed = engine.start_execution(arn, "r1", json.dumps({"ref": "REF-7"}))
    assert failed["status"] == "FAILED"
    redriven = engine.redrive_execution(failed["executionArn"])
    assert redriven["status"] == "SUCCEEDED", redriven
    assert json.loads(redriven["output"]) == {"ref": "REF-7"}
    assert flaky.events[-1] == {"ref": "REF-7"}


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True).filter(
    lambda n: n != "states"
)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(variables=st.dictionaries(NAMES, VALUES, min_size=1, max_size=4))
def test_any_assigned_json_value_reads_back_unchanged(
    make_engine: MakeEngine, variables: dict[str, Any]
) -> None:
    definition = machine(
        {
            "Set": {
                "Type": "Pass",
                "Assign": {f"{n}.$": f"$.{n}" for n in variables},
                "Next": "Get",
            },
            "Get": {
                "Type": "Pass",
                "Parameters": {f"{n}.$": f"${n}" for n in variables},
                "End": True,
            },
        }
    )
    engine = make_engine({})  # one store for every example: each gets its own machine
    name = hashlib.sha256(json.dumps(variables, sort_keys=True).encode()).hexdigest()[:40]
    arn = engine.create_state_machine(f"m{name}", definition)
    result = engine.start_execution(arn, "e", json.dumps(variables))
    assert json.loads(result["output"]) == variables


def test_an_iteration_waiting_for_a_callback_keeps_its_variables(
    make_engine: MakeEngine,
) -> None:
    """Each Map iteration assigns its own ``$mine``, then waits for a task token; another
    engine (another process, as ``stepsaga recon resolve`` is) answers, and the iteration
    goes on with the value it had, next to the top level's ``$batch``."""
    tokens: dict[str, str] = {}

    def wait(event: Any, context: Any) -> Any:
        tokens[event["id"]] = event["token"]
        return {}

    iteration = machine(
        {
            "Mine": {"Type": "Pass", "Assign": {"mine.$": "$.id"}, "Next": "Wait"},
            "Wait": task(
                "wait",
                Resource="arn:aws:states:::lambda:invoke.waitForTaskToken",
                Parameters={
                    "FunctionName": "wait",
                    "Payload": {"token.$": "$$.Task.Token", "id.$": "$mine"},
                },
                ResultPath=None,
                Next="Show",
            ),
            "Show": {
                "Type": "Pass",
                "Parameters": {"mine.$": "$mine", "batch.$": "$batch"},
                "End": True,
            },
        }
    )
    definition = machine(
        {
            "Batch": {"Type": "Pass", "Assign": {"batch": "B-1"}, "Next": "Each"},
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "ItemSelector": {"id.$": "$$.Map.Item.Value"},
                "ItemProcessor": iteration,
                "End": True,
            },
        }
    )
    engine = make_engine({"wait": wait})
    arn = engine.create_state_machine("waits", definition)
    started = engine.start_execution(arn, "e", json.dumps({"items": ["a", "b"]}))
    assert started["status"] == "RUNNING"
    engine.close()

    other = make_engine({"wait": wait})
    other.send_task_success(tokens["b"], "{}")
    done = other.send_task_success(tokens["a"], "{}")
    assert done["status"] == "SUCCEEDED", done
    assert json.loads(done["output"]) == [
        {"mine": "a", "batch": "B-1"},
        {"mine": "b", "batch": "B-1"},
    ]


def test_a_state_s_assignments_are_never_stored_with_its_own_cursor(
    make_engine: MakeEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A redrive re-enters the stored cursor's state with the stored variables: were a
    state's new values stored with its own cursor, a redrive would assign them twice."""
    from stepsaga.engine import _runner as runner
    from stepsaga.engine._store import Store

    monkeypatch.setattr(runner, "_FLUSH_EVERY", 0)  # commit before entering every state
    written: list[tuple[Any, Any]] = []
    update = Store.update_execution

    def record(self: Store, arn: str, values: dict[str, Any], **kwargs: Any) -> Any:
        if "cursor_state" in values:
            written.append((values["cursor_state"], values.get("variables")))
        return update(self, arn, values, **kwargs)

    monkeypatch.setattr(Store, "update_execution", record)
    _, result = run(
        make_engine,
        machine(
            {
                "Count": {"Type": "Pass", "Assign": {"n": 1}, "Next": "Again"},
                "Again": {"Type": "Pass", "Assign": {"m": 2}, "End": True},
            }
        ),
    )
    assert result["status"] == "SUCCEEDED"
    assert ("Count", None) in written
    assert all(state != "Count" or variables is None for state, variables in written)
    assert all(state != "Again" or "m" not in (variables or "") for state, variables in written)
