"""A fake deployment for the ``--backend aws`` tests: moto's Step Functions, DynamoDB and
CloudFormation with the stack's names, plus helpers to put the ledger and executions in
the states a test needs (moto runs no Lambda here, so executions stay RUNNING unless told).

moto 5.2 has no ``RedriveExecution``; :class:`RedrivingSfn` adds it with the service's
semantics over moto's own executions (FAILED/TIMED_OUT/ABORTED → RUNNING, ``redriveCount``
+1, anything else ``ExecutionNotRedrivable``) and delegates every other call to moto.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import dynamodb_backends
from moto.stepfunctions.models import stepfunctions_backends

from stepsaga._project.deployment import (
    OUTPUT_LEDGER_TABLE_NAME,
    OUTPUT_RECONCILIATION_TOPIC_ARN,
    OUTPUT_STATE_MACHINE_ARN,
    state_machine_name,
)
from stepsaga._project.home import StateHome
from stepsaga.backends._aws import AwsBackend, AwsSettings, FixedClients
from stepsaga.backends._aws.pointers import Pointer, record_pointer
from stepsaga.ledger import Ledger, ReconItem, Record, open_ledger
from stepsaga.ledger._dynamodb import DynamoDBStore, create_table
from stepsaga.ledger._table import AUDIT_PREFIX, AUDIT_SORT, PARTITION_KEY, SORT_KEY
from stepsaga.workflow import compile
from stepsaga.workflow._substitutions import render
from tests.framework.functional.cli_support import cli
from workflows.project import reference_project
from workflows.replacement_order import saga

REGION = "us-east-1"
ACCOUNT = "123456789012"
TABLE = "stepsaga-dev-ledger"
STACK = "stepsaga-dev"
MACHINE = state_machine_name(saga.name)
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:stepsaga-dev-reconciliation"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/stepsaga-dev-state-machine"


def definition() -> str:
    """The compiled saga with made-up function ARNs (moto does not run it here)."""
    arns = saga.definition_substitutions(
        lambda function: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:dev-{function}"
    )
    return json.dumps(render(compile(saga), arns))


@dataclass
class FakeAws:
    sfn: Any
    ddb: Any
    cfn: Any
    state_machine_arn: str
    sleeps: list[float] = field(default_factory=list)

    @property
    def settings(self) -> AwsSettings:
        return AwsSettings(self.state_machine_arn, TABLE, TOPIC_ARN)

    def backend(
        self, *, wait_seconds: float = 0, identity: Any = None, **changes: Any
    ) -> AwsBackend:
        """``identity``: the STS client whose caller resolves items (default: moto's)."""
        clients = FixedClients(self.sfn, self.ddb, self.cfn, identity)
        changes.setdefault("sleeper", self.sleeps.append)
        return AwsBackend(
            self.settings,
            project=reference_project(),
            clients=clients,
            wait_seconds=wait_seconds,
            **changes,
        )

    def ledger(self) -> Ledger:
        return Ledger(DynamoDBStore(TABLE, self.ddb))

    def copy_ledger(self, records: list[Record], items: list[ReconItem]) -> None:
        """Put records and items (e.g. read from a local run) into the table as they are."""
        store = DynamoDBStore(TABLE, self.ddb)
        for record in records:
            store.put(record, expect=None)
        for item in items:
            store.put_item(item, expect=None)

    def start_recorded(self, data: dict[str, Any], *, at: datetime | None = None) -> str:
        """Start an execution of ``data`` (a case, or just its identity) the way the start
        paths do: its pointer first (``pointers.record_pointer``), then ``StartExecution``
        under the derived name (no validation, no ledger reads: fast for many cases)."""
        pointer = Pointer.of(
            self.state_machine_arn,
            data["tenant_id"],
            data["case_id"],
            data["approval"]["revision"],
            at=at or datetime.now(UTC),
        )
        record_pointer(self.ddb, TABLE, pointer)
        self.sfn.start_execution(
            stateMachineArn=self.state_machine_arn,
            name=pointer.execution_name,
            input=json.dumps(data),
        )
        return pointer.execution_name

    def seed_recorded(self, identities: list[dict[str, Any]]) -> None:
        """What :meth:`start_recorded` leaves, for many cases at once: the same pointer
        items and executions, written into moto's models directly (no HTTP round trip per
        call), so a test can fill the state machine with thousands of executions."""
        sfn = stepfunctions_backends[ACCOUNT][REGION]
        table = dynamodb_backends[ACCOUNT][REGION]
        now = datetime.now(UTC)
        for data in identities:
            pointer = Pointer.of(
                self.state_machine_arn,
                data["tenant_id"],
                data["case_id"],
                data["approval"]["revision"],
                at=now,
            )
            table.put_item(TABLE, pointer.item())
            sfn.start_execution(self.state_machine_arn, pointer.execution_name, json.dumps(data))

    def execution_arn(self, name: str) -> str:
        return f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{MACHINE}:{name}"

    def set_status(
        self, name: str, status: str, *, error: str | None = None, cause: str | None = None
    ) -> None:
        """What the service would say once the execution moved on (moto runs nothing)."""
        execution = stepfunctions_backends[ACCOUNT][REGION].describe_execution(
            self.execution_arn(name)
        )
        execution.status = status
        execution.error = error
        execution.cause = cause
        if status != "RUNNING":
            execution.stop_date = datetime.now(UTC)


def create_stack(cfn: Any, state_machine_arn: str, *, outputs: bool = True) -> None:
    """A tiny stack with the real output keys (its one resource is a topic)."""
    template: dict[str, Any] = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
    }
    if outputs:
        template["Outputs"] = {
            OUTPUT_STATE_MACHINE_ARN: {"Value": state_machine_arn},
            OUTPUT_LEDGER_TABLE_NAME: {"Value": TABLE},
            OUTPUT_RECONCILIATION_TOPIC_ARN: {"Value": TOPIC_ARN},
        }
    cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(template))


