"""The check finds each kind of broken definition (and passes the compiled ones): what the
engine refuses comes from the engine itself, the team's rules from the check."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from stepsaga.errors import DefinitionError
from stepsaga.workflow._validate import check_definition, definition_problems

Mutation = Callable[[dict[str, Any]], None]


def test_compiled_definition_has_no_problems(definition: dict[str, Any]) -> None:
    assert definition_problems(definition) == []
    check_definition(definition)


def _set(path: list[str], value: Any) -> Mutation:
    def mutate(definition: dict[str, Any]) -> None:
        target: Any = definition
        for part in path[:-1]:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if value is _DELETE:
            del target[path[-1]]
        elif isinstance(target, list):
            target[int(path[-1])] = value
        else:
            target[path[-1]] = value

    return mutate


_DELETE = object()
#: How a problem the engine's loader found is reported.
ENGINE = "the embedded engine refuses it: "
RS = ["States", "ReserveStock"]


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (
            _set(["StartAt"], "Nowhere"),
            ENGINE + "definition, field 'StartAt': StartAt names 'Nowhere'",
        ),
        (
            _set(["States"], {}),
            ENGINE + "definition, field 'States': States must be a non-empty object",
        ),
        (
            _set([*RS, "Next"], "Nowhere"),
            ENGINE + "state 'ReserveStock', field 'Next': 'Nowhere' is not a state",
        ),
        (
            _set(["States", "ReserveStockDecision", "Default"], "Gone"),
            ENGINE + "state 'ReserveStockDecision', field 'Default': 'Gone' is not a state",
        ),
        (
            _set([*RS, "Catch", "0", "Next"], "Gone"),
            ENGINE + "state 'ReserveStock', field 'Catch[0].Next': 'Gone' is not a state",
        ),
        (
            _set(["States", "Orphan"], {"Type": "Succeed"}),
            ENGINE + "state 'Orphan': not reachable from StartAt 'ReserveStock'",
        ),
        (
            _set(["States", "Compensated"], {"Type": "Pass", "Next": "Compensated"}),
            "Compensated: no terminal state can be reached from it",
        ),
        (
            _set([*RS, "Catch", "0", "ErrorEquals"], ["States.ALL", "BusinessRejectedError"]),
            ENGINE + "state 'ReserveStock', field 'Catch[0].ErrorEquals': States.ALL must appear "
            "alone",
        ),
        (
            _set([*RS, "Catch", "0", "ErrorEquals"], ["States.ALL"]),
            ENGINE + "state 'ReserveStock', field 'Catch[0].ErrorEquals': States.ALL must appear "
            "alone and in the last entry",
        ),
        (
            _set([*RS, "Retry", "0", "MaxAttempts"], _DELETE),
            "ReserveStock: Retry[0] has no MaxAttempts",
        ),
        (
            _set([*RS, "Retry", "0", "MaxAttempts"], 25),
            "ReserveStock: Retry[0] MaxAttempts 25 is more than 10",
        ),
        (
            _set([*RS, "Retry", "0", "MaxDelaySeconds"], _DELETE),
            "ReserveStock: Retry[0] retries 6 times without MaxDelaySeconds",
        ),
        (
            _set([*RS, "Retry", "1", "ErrorEquals"], ["OutcomeUnknownError"]),
            "ReserveStock: Retry[1] retries OutcomeUnknownError, which must never be retried",
        ),
        (
            _set([*RS, "Retry", "1", "ErrorEquals"], []),
            ENGINE + "state 'ReserveStock', field 'Retry[1].ErrorEquals'",
        ),
        (
            _set([*RS, "Resource"], "arn:aws:states:::dynamodb:putItem"),
            ENGINE + "state 'ReserveStock', field 'Resource': Resource "
            "'arn:aws:states:::dynamodb:putItem' is not supported",
        ),
        (
            _set([*RS, "End"], True),
            ENGINE + "state 'ReserveStock', field 'Next': a state has either Next or End",
        ),
        (
            _set([*RS, "Parameters", "Payload", "kind.$"], "States.Format('{}', $.x)"),
            "ReserveStock: uses intrinsic function States.Format in 'kind.$'",
        ),
        (
            _set(
                ["States", "AwaitDecisionReserveStock", "Parameters", "Payload", "task_token.$"],
                "$.x",
            ),
            "AwaitDecisionReserveStock: waits for a task token but does not pass $$.Task.Token",
        ),
        (
            _set(["States", "AwaitDecisionReserveStock", "TimeoutSeconds"], _DELETE),
            "AwaitDecisionReserveStock: waits for a task token without TimeoutSeconds",
        ),
        (
            _set(["States", "ReserveStockDecision", "Choices"], []),
            ENGINE + "state 'ReserveStockDecision', field 'Choices': Choices must be a non-empty",
        ),
    ],
)
def test_each_problem_is_found(definition: dict[str, Any], mutate: Mutation, problem: str) -> None:
    broken = copy.deepcopy(definition)
    mutate(broken)
    problems = definition_problems(broken)
    assert any(p.startswith(problem) for p in problems), problems
    with pytest.raises(DefinitionError) as raised:
        check_definition(broken)
    assert problem in str(raised.value)


def test_not_an_object() -> None:
    assert definition_problems([]) == ["definition: must be a JSON object"]  # type: ignore[arg-type]


def test_the_rules_hold_inside_branches_and_item_processors() -> None:
    from stepsaga.workflow import compile
    from workflows.multi_warehouse import saga

    broken = compile(saga)
    processor = broken["States"]["ReserveLines"]["ItemProcessor"]["States"]
    del processor["ReserveLine"]["Retry"][1]["MaxDelaySeconds"]
    branch = broken["States"]["RefundAndShip"]["Branches"][1]["States"]
    del branch["AwaitDecisionCreateShipment"]["TimeoutSeconds"]

    problems = definition_problems(broken)

    assert "ReserveLine: Retry[1] retries 2 times without MaxDelaySeconds" in problems
    assert any(
        p.startswith("AwaitDecisionCreateShipment: waits for a task token") for p in problems
    )
