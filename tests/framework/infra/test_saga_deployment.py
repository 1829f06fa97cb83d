"""The construct's input is validated before any resource is built."""

from __future__ import annotations

from typing import Any

import pytest

from stepsaga.cdk import Backup, Canary, FunctionSettings, StageSettings
from stepsaga.cdk._access import LEDGER_WRITER, QUERY, RECONCILER, FunctionAccess, access_for
from stepsaga.cdk._saga_deployment import SagaDeployment, lambda_handler
from stepsaga.errors import DeploymentError
from stepsaga.workflow._saga import RECONCILER_FUNCTION, RECONCILER_HANDLER


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
        "saga_ref": "workflows.tiny:saga",
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
    with pytest.raises(DeploymentError, match=r"expected 'package\.module\.function'"):
        lambda_handler(path)


def test_access_is_derived_from_the_function_kinds() -> None:
    functions = {"DoIt": "tasks.do_it:DoIt", RECONCILER_FUNCTION: RECONCILER_HANDLER}
    assert access_for(functions) == {"DoIt": LEDGER_WRITER, RECONCILER_FUNCTION: RECONCILER}
    # An app's own handler under the reconciler's name gets no reconciler rights.
    assert access_for({RECONCILER_FUNCTION: "tasks.mine:Reconcile"}) == {
        RECONCILER_FUNCTION: LEDGER_WRITER
    }


def test_a_placeholder_without_a_function_is_refused() -> None:
    with pytest.raises(ValueError, match=r"only in the ASL \['OtherFunctionArn'\]"):
        _deployment(definition=_definition("DoIt", "Other"))


def test_a_function_the_definition_never_uses_is_refused() -> None:
    with pytest.raises(ValueError, match=r"only substituted \['UnusedFunctionArn'\]"):
        _deployment(
            functions={"DoIt": "tasks.do_it.handler", "Unused": "tasks.unused.handler"},
        )


def test_function_names_must_be_logical_ids() -> None:
    with pytest.raises(DeploymentError, match="function name 'do-it'"):
        _deployment(functions={"do-it": "tasks.do_it.handler"})


def test_access_lists_only_known_actions() -> None:
    with pytest.raises(ValueError, match="'dynamodb:DeleteTable': not an action"):
        FunctionAccess(table_actions=("dynamodb:DeleteTable",))
    with pytest.raises(ValueError, match="only Query and Scan read an index"):
        FunctionAccess(index_actions=("dynamodb:GetItem",))
    with pytest.raises(ValueError, match="index_actions and indexes go together"):
        FunctionAccess(index_actions=(QUERY,))
    with pytest.raises(ValueError, match="'by-nothing': not an index"):
        FunctionAccess(index_actions=(QUERY,), indexes=("by-nothing",))
    access = FunctionAccess(index_actions=(QUERY,), indexes=("by-case",))
    assert (access.index_actions, access.indexes) == ((QUERY,), ("by-case",))


def test_saga_names_must_fit_stack_names() -> None:
    with pytest.raises(DeploymentError, match="saga name 'Tiny_Saga'"):
        _deployment(name="Tiny_Saga")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"stage": "Prod!"}, "stage 'Prod!'"),
        ({"log_retention_days": 10}, "log_retention_days 10"),
        ({"reserved_concurrency": 0}, "reserved_concurrency"),
        ({"overdue_reconciliation_hours": 0}, "overdue_reconciliation_hours"),
        ({"ingress_max_concurrency": 1}, "ingress_max_concurrency 1: 2 to 1000"),
        ({"ingress_max_concurrency": 1001}, "ingress_max_concurrency 1001"),
        ({"tags": {"aws:owner": "x"}}, "tag 'aws:owner'"),
        ({"tags": {"team": "a\nb"}}, "tag team value"),
        ({"tags": {"": "x"}}, "tag ''"),
    ],
)
def test_bad_stage_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        StageSettings(**settings)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Canary(percent=0), "canary percent 0"),
        (lambda: Canary(minutes=0), "canary minutes 0"),
        (lambda: Backup(retention_days=0), "backup retention_days 0"),
        (lambda: Backup(hour_utc=24), "backup hour_utc 24"),
    ],
)
def test_bad_release_and_backup_settings_are_refused(make: Any, message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        make()


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        ("ACTION#", "would reach the ledger's own ACTION# items"),
        ("A", "would reach the ledger's own ACTION# items"),  # "A*" matches ACTION#…
        ("CASE#x", "would reach the ledger's own CASE# items"),
        ("SESSION*", "no wildcard"),
        ("", "1 to 64"),
    ],
)
def test_a_write_prefix_reaching_the_ledgers_own_items_is_refused(
    prefix: str, message: str
) -> None:
    with pytest.raises(DeploymentError, match=message):
        FunctionSettings(ledger_write_prefixes=(prefix,))


def test_write_prefixes_merge_over_the_defaults() -> None:
    merged = FunctionSettings(ledger_write_prefixes=("SESSION#", "QUOTA#")).over(
        FunctionSettings(ledger_write_prefixes=("QUOTA#",))
    )
    assert merged.ledger_write_prefixes == ("QUOTA#", "SESSION#")


def test_production_stage_defaults() -> None:
    assert StageSettings.for_stage("prod").deletion_protection
    assert StageSettings.for_stage("prod").log_retention_days == 365
    assert not StageSettings.for_stage("dev").deletion_protection
    assert StageSettings.for_stage("prod", log_retention_days=90).log_retention_days == 90


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"environment": {"STEPSAGA_FUNCTION": "x"}}, "set by the construct"),
        ({"environment": {"1BAD": "x"}}, "not a valid name"),
        ({"timeout_seconds": 901}, "timeout_seconds"),
        ({"reserved_concurrency": 0}, "reserved_concurrency"),
        ({"memory_mb": 64}, "memory_mb"),
    ],
)
def test_bad_function_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(DeploymentError, match=message):
        FunctionSettings(**settings)


def test_function_settings_merge_over_the_defaults() -> None:
    granted: list[str] = []
    defaults = FunctionSettings(
        environment={"A": "1", "B": "1"}, grant=lambda f: granted.append("default")
    )
    mine = FunctionSettings(
        environment={"B": "2"}, grant=lambda f: granted.append("mine"), memory_mb=1024
    )
    merged = mine.over(defaults)
    assert merged.environment == {"A": "1", "B": "2"}
    assert merged.memory_mb == 1024
    assert merged.grant is not None
    merged.grant(None)  # type: ignore[arg-type]
    assert granted == ["default", "mine"]
