"""Lambda entry points: no side effects on import, deps built once from a typed environment."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepsaga.errors import InvalidInputError, TransientError
from stepsaga.handlers import (
    HandlerSettings,
    LambdaEntry,
    deps_from_settings,
    entrypoint,
    load_settings,
)
from stepsaga.handlers.metrics import EmfMetrics, NullMetrics
from stepsaga.handlers.registry import build_handlers, operations_of
from stepsaga.reconciliation import NullNotifier, SnsNotifier
from tests.unit.handlers.helpers import context, step_event
from workflows.replacement_order import saga

MODULES = {
    "ReserveStock": "tasks.reserve_stock",
    "RefundPayment": "tasks.refund_payment",
    "CreateShipment": "tasks.create_shipment",
    "ReleaseReservation": "compensations.release_reservation",
    "Reconcile": "compensations.reconcile",
}


@pytest.fixture(autouse=True)
def fresh_entry() -> Iterator[None]:
    entrypoint.reset()
    yield
    entrypoint.reset()


def test_every_saga_function_has_a_module_level_handler() -> None:
    assert set(saga.functions) == set(MODULES)
    for function, path in saga.functions.items():
        module_name, attribute = path.rsplit(".", 1)
        assert module_name == MODULES[function]
        handler = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(handler, LambdaEntry)
        assert handler.function == function
    assert set(operations_of(saga)) == {
        "reserve_stock",
        "refund_payment",
        "create_shipment",
        "release_reservation",
    }


def test_importing_the_handlers_touches_nothing(tmp_path: Path) -> None:
    home = tmp_path / "untouched"
    code = "; ".join(f"import {m}" for m in MODULES.values())
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"STEPSAGA_HOME": str(home), "PATH": "/usr/bin:/bin"},
        cwd=Path(__file__).parents[3],
    )
    assert not home.exists()


def test_first_invocation_builds_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEPSAGA_HOME", str(tmp_path / "home"))
    from tasks.refund_payment import handler

    first = handler(step_event("RefundPayment"), context("RefundPayment"))
    again = handler(step_event("RefundPayment"), context("RefundPayment"))

    assert (first["replayed"], again["replayed"]) == (False, True)
    assert (tmp_path / "home" / "ledger.sqlite3").exists()
    assert (tmp_path / "home" / "services.sqlite3").exists()


def test_handlers_are_built_once_per_process() -> None:
    builds: list[int] = []

    def build() -> dict[str, object]:
        builds.append(1)
        return {}

    entrypoint.shared_handlers(build)  # type: ignore[arg-type]
    entrypoint.shared_handlers(build)  # type: ignore[arg-type]
    assert builds == [1]


def test_a_configuration_error_is_transient_and_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSAGA_LEDGER_URL", "postgres://nope")
    from tasks.refund_payment import handler

    with pytest.raises(TransientError) as caught:
        handler(step_event("RefundPayment"), context())
    assert "handler configuration" in caught.value.message

    monkeypatch.delenv("STEPSAGA_LEDGER_URL")
    assert handler(step_event("RefundPayment"), context())["replayed"] is False


def test_settings_from_the_stack_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSAGA_LEDGER_TABLE_NAME", "stepsaga-dev-ledger")
    monkeypatch.setenv("STEPSAGA_RECONCILIATION_TOPIC_ARN", "arn:aws:sns:us-east-1:1:t")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "stepsaga-dev")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "stepsaga")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "RefundPayment")
    monkeypatch.setenv("STEPSAGA_PAYMENTS_URL", "https://payments.example")
    monkeypatch.setenv("STEPSAGA_INVENTORY_URL", "https://inventory.example")
    monkeypatch.setenv("STEPSAGA_SHIPPING_URL", "https://shipping.example")
    monkeypatch.setenv("STEPSAGA_HTTP_READ_TIMEOUT", "3")

    settings = load_settings()

    assert settings.resolved_ledger_url == "dynamodb://stepsaga-dev-ledger"
    assert settings.on_lambda
    assert settings.emits_metrics
    assert settings.sends_callbacks
    assert settings.uses_http
    assert settings.http_config().timeouts.read == 3
    assert (settings.service_name, settings.metrics_namespace) == ("stepsaga-dev", "stepsaga")


def test_local_settings_are_quiet(tmp_path: Path) -> None:
    settings = HandlerSettings(home=tmp_path)
    assert settings.resolved_ledger_url == f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    assert not settings.uses_http
    assert not settings.emits_metrics
    assert not settings.sends_callbacks
    deps = deps_from_settings(settings)
    try:
        assert isinstance(deps.metrics, NullMetrics)
        assert isinstance(deps.notifier, NullNotifier)
        assert deps.send_task_success is None
        assert set(build_handlers(deps)) == set(MODULES)
    finally:
        deps.close()


def test_aws_deps_use_emf_sns_and_step_functions(tmp_path: Path) -> None:
    settings = HandlerSettings(
        home=tmp_path,
        reconciliation_topic_arn="arn:aws:sns:us-east-1:123456789012:t",
        lambda_function_name="Reconcile",
    )
    deps = deps_from_settings(settings)
    try:
        assert isinstance(deps.metrics, EmfMetrics)
        assert isinstance(deps.notifier, SnsNotifier)
        assert deps.send_task_success is not None
    finally:
        deps.close()


@pytest.mark.parametrize(
    ("variable", "value"),
    [("STEPSAGA_METRICS", "loud"), ("STEPSAGA_HTTP_READ_TIMEOUT", "soon")],
)
def test_bad_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidInputError) as caught:
        load_settings()
    assert caught.value.message.startswith("environment:")


def test_two_different_ledgers_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSAGA_LEDGER_URL", "dynamodb://one")
    monkeypatch.setenv("STEPSAGA_LEDGER_TABLE_NAME", "two")
    with pytest.raises(InvalidInputError):
        load_settings()
