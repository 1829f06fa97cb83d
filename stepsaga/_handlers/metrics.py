"""Counting what operators alarm on: EMF on Lambda, nothing on stdout locally.

Metric names come from ``stepsaga._aws.metric_names`` (shared with the CDK alarms). Each is a
``Count`` of 1 per event, emitted without extra dimensions (the alarms match the
``service`` dimension only); tenant, case and action key ride along as EMF metadata.

``EmfMetrics`` owns its Powertools EMF provider (``Metrics()`` shares class-level state
across instances) and writes each flushed document through an injected ``write`` — stdout
on Lambda, a captured stream in tests. The embedded backend injects ``NullMetrics`` or
``RecordingMetrics`` so a local run never spams stdout.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
    AmazonCloudWatchEMFProvider,
)

from stepsaga._aws import metric_names
from stepsaga.errors import (
    ActionConflictError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    OutcomeUnknownError,
    StepSagaError,
    StoreUnavailableError,
)

#: Which metric an error escaping a task handler counts as (the first match wins).
METRIC_FOR_ERROR: tuple[tuple[type[StepSagaError], str], ...] = (
    (OutcomeUnknownError, metric_names.OUTCOME_UNKNOWN),
    (ActionConflictError, metric_names.ACTION_CONFLICT),
    (BudgetExhaustedError, metric_names.BUDGET_EXHAUSTED),
    (AttemptBudgetExhaustedError, metric_names.BUDGET_EXHAUSTED),
)


#: The store's ``code`` for a transaction another one cancelled (``StoreUnavailableError``
#: stays the error's name: it is the one ``Retry`` matches).
TRANSACTION_CONFLICT_CODE = "TransactionConflict"


def metric_for(error: StepSagaError) -> str | None:
    if (
        isinstance(error, StoreUnavailableError)
        and error.data.get("code") == TRANSACTION_CONFLICT_CODE
    ):
        return metric_names.TRANSACTION_CONFLICT
    for cls, name in METRIC_FOR_ERROR:
        if isinstance(error, cls):
            return name
    return None


class MetricsSink(Protocol):
    def count(self, name: str, metadata: Mapping[str, str]) -> None:
        """Count one occurrence of ``name`` (a ``stepsaga._aws.metric_names`` constant)."""
        ...

    def flush(self) -> None:
        """Publish what was counted since the last flush (end of each invocation)."""
        ...


class NullMetrics:
    """Counts nothing (the embedded backend's default)."""

    def count(self, name: str, metadata: Mapping[str, str]) -> None:
        return None

    def flush(self) -> None:
        return None


@dataclass
class RecordingMetrics:
    """Keeps every count in memory (tests, and local runs that want to show them)."""

    counted: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    flushes: int = 0

    def count(self, name: str, metadata: Mapping[str, str]) -> None:
        self.counted.append((name, dict(metadata)))

    def flush(self) -> None:
        self.flushes += 1

    def total(self, name: str) -> int:
        return sum(1 for counted, _ in self.counted if counted == name)


def _stdout(line: str) -> None:
    print(line, flush=True)  # CloudWatch reads EMF from the function's stdout


class EmfMetrics:
    """CloudWatch Embedded Metric Format documents, one per flush."""

    def __init__(
        self, namespace: str, service: str, *, write: Callable[[str], None] = _stdout
    ) -> None:
        self._provider = AmazonCloudWatchEMFProvider(namespace=namespace, service=service)
        self._write = write
        self._lock = threading.Lock()

    def count(self, name: str, metadata: Mapping[str, str]) -> None:
        with self._lock:
            self._provider.add_metric(name=name, unit=MetricUnit.Count, value=1)
            for key, value in metadata.items():
                self._provider.add_metadata(key=key, value=value)

    def flush(self) -> None:
        with self._lock:
            if not self._provider.metric_set:
                return  # nothing counted: no document (and no Powertools warning)
            document = self._provider.serialize_metric_set()
            self._provider.clear_metrics()
        self._write(json.dumps(document, separators=(",", ":")))
