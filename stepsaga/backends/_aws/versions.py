"""Pruning old state machine versions without breaking a case that still needs one.

Every deploy that changes the definition publishes a state machine version, retained by
the stack (``stepsaga.cdk._state_machine``): an execution keeps the version it started on
for its whole life, a redrive included. AWS keeps at most 1,000 versions per state
machine, so ``stepsaga versions prune --keep N`` deletes the old ones, except a version

1. among the ``keep`` newest (rolling back stays one alias update away);
2. an alias routes to (AWS refuses that delete too);
3. with a ``RUNNING`` execution (a case waiting on a person for days runs on it);
4. with a ``FAILED``/``TIMED_OUT``/``ABORTED`` execution stopped within the redrive window
   (14 days): a redrive runs the execution's own version again.

Executions are found per version with ``ListExecutions(stateMachineArn=<version ARN>)``,
which AWS documents for versions and aliases. ``DeleteStateMachineVersion`` never stops
an execution, but a deleted version can no longer be started or redriven on, which is why
rules 3 and 4 exist. Every rule is a row of ``KEEP_REASONS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from stepsaga.backends._aws.errors import aws_call, error_code, error_message
from stepsaga.errors import InvalidInputError

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

__all__ = [
    "KEEP_REASONS",
    "REDRIVE_WINDOW",
    "Keep",
    "PruneView",
    "VersionRow",
    "prune_versions",
]

#: How long after it stopped an execution can be redriven (AWS: 14 days).
REDRIVE_WINDOW: Final = timedelta(days=14)
_REDRIVABLE: Final = ("FAILED", "TIMED_OUT", "ABORTED")
MAX_KEEP: Final = 1000


class Keep(StrEnum):
    NEWEST = "newest"
    ALIAS = "alias"
    RUNNING = "running"
    REDRIVABLE = "redrivable"


#: Why a version stays (the rules above, in the order they are checked).
KEEP_REASONS: Final[dict[Keep, str]] = {
    Keep.NEWEST: "one of the {keep} newest versions",
    Keep.ALIAS: "alias {detail} routes to it",
    Keep.RUNNING: "execution {detail} is running on it",
    Keep.REDRIVABLE: "execution {detail} can still be redriven on it",
}


@dataclass(frozen=True)
class VersionRow:
    """One version and what happens to it: ``kept`` (with ``reason``), ``deleted``, or
    ``refused`` (AWS refused the delete; ``reason`` says why)."""

    version_arn: str
    version: int
    created: datetime | None
    action: str
    reason: str | None = None


@dataclass(frozen=True)
class PruneView:
    state_machine_arn: str
    keep: int
    dry_run: bool
    versions: tuple[VersionRow, ...]

    def rows(self, action: str) -> list[VersionRow]:
        return [row for row in self.versions if row.action == action]

    @property
    def refused(self) -> list[VersionRow]:
        return self.rows("refused")


def check_keep(keep: int) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or not 1 <= keep <= MAX_KEEP:
        raise InvalidInputError(
            f"--keep {keep!r}: a whole number from 1 to {MAX_KEEP} (the newest versions kept)",
            field="keep",
        )
    return keep


def prune_versions(
    sfn: SFNClient, state_machine_arn: str, *, keep: int, now: datetime, dry_run: bool = False
) -> PruneView:
    """Delete the versions of ``state_machine_arn`` no rule keeps (``dry_run``: only say)."""
    check_keep(keep)
    versions = sorted(_versions(sfn, state_machine_arn), key=lambda v: v[1], reverse=True)
    routed = _routed_versions(sfn, state_machine_arn)
    decided = [
        (arn, number, created, _keep_reason(sfn, arn, index, keep, routed, now))
        for index, (arn, number, created) in enumerate(versions)
    ]  # every version judged first, then the deletes
    rows = [
        VersionRow(arn, number, created, "kept", reason)
        if reason is not None
        else VersionRow(arn, number, created, "would delete")
        if dry_run
        else _delete(sfn, arn, number, created)
        for arn, number, created, reason in decided
    ]
    return PruneView(state_machine_arn, keep, dry_run, tuple(rows))


def _keep_reason(
    sfn: SFNClient,
    arn: str,
    index: int,
    keep: int,
    routed: dict[str, str],
    now: datetime,
) -> str | None:
    if index < keep:
        return KEEP_REASONS[Keep.NEWEST].format(keep=keep)
    if arn in routed:
        return KEEP_REASONS[Keep.ALIAS].format(detail=routed[arn])
    running = next(_executions(sfn, arn, "RUNNING", page_size=1), None)
    if running is not None:
        return KEEP_REASONS[Keep.RUNNING].format(detail=running["name"])
    since = now - REDRIVE_WINDOW
    for status in _REDRIVABLE:
        for execution in _executions(sfn, arn, status):
            stopped = execution.get("stopDate")
            if stopped is None or stopped >= since:
                return KEEP_REASONS[Keep.REDRIVABLE].format(
                    detail=f"{execution['name']} ({status})"
                )
    return None


def _delete(sfn: SFNClient, arn: str, number: int, created: datetime | None) -> VersionRow:
    with aws_call("states:DeleteStateMachineVersion"):
        try:
            sfn.delete_state_machine_version(stateMachineVersionArn=arn)
        except ClientError as exc:
            if error_code(exc) not in ("ConflictException", "ValidationException"):
                raise
            # An alias moved onto it since the check, or a concurrent publish.
            reason = f"AWS refused: {error_code(exc)}: {error_message(exc)}"
            return VersionRow(arn, number, created, "refused", reason)
    return VersionRow(arn, number, created, "deleted")


def _versions(sfn: SFNClient, machine: str) -> Iterator[tuple[str, int, datetime | None]]:
    token: str | None = None
    while True:
        with aws_call("states:ListStateMachineVersions"):
            page = sfn.list_state_machine_versions(
                stateMachineArn=machine, maxResults=1000, **({"nextToken": token} if token else {})
            )
        for item in page.get("stateMachineVersions", []):
            arn = item["stateMachineVersionArn"]
            yield arn, int(arn.rpartition(":")[2]), item.get("creationDate")
        token = page.get("nextToken")
        if not token:
            return


def _routed_versions(sfn: SFNClient, machine: str) -> dict[str, str]:
    """Version ARN → the alias (name) that routes some traffic to it."""
    routed: dict[str, str] = {}
    token: str | None = None
    while True:
        with aws_call("states:ListStateMachineAliases"):
            page = sfn.list_state_machine_aliases(
                stateMachineArn=machine, maxResults=100, **({"nextToken": token} if token else {})
            )
        for alias in page.get("stateMachineAliases", []):
            alias_arn = alias["stateMachineAliasArn"]
            with aws_call("states:DescribeStateMachineAlias"):
                described = sfn.describe_state_machine_alias(stateMachineAliasArn=alias_arn)
            for route in described.get("routingConfiguration", []):
                routed.setdefault(route["stateMachineVersionArn"], alias_arn.rpartition(":")[2])
        token = page.get("nextToken")
        if not token:
            return routed


def _executions(
    sfn: SFNClient, version_arn: str, status: str, *, page_size: int = 1000
) -> Iterator[dict[str, Any]]:
    request: dict[str, Any] = {
        "stateMachineArn": version_arn,
        "statusFilter": status,
        "maxResults": page_size,
    }
    while True:
        with aws_call("states:ListExecutions"):
            page = sfn.list_executions(**request)
        yield from page.get("executions", [])  # type: ignore[misc]
        token = page.get("nextToken")
        if not token:
            return
        request["nextToken"] = token