@contextmanager
def fake_aws() -> Iterator[FakeAws]:
    with mock_aws():
        sfn = boto3.client("stepfunctions", region_name=REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        cfn = boto3.client("cloudformation", region_name=REGION)
        create_table(ddb, TABLE)
        machine = sfn.create_state_machine(name=MACHINE, definition=definition(), roleArn=ROLE_ARN)
        create_stack(cfn, machine["stateMachineArn"])
        yield FakeAws(sfn, ddb, cfn, machine["stateMachineArn"])


@dataclass(frozen=True)
class LocalRun:
    """A case run on the local backend: what ``status --json`` printed and its ledger."""

    view: dict[str, Any]
    records: list[Record]
    items: list[ReconItem]


def run_locally(home: StateHome, case_file: Path, faults: Path | None = None) -> LocalRun:
    args = ["start", str(case_file), "--json"] + (["--faults", str(faults)] if faults else [])
    started = cli(home, *args)
    assert started.code == 0, started.err
    status = cli(home, "status", started.json()["name"], "--json")
    assert status.code == 0, status.err
    with open_ledger(home.ledger_url) as ledger:
        return LocalRun(status.json(), ledger.list(), ledger.list_items())


REDRIVABLE = {"FAILED", "TIMED_OUT", "ABORTED"}


class RedrivingSfn:
    """moto's Step Functions client plus ``RedriveExecution``; counts every call made."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.redrives: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def _execution(self, arn: str) -> Any:
        return stepfunctions_backends[ACCOUNT][REGION].describe_execution(arn)

    def redrive_execution(self, *, executionArn: str, clientToken: str) -> dict[str, Any]:  # noqa: N803
        self.calls["redrive_execution"] += 1
        execution = self._execution(executionArn)
        if execution.status not in REDRIVABLE:
            raise ClientError(
                {
                    "Error": {
                        "Code": "ExecutionNotRedrivable",
                        "Message": f"Execution is {execution.status}",
                    }
                },
                "RedriveExecution",
            )
        execution.status, execution.stop_date = "RUNNING", None
        execution.error = execution.cause = None
        self.redrives[executionArn] += 1
        return {"redriveDate": datetime.now(UTC)}

    def describe_execution(self, **kwargs: Any) -> dict[str, Any]:
        self.calls["describe_execution"] += 1
        described: dict[str, Any] = self._inner.describe_execution(**kwargs)
        described["redriveCount"] = self.redrives[kwargs["executionArn"]]
        return described

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if callable(attribute):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] += 1
                return attribute(*args, **kwargs)

            return counted
        return attribute


class VisibilityRecorder:
    """moto's SQS client, recording each visibility change asked for (the busy back-off,
    ``stepsaga._aws.queue_backoff``): the timeouts and the receipt handles."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs
        self.timeouts: list[int] = []
        self.handles: list[str] = []

    def change_message_visibility_batch(self, **kwargs: Any) -> Any:
        self.timeouts.extend(e["VisibilityTimeout"] for e in kwargs["Entries"])
        self.handles.extend(e["ReceiptHandle"] for e in kwargs["Entries"])
        return self._sqs.change_message_visibility_batch(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sqs, name)


def read_resolution_audit(client: Any, table: str, item_id: str) -> dict[str, str] | None:
    """The stored audit record of ``item_id`` as plain strings (its attribute names as
    written, which ``Ledger.get_audit`` hides), or None."""
    answer = client.get_item(
        TableName=table,
        Key={PARTITION_KEY: {"S": AUDIT_PREFIX + item_id}, SORT_KEY: {"S": AUDIT_SORT}},
        ConsistentRead=True,
    )
    raw = answer.get("Item")
    if raw is None:
        return None
    return {name: str(value.get("S", "")) for name, value in raw.items()}
