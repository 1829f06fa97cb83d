"""cfn-lint's Step Functions schema (rule E3601) accepts the compiled ASL.

E3601 checks a ``DefinitionString`` only when it is a plain string (not ``Fn::Join``), so
the definition is inlined as one string in a minimal template.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from stepsaga import Saga

#: cfn-lint takes seconds to load (its schemas, sympy) and to lint: slow, and imported only
#: when linting, so collecting this module costs nothing.
pytestmark = pytest.mark.slow


def lint(saga: Saga, definition: dict[str, Any]) -> list[Any]:
    cfnlint_api = pytest.importorskip("cfnlint.api")
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": "arn:aws:iam::123456789012:role/saga",
                    "StateMachineType": "STANDARD",
                    "DefinitionString": json.dumps(definition),
                    "DefinitionSubstitutions": saga.definition_substitutions(
                        lambda name: f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
                    ),
                },
            }
        },
    }
    config = cfnlint_api.ManualArgs(regions=["us-east-1"])
    return list(cfnlint_api.lint(json.dumps(template), config=config))


def test_compiled_asl_passes_cfn_lint(saga: Saga, definition: dict[str, Any]) -> None:
    matches = lint(saga, definition)
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


def test_the_check_is_live(saga: Saga, definition: dict[str, Any]) -> None:
    """A definition the schema refuses is reported as E3601, so the test above means something."""
    broken = copy.deepcopy(definition)
    broken["States"]["ReserveStock"]["Unexpected"] = True
    assert "E3601" in {m.rule.id for m in lint(saga, broken)}


def test_parallel_groups_and_per_item_steps_pass_cfn_lint() -> None:
    from stepsaga.workflow import compile
    from workflows.multi_warehouse import saga as multi_warehouse

    matches = lint(multi_warehouse, compile(multi_warehouse))
    assert [f"{m.rule.id} {m.message}" for m in matches] == []
