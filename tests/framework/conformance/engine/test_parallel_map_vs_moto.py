"""Parallel and inline Map on the embedded engine and on moto's and LocalStack's interpreters.

Branches and iterations run concurrently on both, so what is compared is what does not
depend on scheduling: the final status, error, cause and output, and how often each state
was entered and each function called (as multisets). Scripted failures use
``MaxConcurrency: 1`` where the order of iterations matters. Where a reference deviates from
AWS's documentation the test is an xfail on it (``@deviates``) whose reason quotes the
documented behaviour.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.framework.conformance.engine.conftest import deviates
from tests.framework.conformance.engine.harness import (
    Err,
    Ok,
    Reference,
    Scripts,
    Trace,
    run_engine,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TASK = "arn:aws:states:::lambda:invoke"


def task(function: str, **fields: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": TASK,
        "Parameters": {"FunctionName": function, "Payload.$": "$"},
        **fields,
    }
    if "Next" not in state:
        state["End"] = True
    return state


def body(states: dict[str, Any]) -> dict[str, Any]:
    return {"StartAt": next(iter(states)), "States": states}


def unordered(trace: Trace, *, visits: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": trace.status,
        "error": trace.error,
        "cause": trace.cause,
        "output": trace.output,
    }
    if visits:
        out["entered"] = Counter(trace.entered)
        out["calls"] = Counter(json.dumps(call, sort_keys=True) for call in trace.calls)
    return out


def both(
    reference: Reference,
    tmp_path: Path,
    definition: dict[str, Any],
    script: Scripts,
    payload: Any,
    *,
    visits: bool = True,
) -> tuple[Trace, Trace]:
    """Run on both and compare. ``visits=False`` when a failure cancels sibling branches:
    how far a sibling got before it was stopped depends on thread scheduling on both."""
    ours = run_engine(tmp_path, definition, script, payload)
    theirs = reference.run(definition, script, payload, ours)
    assert unordered(ours, visits=visits) == unordered(theirs, visits=visits)
    return ours, theirs


ECHO: Scripts = {"Echo": [Ok({"echo": True})], "Other": [Ok({"other": 1})]}


def fork(**fields: Any) -> dict[str, Any]:
    return body(
        {
            "Fork": {
                "Type": "Parallel",
                "Branches": [
                    body({"A": task("Echo", ResultSelector={"p.$": "$.Payload"})}),
                    body(
                        {
                            "B": task("Other", ResultPath="$.b", Next="B2"),
                            "B2": {
                                "Type": "Pass",
                                "Parameters": {"got.$": "$.b.Payload"},
                                "End": True,
                            },
                        }
                    ),
                    body({"C": {"Type": "Pass", "Result": "static", "End": True}}),
                ],
                **fields,
                "Next": "Done",
            },
            "Done": {"Type": "Pass", "End": True},
        }
    )


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"ResultPath": "$.fork"},
        {"InputPath": "$.order", "ResultSelector": {"first.$": "$[0]", "n.$": "$[2]"}},
        {
            "Parameters": {"id.$": "$.order.id", "const": 1},
            "ResultPath": "$.r",
            "OutputPath": "$.r",
        },
    ],
    ids=["plain", "result-path", "input-selector", "parameters-output"],
)
def test_parallel_data_flow(reference: Reference, tmp_path: Path, fields: dict[str, Any]) -> None:
    trace, _ = both(reference, tmp_path, fork(**fields), ECHO, {"order": {"id": "O-1"}})
    assert trace.status == "SUCCEEDED"


def test_parallel_branch_failure_fails_the_state(reference: Reference, tmp_path: Path) -> None:
    script: Scripts = {"Echo": [Ok({})], "Other": [Err("BusinessRejectedError", "refused")]}
    ours, theirs = both(reference, tmp_path, fork(), script, {"order": {}}, visits=False)
    assert (ours.status, ours.error) == ("FAILED", "BusinessRejectedError")
    assert "B2" not in ours.entered
    assert "B2" not in theirs.entered


def test_parallel_catch(reference: Reference, tmp_path: Path) -> None:
    catch = [{"ErrorEquals": ["BusinessRejectedError"], "ResultPath": "$.failure", "Next": "Done"}]
    script: Scripts = {"Echo": [Ok({})], "Other": [Err("BusinessRejectedError", "refused")]}
    ours, theirs = both(reference, tmp_path, fork(Catch=catch), script, {"order": {}}, visits=False)
    assert ours.status == "SUCCEEDED"
    assert ours.output["failure"]["Error"] == "BusinessRejectedError"
    assert ours.entered[-1] == theirs.entered[-1] == "Done"


def test_parallel_retry_reruns_the_state(reference: Reference, tmp_path: Path) -> None:
    retry = [{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 2}]
    script: Scripts = {"Echo": [Ok({})], "Other": [Err("TransientError"), Ok({"other": 2})]}
    ours, theirs = both(reference, tmp_path, fork(Retry=retry), script, {"order": {}}, visits=False)
    assert ours.status == "SUCCEEDED"
    assert Counter(ours.entered)["B"] == Counter(theirs.entered)["B"] == 2
    assert Counter(ours.entered)["Fork"] == Counter(theirs.entered)["Fork"] == 1
    # …StateFailed once, when no retry follows: a retried attempt writes none
    assert ours.group_events == theirs.group_events
    assert ours.group_events == [
        "ParallelStateStarted",
        "ParallelStateStarted",
        "ParallelStateSucceeded",
    ]


def test_parallel_retries_run_out(reference: Reference, tmp_path: Path) -> None:
    retry = [{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 2}]
    script: Scripts = {"Echo": [Ok({})], "Other": [Err("TransientError")]}
    ours, theirs = both(reference, tmp_path, fork(Retry=retry), script, {"order": {}}, visits=False)
    assert (ours.status, ours.error) == ("FAILED", "TransientError")
    assert ours.group_events == theirs.group_events
    assert ours.group_events == ["ParallelStateStarted"] * 3 + ["ParallelStateFailed"]


def test_a_fail_state_in_a_branch(reference: Reference, tmp_path: Path) -> None:
    definition = body(
        {
            "Fork": {
                "Type": "Parallel",
                "Branches": [
                    body({"Ok": {"Type": "Pass", "End": True}}),
                    body({"No": {"Type": "Fail", "Error": "Saga.Rejected", "Cause": "why"}}),
                ],
                "End": True,
            }
        }
    )
    trace, _ = both(reference, tmp_path, definition, {}, {}, visits=False)
    assert (trace.error, trace.cause) == ("Saga.Rejected", "why")


def each(processor: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return body(
        {
            "Each": {
                "Type": "Map",
                "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, **processor},
                **fields,
                "Next": "Done",
            },
            "Done": {"Type": "Pass", "End": True},
        }
    )


LINES = {"order": "O-1", "lines": [{"sku": "A"}, {"sku": "B"}, {"sku": "C"}]}
WORK = body({"Work": task("Echo", ResultSelector={"p.$": "$.Payload"}, ResultPath="$.r")})


@pytest.mark.parametrize(
    "fields",
    [
        {"ItemsPath": "$.lines"},
        {
            "ItemsPath": "$.lines",
            "ItemSelector": {
                "sku.$": "$$.Map.Item.Value.sku",
                "index.$": "$$.Map.Item.Index",
                "order.$": "$.order",
            },
            "ResultPath": "$.reserved",
        },
        {"ItemsPath": "$.lines", "MaxConcurrency": 1, "ResultSelector": {"n.$": "$[1]"}},
        {"InputPath": "$.lines", "OutputPath": "$[0]"},
    ],
    ids=["items-path", "item-selector-context", "max-concurrency-selector", "input-output"],
)
def test_map_data_flow(reference: Reference, tmp_path: Path, fields: dict[str, Any]) -> None:
    trace, _ = both(reference, tmp_path, each(WORK, **fields), ECHO, LINES)
    assert trace.status == "SUCCEEDED"


def test_legacy_iterator_and_parameters(reference: Reference, tmp_path: Path) -> None:
    definition = body(
        {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.lines",
                "Iterator": WORK,
                "Parameters": {"line.$": "$$.Map.Item.Value", "i.$": "$$.Map.Item.Index"},
                "End": True,
            }
        }
    )
    trace, _ = both(reference, tmp_path, definition, ECHO, LINES)
    assert trace.status == "SUCCEEDED"


def test_an_empty_array(reference: Reference, tmp_path: Path) -> None:
    trace, _ = both(reference, tmp_path, each(WORK, ItemsPath="$.lines"), ECHO, {"lines": []})
    assert trace.output == []


def test_a_failed_iteration_fails_the_map(reference: Reference, tmp_path: Path) -> None:
    script: Scripts = {"Echo": [Ok({}), Err("BusinessRejectedError", "line B")]}
    definition = each(WORK, ItemsPath="$.lines", MaxConcurrency=1)
    trace, _ = both(reference, tmp_path, definition, script, LINES)
    assert (trace.status, trace.error) == ("FAILED", "BusinessRejectedError")
    assert Counter(trace.entered)["Work"] == 2  # C never started


def test_every_iteration_starts_and_succeeds_once(reference: Reference, tmp_path: Path) -> None:
    """With MaxConcurrency unset every iteration is started (AWS starts them together); the
    iteration events are the same on both, whatever the interleaving."""
    trace, theirs = both(reference, tmp_path, each(WORK, ItemsPath="$.lines"), ECHO, LINES)
    assert trace.iteration_events == theirs.iteration_events
    assert trace.iteration_events == sorted(
        [("MapIterationStarted", i) for i in range(3)]
        + [("MapIterationSucceeded", i) for i in range(3)]
    )


def test_a_failed_iteration_is_the_last_one_started(reference: Reference, tmp_path: Path) -> None:
    """MaxConcurrency 1: item B fails, so item C's iteration is never started."""
    script: Scripts = {"Echo": [Ok({}), Err("BusinessRejectedError", "line B")]}
    definition = each(WORK, ItemsPath="$.lines", MaxConcurrency=1)
    trace, theirs = both(reference, tmp_path, definition, script, LINES)
    assert trace.iteration_events == theirs.iteration_events
    assert trace.iteration_events == [
        ("MapIterationFailed", 1),
        ("MapIterationStarted", 0),
        ("MapIterationStarted", 1),
        ("MapIterationSucceeded", 0),
    ]


