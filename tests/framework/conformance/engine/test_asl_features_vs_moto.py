"""The engine and the references (moto, LocalStack) agree on the newer ASL: the remaining
intrinsics, JSONPath filters and slices, ``Assign`` variables, and JSONata (where a reference
runs it: see below).

Each case is one small definition run on the engine and a reference with the same input;
the states entered, the status, error and output must be equal. Where a reference deviates
from AWS's documentation the engine follows the documentation and the case is an xfail
naming the documented behaviour. LocalStack evaluates variables and JSONata with a Java
runtime it downloads, which cannot be had here: those cases are not run on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.framework.conformance.engine.conftest import deviates, unsupported
from tests.framework.conformance.engine.harness import Ok, Reference, Trace, run_engine
from tests.framework.unit.engine.helpers import machine, task

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ORDER = {
    "lines": [
        {"sku": "A", "qty": 1, "price": 5},
        {"sku": "B", "qty": 0, "price": 7},
        {"sku": "C", "qty": 3, "price": 2},
    ],
    "ref": "a.b+c",
}


def both(reference: Reference, tmp_path: Path, definition: dict[str, Any], payload: Any) -> Trace:
    scripts = {"echo": [Ok({"total": 11, "lines": 2})]}
    ours = run_engine(tmp_path, definition, scripts, payload)
    theirs = reference.run(definition, scripts, payload, ours)
    assert ours.comparable() == theirs.comparable()
    return ours


def pass_with(parameters: dict[str, Any]) -> dict[str, Any]:
    return machine({"P": {"Type": "Pass", "Parameters": parameters, "End": True}})


def test_array_partition_and_string_split(reference: Reference, tmp_path: Path) -> None:
    trace = both(
        reference,
        tmp_path,
        pass_with(
            {
                "chunks.$": "States.ArrayPartition($.lines, 2)",
                "parts.$": "States.StringSplit($.ref, '.+')",
            }
        ),
        ORDER,
    )
    assert trace.output["parts"] == ["a", "b", "c"]
    assert [len(chunk) for chunk in trace.output["chunks"]] == [2, 1]


@deviates(
    moto="moto's States.MathRandom includes the end number; AWS documents 'a random number "
    "between the specified start number (inclusive) and end number (exclusive)'",
    localstack="LocalStack's States.MathRandom includes the end number, as moto's does; AWS "
    "documents 'a random number between the specified start number (inclusive) and end "
    "number (exclusive)'",
)
def test_math_random_with_a_seed_stays_in_range(reference: Reference, tmp_path: Path) -> None:
    definition = pass_with({"n.$": "States.MathRandom(1, 2, 7)"})
    trace = both(reference, tmp_path, definition, {})
    assert trace.output == {"n": 1}  # the only integer in [1, 2)


@pytest.mark.parametrize(
    "path",
    [
        "$.lines[?(@.qty > 0)].sku",
        "$.lines[1:]",
        "$.lines[:2].sku",
        pytest.param(
            "$.lines[0,2].price",
            marks=pytest.mark.deviates(
                localstack="LocalStack's JSONPath parser refuses an index union ([0,2]: "
                "JsonPathParserError, States.Runtime); AWS documents that paths follow JsonPath "
                "syntax, which has unions (the engine and moto give [5, 2])"
            ),
        ),
        "$..sku",
    ],
)
def test_filters_slices_unions_and_descent(reference: Reference, tmp_path: Path, path: str) -> None:
    both(reference, tmp_path, pass_with({"picked.$": path}), ORDER)


@deviates(
    moto="moto reads a variable ($total) through its stubbed JSONata bridge and fails with "
    "States.Runtime TypeError; AWS documents that a JSONPath field reads the variable $name",
)
@unsupported(
    localstack="LocalStack reads variables and evaluates JSONata with Java 21, which it "
    "downloads at first use (no download here: 'Installation of java 21 failed')"
)
def test_assign_then_read_variables(reference: Reference, tmp_path: Path) -> None:
    definition = machine(
        {
            "Count": task(
                "echo",
                Assign={"total.$": "$.Payload.total", "first.$": "$.Payload.lines"},
                ResultPath=None,
                Next="Decide",
            ),
            "Decide": {
                "Type": "Choice",
                "Choices": [
                    {
                        "Variable": "$total",
                        "NumericGreaterThan": 10,
                        "Assign": {"route": "big"},
                        "Next": "Report",
                    }
                ],
                "Default": "Report",
            },
            "Report": {
                "Type": "Pass",
                "Parameters": {"total.$": "$total", "route.$": "$route"},
                "End": True,
            },
        }
    )
    trace = both(reference, tmp_path, definition, ORDER)
    assert trace.output == {"total": 11, "route": "big"}


@deviates(
    moto="moto stubs JSONata (every JSONata execution fails); AWS documents that a "
    "QueryLanguage JSONata Pass state's Output is evaluated with $states.input",
)
@unsupported(
    localstack="LocalStack reads variables and evaluates JSONata with Java 21, which it "
    "downloads at first use (no download here: 'Installation of java 21 failed')"
)
def test_jsonata_pass_output(reference: Reference, tmp_path: Path) -> None:
    definition = {
        "QueryLanguage": "JSONata",
        **machine(
            {
                "P": {
                    "Type": "Pass",
                    "Output": {"total": "{% $sum($states.input.lines.price) %}"},
                    "End": True,
                }
            }
        ),
    }
    trace = both(reference, tmp_path, definition, ORDER)
    assert trace.output == {"total": 14}


def test_format_writes_objects_and_arrays(reference: Reference, tmp_path: Path) -> None:
    definition = pass_with(
        {"text.$": "States.Format('first {} all {}', $.lines[0], $.lines[?(@.qty > 0)].sku)"}
    )
    trace = both(reference, tmp_path, definition, ORDER)
    assert trace.output == {"text": "first {sku=A, qty=1, price=5} all [A, C]"}


def test_a_parallel_fan_in_over_256_kib_fails(reference: Reference, tmp_path: Path) -> None:
    """AWS: 256 KiB per state output; ``States.DataLimitExceeded``, which ``States.ALL``
    does not catch."""
    branches = [
        machine({f"P{i}": {"Type": "Pass", "Result": "x" * 100_000, "End": True}}) for i in range(3)
    ]
    definition = machine(
        {
            "Fan": {
                "Type": "Parallel",
                "Branches": branches,
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        }
    )
    ours = run_engine(tmp_path, definition, {}, {})
    theirs = reference.run(definition, {}, {}, ours)  # branches entered in any order
    assert (ours.status, ours.error) == ("FAILED", "States.DataLimitExceeded")
    assert (ours.status, ours.error, ours.cause) == (theirs.status, theirs.error, theirs.cause)
    assert sorted(ours.entered) == sorted(theirs.entered)


# --- cases AWS's documentation leaves open (docs/reference/engine.md: "Undecided cases") ----------


NEGATIVE_STEP = (
    "AWS documents the third argument as 'the increment value' without a sign rule, and "
    "ManageIQ/floe (specified against AWS's Step Functions Local) counts down"
)


@deviates(
    moto=f"moto refuses a negative States.ArrayRange step (States.Runtime); {NEGATIVE_STEP}",
    localstack="LocalStack refuses a negative States.ArrayRange step ('Expected step argument "
    f"to be non negative', States.Runtime); {NEGATIVE_STEP}",
)
def test_array_range_counts_down_with_a_negative_step(reference: Reference, tmp_path: Path) -> None:
    trace = both(
        reference,
        tmp_path,
        pass_with(
            {"down.$": "States.ArrayRange(9, 1, -2)", "none.$": "States.ArrayRange(1, 9, -2)"}
        ),
        {},
    )
    assert trace.output == {"down": [9, 7, 5, 3, 1], "none": []}


RETRY_COUNT = (
    "has no State.RetryCount outside Task/Parallel/Map (the path fails: States.Runtime); AWS "
    "documents State.RetryCount as part of every state's context object, and a Pass state has "
    "retried 0 times"
)


@deviates(
    moto=f"moto's context object {RETRY_COUNT}",
    localstack=f"LocalStack's context object {RETRY_COUNT}",
)
def test_retry_count_in_a_pass_state_is_zero(reference: Reference, tmp_path: Path) -> None:
    trace = both(reference, tmp_path, pass_with({"n.$": "$$.State.RetryCount"}), {})
    assert trace.output == {"n": 0}


ITEMS_PATH = (
    "fails a JSONPath ItemsPath that is not an array with States.QueryEvaluationError and an "
    "EvaluationFailed event; AWS's API reference says EvaluationFailed is only present in "
    "JSONata states, and a JSONPath path that cannot be applied is States.Runtime"
)


@deviates(
    moto=f"moto {ITEMS_PATH}",
    localstack=f"LocalStack (in code it marks 'TODO') {ITEMS_PATH}",
)
def test_items_path_that_is_not_an_array(reference: Reference, tmp_path: Path) -> None:
    definition = machine(
        {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.ref",
                "ItemProcessor": machine({"P": {"Type": "Pass", "End": True}}),
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        }
    )
    trace = both(reference, tmp_path, definition, ORDER)
    assert (trace.status, trace.error) == ("FAILED", "States.Runtime")
