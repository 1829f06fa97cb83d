"""Stage settings from CDK context, and the production table's protection."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from infra.config import BundlingMode, StageConfig
from infra.constructs.ledger_table import LedgerTable


def _config(**context: object) -> StageConfig:
    return StageConfig.from_context(App(context=context).node)


def test_defaults_are_the_dev_stage() -> None:
    config = _config()
    assert config == StageConfig()
    assert (config.stage, config.deletion_protection, config.log_retention_days) == (
        "dev",
        False,
        30,
    )
    assert config.bundling is BundlingMode.PIP


@pytest.mark.parametrize("stage", ["prod", "production"])
def test_production_stages_are_protected_by_default(stage: str) -> None:
    config = _config(stage=stage)
    assert config.deletion_protection
    assert config.log_retention_days == 365


def test_context_strings_from_the_command_line_are_parsed() -> None:
    config = _config(
        stage="prod",
        deletion_protection="false",
        log_retention_days="90",
        reserved_concurrency="5",
        overdue_reconciliation_hours="6",
        bundling="sources",
    )
    assert not config.deletion_protection
    assert config.log_retention_days == 90
    assert config.reserved_concurrency == 5
    assert config.overdue_reconciliation_hours == 6
    assert config.bundling is BundlingMode.SOURCES


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"stage": "Prod!"}, "stage 'Prod!'"),
        ({"log_retention_days": "10"}, "log_retention_days 10"),
        ({"reserved_concurrency": "0"}, "reserved_concurrency"),
        ({"overdue_reconciliation_hours": "0"}, "overdue_reconciliation_hours"),
        ({"deletion_protection": "maybe"}, "expected true or false"),
    ],
)
def test_invalid_context_is_refused(context: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(**context)


def test_protected_table_is_retained_with_deletion_protection() -> None:
    stack = Stack(App(), "TableOnly")
    LedgerTable(stack, "Ledger", protected=True)
    Template.from_stack(stack).has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {"DeletionProtectionEnabled": True},
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )
