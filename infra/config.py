"""Per-stage settings of the stack, read from CDK context (``-c key=value`` or cdk.json).

- ``stage`` (default ``dev``): stack ``stepsaga-<stage>``, state machine name prefix.
- ``deletion_protection`` (default: on for ``prod``/``production``): table deletion
  protection; when on, the table, key and log groups are RETAINed when the stack goes.
- ``log_retention_days`` (default 365 in production, else 30): every log group.
- ``reserved_concurrency`` (default none): reserved concurrency of each saga function.
- ``overdue_reconciliation_hours`` (default 24): age at which an OPEN item raises an alarm.
- ``bundling`` (default ``pip``): ``sources`` skips pip (synth-only checks, offline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from aws_cdk import aws_logs as logs
from constructs import Node

from stepsaga.deployment import DEFAULT_STAGE

PRODUCTION_STAGES: Final = frozenset({"prod", "production"})

#: CloudWatch Logs accepts only these retention periods.
_RETENTION: Final[dict[int, logs.RetentionDays]] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}

_STAGE_PATTERN: Final = re.compile(r"^[a-z][a-z0-9-]{0,19}$")


class BundlingMode(StrEnum):
    """How the Lambda asset is built (always without Docker)."""

    #: ``pip install --platform manylinux2014_aarch64 …`` plus the project's packages.
    PIP = "pip"
    #: Only the project's packages: fast and offline, for synth-only checks. Not deployable.
    SOURCES = "sources"


@dataclass(frozen=True)
class StageConfig:
    stage: str = DEFAULT_STAGE
    deletion_protection: bool = False
    log_retention_days: int = 30
    reserved_concurrency: int | None = None
    overdue_reconciliation_hours: int = 24
    bundling: BundlingMode = BundlingMode.PIP

    def __post_init__(self) -> None:
        if not _STAGE_PATTERN.match(self.stage):
            raise ValueError(
                f"stage {self.stage!r}: lowercase letters, digits and '-', starting with a "
                "letter, at most 20 characters"
            )
        if self.log_retention_days not in _RETENTION:
            allowed = ", ".join(str(d) for d in _RETENTION)
            raise ValueError(f"log_retention_days {self.log_retention_days}: one of {allowed}")
        if self.reserved_concurrency is not None and self.reserved_concurrency < 1:
            raise ValueError("reserved_concurrency: at least 1 (0 would disable the functions)")
        if self.overdue_reconciliation_hours < 1:
            raise ValueError("overdue_reconciliation_hours: at least 1")

    @property
    def is_production(self) -> bool:
        return self.stage in PRODUCTION_STAGES

    @property
    def log_retention(self) -> logs.RetentionDays:
        return _RETENTION[self.log_retention_days]

    @classmethod
    def from_context(cls, node: Node) -> StageConfig:
        """Read the settings; unset keys take the stage's defaults (see module docstring)."""
        stage = str(node.try_get_context("stage") or DEFAULT_STAGE)
        production = stage in PRODUCTION_STAGES
        concurrency = node.try_get_context("reserved_concurrency")
        return cls(
            stage=stage,
            deletion_protection=_flag(node.try_get_context("deletion_protection"), production),
            log_retention_days=_int(
                node.try_get_context("log_retention_days"), 365 if production else 30
            ),
            reserved_concurrency=None if concurrency in (None, "") else _int(concurrency, 0),
            overdue_reconciliation_hours=_int(
                node.try_get_context("overdue_reconciliation_hours"), 24
            ),
            bundling=BundlingMode(str(node.try_get_context("bundling") or BundlingMode.PIP)),
        )


def _flag(value: Any, default: bool) -> bool:
    """Context from ``-c`` arrives as a string, from cdk.json as JSON."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"true", "1", "yes", "on"}:
        return True
    if text in {"false", "0", "no", "off"}:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _int(value: Any, default: int) -> int:
    if value is None or value == "":
        return default
    return int(value)
