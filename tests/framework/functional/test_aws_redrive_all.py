"""``redrive --all-failed`` on the AWS backend (moto): the same decisions as locally.

moto 5.2 has no ``RedriveExecution``; ``aws_support.RedrivingSfn`` adds it with the
service's semantics over moto's own executions and delegates every other call to moto.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from moto.stepfunctions.models import stepfunctions_backends
from typer.testing import CliRunner

from stepsaga.backends._aws import AwsBackend, FixedClients, SessionClients
from stepsaga.backends._bulk_redrive import RedriveDecision, redrive_all_failed
from stepsaga.cli._app import app
from tests.framework.functional.aws_support import (
    ACCOUNT,
    REGION,
    TABLE,
    FakeAws,
    RedrivingSfn,
    fake_aws,
)
from tests.framework.functional.cli_support import case_data
from workflows.case import parse_case
from workflows.project import reference_project


@pytest.fixture
def aws() -> Iterator[FakeAws]:
    with fake_aws() as fake:
        yield fake


def _backend(aws: FakeAws, sfn: RedrivingSfn) -> AwsBackend:
    return AwsBackend(
        aws.settings,
        project=reference_project(),
        clients=FixedClients(sfn, aws.ddb, aws.cfn),  # type: ignore[arg-type]
        wait_seconds=0,
        sleeper=aws.sleeps.append,
    )


def _started(aws: FakeAws, sfn: RedrivingSfn, case_id: str) -> str:
    view = _backend(aws, sfn).start(parse_case(case_data(case_id)))
    return view.name


def _stopped(aws: FakeAws, name: str, error: str, *, days_ago: float = 0) -> None:
    aws.set_status(name, "FAILED", error=error, cause="{}")
    execution = stepfunctions_backends[ACCOUNT][REGION].describe_execution(aws.execution_arn(name))
    execution.stop_date = datetime.now(UTC) - timedelta(days=days_ago)


def test_technical_failures_are_redriven_and_business_outcomes_never(aws: FakeAws) -> None:
    sfn = RedrivingSfn(aws.sfn)
    transient = _started(aws, sfn, "CASE-1")
    throttled = _started(aws, sfn, "CASE-2")
    compensated = _started(aws, sfn, "CASE-3")
    too_old = _started(aws, sfn, "CASE-4")
    running = _started(aws, sfn, "CASE-5")
    _stopped(aws, transient, "TransientError")
    _stopped(aws, throttled, "Lambda.TooManyRequestsException")
    _stopped(aws, compensated, "Saga.Compensated")
    _stopped(aws, too_old, "TransientError", days_ago=15)

    view = redrive_all_failed(_backend(aws, sfn), now=datetime.now(UTC))

    decisions = {row.name: row.decision for row in view.executions}
    assert decisions == {
        transient: RedriveDecision.REDRIVEN,
        throttled: RedriveDecision.REDRIVEN,
        too_old: RedriveDecision.SKIPPED_OUTSIDE_WINDOW,
    }
    assert (view.redriven, view.skipped, view.refused, view.truncated) == (2, 1, 0, False)
    assert set(sfn.redrives) == {aws.execution_arn(transient), aws.execution_arn(throttled)}
    assert sfn.calls["redrive_execution"] == 2
    for name in (compensated, running, too_old):
        assert aws.execution_arn(name) not in sfn.redrives
    assert all(row.status == "RUNNING" for row in view.executions if row.status is not None)


def test_error_filter_max_and_a_refusal(aws: FakeAws) -> None:
    sfn = RedrivingSfn(aws.sfn)
    names = [_started(aws, sfn, f"CASE-{n}") for n in (1, 2, 3)]
    for name in names:
        _stopped(aws, name, "TransientError")

    other = redrive_all_failed(
        _backend(aws, sfn), now=datetime.now(UTC), error="StoreUnavailableError"
    )
    assert other.redriven == 0
    assert sfn.calls["redrive_execution"] == 0

    bounded = redrive_all_failed(_backend(aws, sfn), now=datetime.now(UTC), max_redrives=1)
    assert (bounded.redriven, bounded.truncated) == (1, True)
    assert sfn.calls["redrive_execution"] == 1


def test_the_cli_prints_the_summary_and_exits_0(
    aws: FakeAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    sfn = RedrivingSfn(aws.sfn)
    monkeypatch.setattr(SessionClients, "stepfunctions", lambda self, region: sfn)
    name = _started(aws, sfn, "CASE-1")
    _stopped(aws, name, "TransientError")
    env = {
        "STEPSAGA_STATE_MACHINE_ARN": aws.state_machine_arn,
        "STEPSAGA_LEDGER_TABLE_NAME": TABLE,
        "STEPSAGA_AWS_WAIT_SECONDS": "0",
        "AWS_DEFAULT_REGION": REGION,
    }
    result = CliRunner().invoke(
        app, ["--backend", "aws", "redrive", "--all-failed", "--since", "1h", "--json"], env=env
    )
    assert result.exit_code == 0, result.stderr
    assert '"redriven": 1' in result.stdout
    refused = CliRunner().invoke(
        app, ["--backend", "aws", "redrive", "--all-failed", "--time-scale", "0"], env=env
    )
    assert refused.exit_code == 2
    assert "--time-scale" in refused.stderr


def test_calls_grow_with_the_executions_redriven_not_more(aws: FakeAws) -> None:
    """One listing page, then a fixed number of calls per failed execution (describe it,
    locate it, redrive it); measured: 7 per execution, 1 + 7n in all."""
    sfn = RedrivingSfn(aws.sfn)
    names = [_started(aws, sfn, f"CASE-{n}") for n in range(6)]
    for name in names:
        _stopped(aws, name, "TransientError")
    sfn.calls.clear()

    view = redrive_all_failed(_backend(aws, sfn), now=datetime.now(UTC))

    assert view.redriven == 6
    assert sfn.calls["list_executions"] == 1
    assert sfn.calls["redrive_execution"] == 6
    assert sum(sfn.calls.values()) <= 1 + 8 * 6
