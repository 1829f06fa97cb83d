"""The graph check finds each kind of broken definition (and passes the compiled ones)."""

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
        (_set(["StartAt"], "Nowhere"), "definition: StartAt 'Nowhere' is not a state"),
        (_set(["QueryLanguage"], "JSONata"), "definition: unknown field 'QueryLanguage'"),
        (_set(["States"], {}), "definition: States must be a non-empty object"),
        (
            _set([*RS, "Next"], "Nowhere"),
            "ReserveStock: transition to 'Nowhere', which is not a state",
        ),
        (
            _set(["States", "ReserveStockDecision", "Default"], "Gone"),
            "ReserveStockDecision: transition to 'Gone', which is not a state",
        ),
        (
            _set([*RS, "Catch", "0", "Next"], "Gone"),
            "ReserveStock: transition to 'Gone', which is not a state",
        ),
        (
            _set(["States", "Orphan"], {"Type": "Succeed"}),
            "Orphan: unreachable from Prepare",
        ),
        (
            _set(["States", "Completed"], {"Type": "Pass", "Next": "Completed"}),
            "Completed: no terminal state can be reached from it",
        ),
        (
            _set([*RS, "Catch", "0", "ErrorEquals"], ["States.ALL", "BusinessRejectedError"]),
            "ReserveStock: Catch[0]: States.ALL must be alone in ErrorEquals",
        ),
        (
            _set([*RS, "Catch", "0", "ErrorEquals"], ["States.ALL"]),
            "ReserveStock: Catch[0]: States.ALL must be in the last Catch entry",
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
            "ReserveStock: Retry[1] needs a non-empty ErrorEquals",
        ),
        (
            _set([*RS, "Resource"], "arn:aws:states:::dynamodb:putItem"),
            "ReserveStock: Resource 'arn:aws:states:::dynamodb:putItem' is not supported",
        ),
        (_set([*RS, "Type"], "Map"), "ReserveStock: Type 'Map' is not supported"),
        (
            _set([*RS, "Arguments"], {}),
            "ReserveStock: field 'Arguments' is not allowed in a Task",
        ),
        (_set([*RS, "End"], True), "ReserveStock: needs exactly one of Next or End"),
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
            "ReserveStockDecision: a Choice needs at least one rule in Choices",
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
