"""The check finds each kind of broken definition (and passes the compiled ones): what the
engine refuses comes from the engine itself, the team's rules from the check."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from stepsaga.workflow.validate import DefinitionError, check_definition, definition_problems

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
RS = ["States", "ReserveStock"]


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (
            _set(["StartAt"], "Nowhere"),
            "the embedded engine refuses it: definition, field 'StartAt': StartAt names 'Nowhere'",
        ),
        (
            _set(["States"], {}),
            "the embedded engine refuses it: definition, field 'States': States must be a non-empty object",
        ),
        (
            _set([*RS, "Next"], "Nowhere"),
            "the embedded engine refuses it: state 'ReserveStock', field 'Next': 'Nowhere' is not a state",
        ),
        (
            _set(["States", "ReserveStockDecision", "Default"], "Gone"),
            "the embedded engine refuses it: state 'ReserveStockDecision', field 'Default': 'Gone' is not a state",
        ),
        (
            _set([*RS, "Catch", "0", "Next"], "Gone"),
            "the embedded engine refuses it: state 'ReserveStock', field 'Catch[0].Next': 'Gone' is not a state",
        ),
        (
            _set(["States", "Orphan"], {"Type": "Succeed"}),
            "the embedded engine refuses it: state 'Orphan': not reachable from StartAt 'Prepare'",
        ),
        (
            _set(["States", "Completed"], {"Type": "Pass", "Next": "Completed"}),
            "Completed: no terminal state can be reached from it",
        ),
        (
            _set([*RS, "Catch", "0", "ErrorEquals"], ["States.ALL", "BusinessRejectedError"]),
            "the embedded engine refuses it: state 'ReserveStock', field 'Catch[0].ErrorEquals': States.ALL must appear "
            "alone",
        ),
        (
            _set([*RS, "Catch", "0", "ErrorEquals"], ["States.ALL"]),
            "the embedded engine refuses it: state 'ReserveStock', field 'Catch[0].ErrorEquals': States.ALL must appear "
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
            "ReserveStock: Retry[0] retries 3 times without MaxDelaySeconds",
        ),
        (
            _set([*RS, "Retry", "1", "ErrorEquals"], ["OutcomeUnknownError"]),
            "ReserveStock: Retry[1] retries OutcomeUnknownError, which must never be retried",
        ),
        (
            _set([*RS, "Retry", "1", "ErrorEquals"], []),
            "the embedded engine refuses it: state 'ReserveStock', field 'Retry[1].ErrorEquals'",
        ),
        (
            _set([*RS, "Resource"], "arn:aws:states:::dynamodb:putItem"),
            "the embedded engine refuses it: state 'ReserveStock', field 'Resource': Resource "
            "'arn:aws:states:::dynamodb:putItem' is not supported",
        ),
        (
            _set([*RS, "End"], True),
            "the embedded engine refuses it: state 'ReserveStock', field 'Next': a state has either Next or End",
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
            "the embedded engine refuses it: state 'ReserveStockDecision', field 'Choices': Choices must be a non-empty",
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