def test_map_catch_and_retry(reference: Reference, tmp_path: Path) -> None:
    definition = each(
        WORK,
        ItemsPath="$.lines",
        MaxConcurrency=1,
        Retry=[{"ErrorEquals": ["TransientError"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "Done"}],
    )
    script: Scripts = {
        "Echo": [Ok({}), Err("TransientError"), Ok({}), Err("BusinessRejectedError")]
    }
    trace, theirs = both(reference, tmp_path, definition, script, LINES)
    assert trace.output["failure"]["Error"] == "BusinessRejectedError"
    assert trace.group_events == theirs.group_events
    assert trace.group_events == ["MapStateStarted", "MapStateStarted", "MapStateFailed"]


def test_nested_map_in_parallel_in_map(reference: Reference, tmp_path: Path) -> None:
    inner = {
        "Type": "Map",
        "ItemsPath": "$.xs",
        "ItemSelector": {"x.$": "$$.Map.Item.Value", "n.$": "$.n"},
        "ItemProcessor": body({"Leaf": {"Type": "Pass", "End": True}}),
        "End": True,
    }
    definition = each(
        body(
            {
                "Fork": {
                    "Type": "Parallel",
                    "Branches": [
                        body({"Inner": inner}),
                        body({"Side": task("Echo", OutputPath="$.Payload")}),
                    ],
                    "End": True,
                }
            }
        ),
        ItemsPath="$.groups",
    )
    payload = {"groups": [{"n": 1, "xs": ["a", "b"]}, {"n": 2, "xs": ["c"]}]}
    trace, _ = both(reference, tmp_path, definition, ECHO, payload)
    assert trace.output == [
        [[{"x": "a", "n": 1}, {"x": "b", "n": 1}], {"echo": True}],
        [[{"x": "c", "n": 2}], {"echo": True}],
    ]


# --- where moto and LocalStack deviate from AWS's documentation -----------------------------


@deviates(
    moto="moto deviates from AWS: it lets states inside the item processor read "
    "$$.Map.Item; AWS documents that Map context data must be selected in the Map state's "
    "ItemSelector/Parameters, not within the states of the Iterator (the engine fails the "
    "execution with States.Runtime: the path is not in the context object)",
    localstack="LocalStack deviates from AWS as moto does: states inside the item processor "
    "read $$.Map.Item; AWS documents it is selectable only in ItemSelector/Parameters",
)
def test_map_context_inside_the_processor(reference: Reference, tmp_path: Path) -> None:
    inside = body({"P": {"Type": "Pass", "Parameters": {"i.$": "$$.Map.Item.Index"}, "End": True}})
    both(reference, tmp_path, each(inside, ItemsPath="$.lines"), ECHO, LINES, visits=False)


@deviates(
    moto="moto deviates from AWS: a States.Runtime error inside a branch makes moto's Catch "
    "raise its own ValueError ('Custom Error Names MUST NOT begin with the prefix States.'), "
    "reported as the cause; AWS documents that States.Runtime is neither retried nor caught "
    "by States.ALL and fails the execution with the runtime error's own cause",
    localstack="LocalStack deviates from AWS as moto does: its Catch on States.ALL raises "
    "its own ValueError for a States.Runtime from a branch; AWS documents that States.Runtime "
    "is not caught by States.ALL and fails the execution with its own cause",
)
def test_states_runtime_in_a_branch_is_not_caught(reference: Reference, tmp_path: Path) -> None:
    definition = body(
        {
            "Fork": {
                "Type": "Parallel",
                "Branches": [
                    body({"Bad": {"Type": "Pass", "InputPath": "$.missing", "End": True}})
                ],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        }
    )
    both(reference, tmp_path, definition, ECHO, {}, visits=False)


@deviates(
    moto="moto deviates from AWS: a Parallel/Map ResultPath that cannot be applied to the "
    "input fails with States.Runtime (a Python TypeError) there; AWS documents "
    "States.ResultPathMatchFailure, which the engine raises (and Retry/Catch can handle)",
    localstack="LocalStack deviates from AWS as moto does: a Parallel ResultPath that cannot "
    "be applied fails with States.Runtime (a TypeError); AWS documents "
    "States.ResultPathMatchFailure",
)
def test_result_path_match_failure(reference: Reference, tmp_path: Path) -> None:
    definition = body(
        {
            "Fork": {
                "Type": "Parallel",
                "Branches": [body({"P": {"Type": "Pass", "End": True}})],
                "ResultPath": "$.a.b",
                "End": True,
            }
        }
    )
    both(reference, tmp_path, definition, ECHO, {"a": 1}, visits=False)
