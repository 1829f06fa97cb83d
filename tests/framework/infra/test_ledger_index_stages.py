"""Upgrading a deployed ledger table one index per deploy: CloudFormation adds or deletes
one GSI per stack update, so ``StageSettings.ledger_indexes`` declares the first N."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from stepsaga.cdk import StageSettings
from stepsaga.cdk._ledger_table import LedgerTable
from stepsaga.errors import DeploymentError
from stepsaga.ledger._table import GSIS


def _index_names(indexes: int | None) -> list[str]:
    stack = Stack(App(), "Ledger")
    LedgerTable(stack, "Ledger", protected=False, indexes=indexes)
    (table,) = Template.from_stack(stack).find_resources("AWS::DynamoDB::Table").values()
    return [gsi["IndexName"] for gsi in table["Properties"]["GlobalSecondaryIndexes"]]


@pytest.mark.parametrize("indexes", range(1, len(GSIS) + 1))
def test_each_stage_declares_the_first_n_indexes_in_layout_order(indexes: int) -> None:
    assert _index_names(indexes) == list(GSIS)[:indexes]


def test_unset_declares_every_index() -> None:
    assert _index_names(None) == list(GSIS)


@pytest.mark.parametrize("indexes", [0, -1, len(GSIS) + 1])
def test_out_of_range_is_refused_naming_the_setting(indexes: int) -> None:
    with pytest.raises(DeploymentError, match="ledger_indexes"):
        StageSettings(ledger_indexes=indexes)
