"""The handlers' environment, typed (pydantic-settings), and the deps built from it.

* ``STEPSAGA_LEDGER_URL`` — ``sqlite:///…`` or ``dynamodb://TABLE``; else
  ``STEPSAGA_LEDGER_TABLE_NAME`` (the stack's table); else the ledger in ``STEPSAGA_HOME``.
* ``STEPSAGA_HOME`` — local state folder (default ``.stepsaga``).
* ``STEPSAGA_SAGA`` — the saga (``package.module:attr``) whose functions this process runs;
  ``STEPSAGA_FUNCTION`` — which of its logical functions a Lambda function is;
  ``STEPSAGA_DEPENDENCIES`` — the project's ``Dependencies`` (``package.module:attr``;
  unset: the handlers get no clients). The app reads its own settings in ``aws(ctx)``.
* ``STEPSAGA_RECONCILIATION_TOPIC_ARN`` — SNS topic for notices (unset: none are sent).
* ``STEPSAGA_METRICS`` — ``auto`` (EMF on Lambda, off elsewhere), ``emf`` or ``off``.
* ``STEPSAGA_TASK_CALLBACKS`` — ``auto`` (Step Functions on Lambda, none elsewhere),
  ``aws`` or ``off``: lets the reconciler resume a waiting case itself.
* ``POWERTOOLS_SERVICE_NAME``, ``POWERTOOLS_METRICS_NAMESPACE``, ``POWERTOOLS_LOG_LEVEL``.
* ``AWS_LAMBDA_FUNCTION_NAME`` — set by Lambda: "on Lambda" versus a local run.

Nothing here runs at import time: the Lambda entry point reads the settings on its first
invocation.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from stepsaga._aws import metric_names
from stepsaga._aws.aws_region import region_from
from stepsaga._handlers.deps import HandlerDeps
from stepsaga._handlers.logs import powertools_logger
from stepsaga._handlers.metrics import EmfMetrics, MetricsSink, NullMetrics
from stepsaga._model.inputs import describe_validation_error
from stepsaga._project.home import StateHome
from stepsaga._reconciliation.callbacks import TaskSuccessSender, sfn_task_success
from stepsaga._reconciliation.notify import Notifier, NullNotifier, SnsNotifier
from stepsaga._util.clock import Clock, SystemClock
from stepsaga.errors import InvalidInputError
from stepsaga.ledger import open_ledger


class MetricsMode(StrEnum):
    AUTO = "auto"
    EMF = "emf"
    OFF = "off"


class CallbackMode(StrEnum):
    AUTO = "auto"
    AWS = "aws"
    OFF = "off"


class HandlerSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="STEPSAGA_", extra="ignore", frozen=True, populate_by_name=True
    )

    ledger_url: str | None = None
    ledger_table_name: str | None = None
    home: Path = Path(".stepsaga")
    saga: str | None = None
    function: str | None = None
    dependencies: str | None = None
    reconciliation_topic_arn: str | None = None
    metrics: MetricsMode = MetricsMode.AUTO
    task_callbacks: CallbackMode = CallbackMode.AUTO
    service_name: str = Field(
        default=metric_names.SERVICE_NAME, validation_alias=AliasChoices("POWERTOOLS_SERVICE_NAME")
    )
    metrics_namespace: str = Field(
        default=metric_names.NAMESPACE,
        validation_alias=AliasChoices("POWERTOOLS_METRICS_NAMESPACE"),
    )
    log_level: str = Field(default="INFO", validation_alias=AliasChoices("POWERTOOLS_LOG_LEVEL"))
    lambda_function_name: str | None = Field(
        default=None, validation_alias=AliasChoices("AWS_LAMBDA_FUNCTION_NAME")
    )

    @model_validator(mode="after")
    def _one_ledger(self) -> HandlerSettings:
        if self.ledger_url and self.ledger_table_name:
            expected = f"dynamodb://{self.ledger_table_name}"
            if not self.ledger_url.startswith(expected):
                raise ValueError(
                    "STEPSAGA_LEDGER_URL and STEPSAGA_LEDGER_TABLE_NAME name different ledgers"
                )
        return self

    @property
    def on_lambda(self) -> bool:
        return bool(self.lambda_function_name)

    @property
    def resolved_ledger_url(self) -> str:
        if self.ledger_url:
            return self.ledger_url
        if self.ledger_table_name:
            return f"dynamodb://{self.ledger_table_name}"
        return StateHome(self.home).ledger_url

    @property
    def emits_metrics(self) -> bool:
        if self.metrics is MetricsMode.AUTO:
            return self.on_lambda
        return self.metrics is MetricsMode.EMF

    @property
    def sends_callbacks(self) -> bool:
        if self.task_callbacks is CallbackMode.AUTO:
            return self.on_lambda
        return self.task_callbacks is CallbackMode.AWS


def load_settings() -> HandlerSettings:
    """Read the environment; a bad value is one ``InvalidInputError`` naming the variable."""
    try:
        return HandlerSettings()
    except ValidationError as exc:
        field, line = describe_validation_error(exc, "environment")
        raise InvalidInputError(f"environment: {line}", field=field) from None


def deps_from_settings(
    settings: HandlerSettings, clients: Any, *, clock: Clock | None = None
) -> HandlerDeps:
    """Open everything the settings name (the Lambda entry point's deps) around the app's
    ``clients``."""
    clock = clock or SystemClock()
    ledger = open_ledger(settings.resolved_ledger_url, clock=clock)
    return HandlerDeps(
        ledger=ledger,
        clients=clients,
        clock=clock,
        logger=powertools_logger(
            settings.service_name, settings.log_level, to_stderr=not settings.on_lambda
        ),
        metrics=_metrics(settings),
        notifier=_notifier(settings),
        send_task_success=_callbacks(settings),
    )


def _metrics(settings: HandlerSettings) -> MetricsSink:
    if settings.emits_metrics:
        return EmfMetrics(settings.metrics_namespace, settings.service_name)
    return NullMetrics()


def _notifier(settings: HandlerSettings) -> Notifier:
    if not settings.reconciliation_topic_arn:
        return NullNotifier()
    import boto3  # deferred: local runs never pay for boto3's import

    return SnsNotifier(
        boto3.client("sns", region_name=region_from(os.environ)), settings.reconciliation_topic_arn
    )


def _callbacks(settings: HandlerSettings) -> TaskSuccessSender | None:
    if not settings.sends_callbacks:
        return None
    import boto3

    return sfn_task_success(boto3.client("stepfunctions", region_name=region_from(os.environ)))
