"""The stack's input is validated before any resource is built."""

from __future__ import annotations

from typing import Any

import pytest

from infra.permissions import LEDGER_WRITER, QUERY, FunctionAccess
from infra.saga_deployment import SagaDeployment, lambda_handler


def _definition(*functions: str) -> dict[str, Any]:
    states = {
        name: {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": f"${{{name}FunctionArn}}"},
            "End": True,
        }
        for name in functions
    }
    return {"StartAt": functions[0], "States": states}


def _deployment(**overrides: Any) -> SagaDeployment:
    values: dict[str, Any] = {
        "name": "tiny",
        "functions": {"DoIt": "tasks.do_it.handler"},
        "definition": _definition("DoIt"),
        "access": {"DoIt": LEDGER_WRITER},
    }
    values.update(overrides)
    return SagaDeployment(**values)


def test_a_consistent_saga_is_accepted() -> None:
    saga = _deployment()
    assert saga.definition_substitutions(lambda n: f"arn:{n}") == {"DoItFunctionArn": "arn:DoIt"}


@pytest.mark.parametrize(
    ("path", "handler"),
    [
        ("tasks.reserve_stock.handler", "tasks.reserve_stock.handler"),
        ("tasks.reserve_stock:handler", "tasks.reserve_stock.handler"),
    ],
)
def test_handler_paths_become_lambda_handlers(path: str, handler: str) -> None:
    assert lambda_handler(path) == handler


@pytest.mark.parametrize("path", ["handler", "tasks/reserve.handler", "tasks.class.handler"])
def test_bad_handler_paths_are_refused(path: str) -> None:
    with pytest.raises(ValueError, match=r"expected 'package\.module\.function'"):
        lambda_handler(path)


def test_a_function_without_declared_access_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no declared access for DoIt: add them to infra/"):
        _deployment(access={})


def test_access_for_an_unknown_function_is_refused() -> None:
    with pytest.raises(ValueError, match="access declared for unknown functions: Other"):
        _deployment(access={"DoIt": LEDGER_WRITER, "Other": LEDGER_WRITER})


def test_a_placeholder_without_a_function_is_refused() -> None:
    with pytest.raises(ValueError, match=r"only in the ASL \['OtherFunctionArn'\]"):
        _deployment(definition=_definition("DoIt", "Other"))


def test_a_function_the_definition_never_uses_is_refused() -> None:
    with pytest.raises(ValueError, match=r"only substituted \['UnusedFunctionArn'\]"):
        _deployment(
            functions={"DoIt": "tasks.do_it.handler", "Unused": "tasks.unused.handler"},
            access={"DoIt": LEDGER_WRITER, "Unused": LEDGER_WRITER},
        )


def test_function_names_must_be_logical_ids() -> None:
    with pytest.raises(ValueError, match="function name 'do-it'"):
        _deployment(functions={"do-it": "tasks.do_it.handler"}, access={"do-it": LEDGER_WRITER})


def test_access_lists_only_known_actions() -> None:
    with pytest.raises(ValueError, match="'dynamodb:DeleteTable': not an action"):
        FunctionAccess(table_actions=("dynamodb:DeleteTable",))
    with pytest.raises(ValueError, match="only Query and Scan read an index"):
        FunctionAccess(index_actions=("dynamodb:GetItem",))
    assert FunctionAccess(index_actions=(QUERY,)).index_actions == (QUERY,)
