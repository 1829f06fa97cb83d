"""Stage settings from CDK context, and the production table's protection."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from infra.app import main
from infra.config import ContextError, ServiceEndpoints, StageConfig
from services.dependencies import ENV_SERVICES
from stepsaga.cdk import Backup, BundlingMode, Canary
from stepsaga.cdk._ledger_table import LedgerTable
from tests.framework.infra.conftest import SERVICE_CONTEXT


def _config(**context: object) -> StageConfig:
    return StageConfig.from_context(App(context={**SERVICE_CONTEXT, **context}).node)


def test_defaults_are_the_dev_stage() -> None:
    config = _config()
    services = ServiceEndpoints(
        inventory_url=SERVICE_CONTEXT["inventory_url"],
        payments_url=SERVICE_CONTEXT["payments_url"],
        shipping_url=SERVICE_CONTEXT["shipping_url"],
    )
    assert config == StageConfig(services=services)
    assert not services.allow_insecure
    stage = config.stage
    assert (stage.stage, stage.deletion_protection, stage.log_retention_days) == (
        "dev",
        False,
        30,
    )
    assert config.stage.bundling is BundlingMode.PIP


@pytest.mark.parametrize("stage", ["prod", "production"])
def test_production_stages_are_protected_by_default(stage: str) -> None:
    config = _config(stage=stage)
    assert config.stage.deletion_protection
    assert config.stage.log_retention_days == 365


def test_context_strings_from_the_command_line_are_parsed() -> None:
    config = _config(
        stage="prod",
        deletion_protection="false",
        log_retention_days="90",
        reserved_concurrency="5",
        overdue_reconciliation_hours="6",
        bundling="sources",
    )
    assert not config.stage.deletion_protection
    assert config.stage.log_retention_days == 90
    assert config.stage.reserved_concurrency == 5
    assert config.stage.overdue_reconciliation_hours == 6
    assert config.stage.bundling is BundlingMode.SOURCES


def test_load_and_operations_settings_come_from_the_context() -> None:
    default = _config()
    assert default.stage.canary == Canary()
    assert default.stage.backup is None
    assert default.stage.tags == {}
    config = _config(
        ingress_max_concurrency="20",
        execution_timeout_days="7",
        canary="false",
        backup_retention_days="90",
        tags='{"team": "payments", "cost-center": "cc-42"}',
    )
    assert config.stage.ingress_max_concurrency == 20
    assert config.stage.execution_timeout_seconds == 7 * 86400
    assert config.stage.canary is None
    assert config.stage.backup == Backup(retention_days=90)
    assert config.stage.tags == {"team": "payments", "cost-center": "cc-42"}


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"stage": "Prod!"}, "stage 'Prod!'"),
        ({"log_retention_days": "10"}, "log_retention_days 10"),
        ({"reserved_concurrency": "0"}, "reserved_concurrency"),
        ({"overdue_reconciliation_hours": "0"}, "overdue_reconciliation_hours"),
        ({"deletion_protection": "maybe"}, "expected true or false"),
        ({"log_retention_days": "a month"}, "log_retention_days: expected a whole number"),
        ({"bundling": "docker"}, "bundling 'docker': one of pip, sources"),
        ({"ingress_max_concurrency": "1"}, "ingress_max_concurrency 1"),
        ({"backup_retention_days": "0"}, "backup retention_days 0"),
        ({"tags": "team=payments"}, "tags: expected a JSON object"),
        ({"tags": '{"team": 1}'}, "tags: expected a JSON object of strings"),
        ({"tags": '{"aws:x": "y"}'}, "tag 'aws:x'"),
    ],
)
def test_invalid_context_is_refused(context: dict[str, str], message: str) -> None:
    with pytest.raises(ContextError, match=message):
        _config(**context)


# --- the downstream services ------------------------------------------------------------


def test_service_urls_and_timeouts_become_the_handlers_environment() -> None:
    config = _config(http_read_timeout="8", http_connect_timeout="1.5")
    assert config.services.environment() == {
        ENV_SERVICES: "http",
        "STEPSAGA_INVENTORY_URL": "https://inventory.example.com",
        "STEPSAGA_PAYMENTS_URL": "https://payments.example.com/v1",
        "STEPSAGA_SHIPPING_URL": "https://shipping.example.com:8443",
        "STEPSAGA_HTTP_CONNECT_TIMEOUT": "1.5",
        "STEPSAGA_HTTP_READ_TIMEOUT": "8",
        "STEPSAGA_HTTP_WRITE_TIMEOUT": "5",
        "STEPSAGA_HTTP_POOL_TIMEOUT": "2",
    }


def test_missing_service_urls_are_named_in_one_line() -> None:
    context = {"inventory_url": SERVICE_CONTEXT["inventory_url"], "payments_url": " "}
    with pytest.raises(ContextError) as caught:
        StageConfig.from_context(App(context=context).node)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("missing context payments_url, shipping_url:")
    assert "-c payments_url=https://… -c shipping_url=https://…" in message


def test_the_app_refuses_to_synth_without_service_urls(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(App(context={"bundling": "sources"}))
    assert caught.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "stepsaga infra: missing context inventory_url, payments_url, shipping_url:"
    )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (
            {"payments_url": "http://payments.internal"},
            r"payments_url 'http://payments.internal': must be an https:// URL "
            r"\(plain http needs -c allow_insecure_service_urls=true\)",
        ),
        ({"shipping_url": "ftp://shipping.example.com"}, "shipping_url .*must be an https:// URL"),
        ({"inventory_url": "inventory.example.com"}, "inventory_url .*must be an https:// URL"),
        ({"inventory_url": "https://"}, "inventory_url 'https://': names no host"),
        ({"inventory_url": "https://inv.example.com:99999"}, "inventory_url: not a valid URL"),
        ({"payments_url": "https://payments.example.com/?key=1"}, "no query or fragment"),
        ({"http_read_timeout": "0"}, "http_read_timeout: must be more than 0"),
        ({"http_read_timeout": "soon"}, "http_read_timeout: expected a number of seconds"),
        ({"http_read_timeout": "25"}, "must stay below the 30 s function timeout"),
        ({"allow_insecure_service_urls": "perhaps"}, "allow_insecure_service_urls: expected"),
    ],
)
def test_bad_service_settings_are_refused(context: dict[str, str], message: str) -> None:
    with pytest.raises(ContextError, match=message):
        _config(**context)


def test_credentials_in_a_service_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(ContextError) as caught:
        _config(payments_url="http://svc:s3cret@payments.example.com")
    assert "credentials" in str(caught.value)
    assert "s3cret" not in str(caught.value)


def test_plain_http_only_when_explicitly_allowed() -> None:
    config = _config(
        inventory_url="http://inventory.internal:8080", allow_insecure_service_urls="true"
    )
    assert config.services.allow_insecure
    assert config.services.environment()["STEPSAGA_INVENTORY_URL"] == (
        "http://inventory.internal:8080"
    )


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
