"""cfn-lint on the synthesized template (errors and warnings; informational rules off).

The state machine's ``DefinitionString`` is a plain string, so rule E3601 validates the ASL
against the Step Functions schema here too (it skips an ``Fn::Join``).
"""

from __future__ import annotations

import json

from cfnlint.api import ManualArgs, lint

from tests.framework.infra.conftest import Synthesized

#: W3005 (redundant DependsOn): CDK makes each function depend on its role *and* the role's
#: default policy, so the function cannot run before its permissions exist; the role half is
#: also implied by ``Fn::GetAtt``. Harmless and generated, not written by us.
IGNORED = ["W3005"]


def test_template_is_cfn_lint_clean(synthesized: Synthesized) -> None:
    matches = lint(
        json.dumps(synthesized.json),
        config=ManualArgs(regions=["us-east-1", "eu-west-1"], ignore_checks=IGNORED),
    )
    assert [str(m) for m in matches] == []


def test_definition_is_a_plain_string_that_e3601_can_check(synthesized: Synthesized) -> None:
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    assert isinstance(machine["Properties"]["DefinitionString"], str)
