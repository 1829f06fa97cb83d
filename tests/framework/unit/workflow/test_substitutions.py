"""Placeholders are filled the way CDK's DefinitionSubstitutions fills them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepsaga import Saga
from stepsaga.workflow._substitutions import placeholders, render


def arn(name: str) -> str:
    return f"arn:aws:lambda:us-east-1:123456789012:function:stepsaga-{name}"


def test_compiled_placeholders_are_exactly_the_registry(
    saga: Saga, definition: dict[str, Any]
) -> None:
    assert placeholders(definition) == {f"{name}FunctionArn" for name in saga.functions}


def test_render_fills_every_function_name(saga: Saga, definition: dict[str, Any]) -> None:
    rendered = render(definition, saga.definition_substitutions(arn))
    assert placeholders(rendered) == set()
    assert rendered["States"]["ReserveStock"]["Parameters"]["FunctionName"] == arn("ReserveStock")
    assert rendered["States"]["AwaitDecisionRefundPayment"]["Parameters"]["FunctionName"] == arn(
        "Reconcile"
    )
    # Nothing else changes; the original is untouched.
    assert "${" not in json.dumps(rendered)
    assert definition["States"]["ReserveStock"]["Parameters"]["FunctionName"] == (
        "${ReserveStockFunctionArn}"
    )


def test_render_matches_a_textual_substitution(saga: Saga, definition: dict[str, Any]) -> None:
    """What CloudFormation does to the DefinitionString, done on text."""
    text = json.dumps(definition)
    for key, value in saga.definition_substitutions(arn).items():
        text = text.replace("${" + key + "}", value)
    assert json.loads(text) == render(definition, saga.definition_substitutions(arn))


def test_a_missing_substitution_is_refused(definition: dict[str, Any]) -> None:
    with pytest.raises(KeyError, match="ReconcileFunctionArn"):
        render(definition, {"ReserveStockFunctionArn": "x"})
