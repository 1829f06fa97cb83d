"""The generic Lambda entry point: no side effects on import, one build per process from a
typed environment naming the saga, the function and the project's dependencies."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepsaga._handlers import (
    HandlerSettings,
    build_handlers,
    deps_from_settings,
    entrypoint,
    load_settings,
    step_handlers_of,
)
from stepsaga._handlers.metrics import EmfMetrics, NullMetrics
from stepsaga._project import deployment
from stepsaga._reconciliation import NullNotifier, SnsNotifier
from stepsaga.errors import InvalidInputError, TransientError
from stepsaga.lambdas import step as handler
from tests.framework.unit.handlers.helpers import context, step_event
from workflows.replacement_order import saga

FUNCTIONS = {"ReserveStock", "RefundPayment", "CreateShipment", "ReleaseReservation", "Reconcile"}


@pytest.fixture(autouse=True)
def fresh_entry() -> Iterator[None]:
    entrypoint.reset()
    yield
    entrypoint.reset()


@pytest.fixture
def lambda_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment the CDK app gives the RefundPayment function (simulated services)."""
    monkeypatch.setenv(deployment.ENV_SAGA, "workflows.replacement_order:saga")
    monkeypatch.setenv(deployment.ENV_FUNCTION, "RefundPayment")
    monkeypatch.setenv(deployment.ENV_DEPENDENCIES, "services.dependencies:dependencies")
    monkeypatch.setenv("STEPSAGA_SERVICES", "simulated")
    monkeypatch.setenv("STEPSAGA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_every_function_is_served_by_the_generic_entry() -> None:
    assert set(saga.functions) == FUNCTIONS
    assert saga.functions["RefundPayment"] == "tasks.refund_payment:RefundPayment"
    assert saga.functions["Reconcile"] == "stepsaga._handlers.reconcile:reconciler"
    assert set(step_handlers_of(saga)) == {
        "reserve_stock",
        "refund_payment",
        "create_shipment",
        "release_reservation",
    }
    assert deployment.LAMBDA_HANDLER == "stepsaga.lambdas.step"


def test_importing_the_entry_and_the_handlers_touches_nothing(tmp_path: Path) -> None:
    home = tmp_path / "untouched"
    modules = [
        "stepsaga._handlers.entrypoint",
        "tasks.refund_payment",
        "compensations.release_reservation",
    ]
    subprocess.run(
        [sys.executable, "-c", "; ".join(f"import {m}" for m in modules)],
        check=True,
        env={"STEPSAGA_HOME": str(home), "PATH": "/usr/bin:/bin"},
        cwd=Path(__file__).parents[4],
    )
    assert not home.exists()


def test_first_invocation_builds_from_the_environment(lambda_env: Path) -> None:
    first = handler(step_event("RefundPayment"), context("RefundPayment"))
    again = handler(step_event("RefundPayment"), context("RefundPayment"))

    assert (first["replayed"], again["replayed"]) == (False, True)
    assert (lambda_env / "ledger.sqlite3").exists()
    assert (lambda_env / "services.sqlite3").exists()


def test_handlers_are_built_once_per_process() -> None:
    builds: list[int] = []

    def build() -> entrypoint.Entry:
        builds.append(1)
        return entrypoint.Entry(function="F", handlers={})

    entrypoint.shared_entry(build)
    entrypoint.shared_entry(build)
    assert builds == [1]


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("STEPSAGA_LEDGER_URL", "postgres://nope", "handler configuration"),
        (deployment.ENV_SAGA, "workflows.nowhere:saga", "no module named 'workflows.nowhere'"),
        (deployment.ENV_FUNCTION, "ChargeCard", "not a function of saga replacement-order"),
        (deployment.ENV_DEPENDENCIES, "services.dependencies:nothing", "no attribute 'nothing'"),
        ("STEPSAGA_SERVICES", "carrier-pigeon", "STEPSAGA_SERVICES must be one of"),
    ],
)
def test_a_configuration_error_is_transient_and_not_cached(
    lambda_env: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    good = {
        deployment.ENV_SAGA: "workflows.replacement_order:saga",
        deployment.ENV_FUNCTION: "RefundPayment",
        deployment.ENV_DEPENDENCIES: "services.dependencies:dependencies",
        "STEPSAGA_SERVICES": "simulated",
    }
    monkeypatch.setenv(variable, value)
    with pytest.raises(TransientError) as caught:
        handler(step_event("RefundPayment"), context())
    assert caught.value.message.startswith("handler configuration")
    assert says in caught.value.message

    if variable in good:
        monkeypatch.setenv(variable, good[variable])
    else:
        monkeypatch.delenv(variable)
    assert handler(step_event("RefundPayment"), context())["replayed"] is False


@pytest.mark.parametrize("missing", [deployment.ENV_SAGA, deployment.ENV_FUNCTION])
def test_the_saga_and_the_function_must_be_named(
    lambda_env: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.delenv(missing)
    with pytest.raises(TransientError) as caught:
        handler(step_event("RefundPayment"), context())
    assert missing in caught.value.message


def test_settings_from_the_stack_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSAGA_LEDGER_TABLE_NAME", "stepsaga-dev-ledger")
    monkeypatch.setenv("STEPSAGA_RECONCILIATION_TOPIC_ARN", "arn:aws:sns:us-east-1:1:t")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "stepsaga-dev")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "stepsaga")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "RefundPayment")
    monkeypatch.setenv(deployment.ENV_SAGA, "workflows.replacement_order:saga")
    monkeypatch.setenv(deployment.ENV_FUNCTION, "RefundPayment")

    settings = load_settings()

    assert settings.resolved_ledger_url == "dynamodb://stepsaga-dev-ledger"
    assert settings.on_lambda
    assert settings.emits_metrics
    assert settings.sends_callbacks
    assert (settings.saga, settings.function) == (
        "workflows.replacement_order:saga",
        "RefundPayment",
    )
    assert (settings.service_name, settings.metrics_namespace) == ("stepsaga-dev", "stepsaga")


def test_local_settings_are_quiet(tmp_path: Path) -> None:
    settings = HandlerSettings(home=tmp_path)
    assert settings.resolved_ledger_url == f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    assert not settings.emits_metrics
    assert not settings.sends_callbacks
    deps = deps_from_settings(settings, None)
    try:
        assert isinstance(deps.metrics, NullMetrics)
        assert isinstance(deps.notifier, NullNotifier)
        assert deps.send_task_success is None
        assert set(build_handlers(deps, saga)) == FUNCTIONS
    finally:
        deps.close()


def test_aws_deps_use_emf_sns_and_step_functions(tmp_path: Path) -> None:
    settings = HandlerSettings(
        home=tmp_path,
        reconciliation_topic_arn="arn:aws:sns:us-east-1:123456789012:t",
        lambda_function_name="Reconcile",
    )
    deps = deps_from_settings(settings, None)
    try:
        assert isinstance(deps.metrics, EmfMetrics)
        assert isinstance(deps.notifier, SnsNotifier)
        assert deps.send_task_success is not None
    finally:
        deps.close()


def test_bad_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSAGA_METRICS", "loud")
    with pytest.raises(InvalidInputError) as caught:
        load_settings()
    assert caught.value.message.startswith("environment:")


def test_two_different_ledgers_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSAGA_LEDGER_URL", "dynamodb://one")
    monkeypatch.setenv("STEPSAGA_LEDGER_TABLE_NAME", "two")
    with pytest.raises(InvalidInputError):
        load_settings()
