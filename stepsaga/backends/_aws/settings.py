"""Where the deployed saga lives: the state machine, the ledger table and the topic.

Read from one place, never mixed, so a setting can never silently come from the wrong stage:

* a **stack** (``--stack NAME``, else ``$STEPSAGA_STACK``): its CloudFormation outputs
  ``StateMachineArn``, ``LedgerTableName``, ``ReconciliationTopicArn`` and
  ``StateMachineAliasArn`` and ``ResolverUrl`` (``stepsaga/_project/deployment.py``), read with
  ``DescribeStacks``;
* otherwise the **environment**: ``$STEPSAGA_STATE_MACHINE_ARN`` and
  ``$STEPSAGA_LEDGER_TABLE_NAME`` (``$STEPSAGA_RECONCILIATION_TOPIC_ARN`` and
  ``$STEPSAGA_STATE_MACHINE_ALIAS_ARN`` and ``$STEPSAGA_RESOLVER_URL`` optional).

Cases start on the alias when there is one (``start_target``): the execution runs the
version the alias pointed to at its start, for its whole life, redrives included, while
new cases get each release. A stack without the output (deployed before versions) starts
on the unqualified ARN, i.e. the latest revision. Either way the execution's ARN is
``…:execution:<state machine name>:<execution name>`` (no qualifier: AWS records the
alias and version as ``stateMachineAliasArn``/``stateMachineVersionArn`` of the
execution), so ``execution_arn``/``owns`` hold for both.

Region and credentials come from boto3's usual chain (``AWS_PROFILE``, ``AWS_REGION``…);
Step Functions and DynamoDB are then called in the state machine's own region (the stack
put the table beside it). Anything missing or malformed is one ``InvalidInputError``
naming what to set.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from stepsaga._project.deployment import (
    ENV_AUDIT_BUCKET,
    ENV_LEDGER_TABLE_NAME,
    ENV_RECONCILIATION_TOPIC_ARN,
    ENV_RESOLVER_URL,
    ENV_STACK,
    ENV_STATE_MACHINE_ALIAS_ARN,
    ENV_STATE_MACHINE_ARN,
    OUTPUT_AUDIT_BUCKET_NAME,
    OUTPUT_LEDGER_TABLE_NAME,
    OUTPUT_RECONCILIATION_TOPIC_ARN,
    OUTPUT_RESOLVER_URL,
    OUTPUT_STATE_MACHINE_ALIAS_ARN,
    OUTPUT_STATE_MACHINE_ARN,
)
from stepsaga.backends import _naming as naming
from stepsaga.backends._aws.errors import aws_call, error_code, error_message
from stepsaga.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient

#: How long ``start``/``redrive``/``recon resolve`` follow the execution (seconds; 0: not at all).
ENV_WAIT_SECONDS = "STEPSAGA_AWS_WAIT_SECONDS"
DEFAULT_WAIT_SECONDS = 60.0
DEFAULT_POLL_SECONDS = 2.0

_STATE_MACHINE_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):states:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"stateMachine:(?P<name>[A-Za-z0-9_-]{1,80})$"
)
#: What qualifies a state machine ARN: an alias name or a version number.
_QUALIFIER = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,255}$")
_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$")
_RESOLVER_URL = re.compile(r"^https://[A-Za-z0-9.-]+(:\d+)?/\S*$")
_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$|^arn:aws[a-z-]*:cloudformation:\S+$")

_WHAT_TO_SET = (
    f"pass --stack NAME (or set {ENV_STACK}), or set {ENV_STATE_MACHINE_ARN} and "
    f"{ENV_LEDGER_TABLE_NAME}"
)


@dataclass(frozen=True)
class AwsSettings:
    """The deployed saga. ``source`` says where the values came from (for messages)."""

    state_machine_arn: str
    ledger_table_name: str
    reconciliation_topic_arn: str | None = None
    source: str = "environment"
    #: The state machine's ``live`` alias (``<state machine ARN>:live``), where cases start.
    alias_arn: str | None = None
    #: The resolver's function URL: decisions go there (``decisions.py``); None: a stack
    #: deployed before it, whose decisions the CLI writes itself.
    resolver_url: str | None = None
    #: The bucket of the audit records' write-once copies (``recon verify-audit``).
    audit_bucket: str | None = None

    def __post_init__(self) -> None:
        url = self.resolver_url
        if url is not None and not _RESOLVER_URL.match(url):
            raise InvalidInputError(
                f"{self._named(OUTPUT_RESOLVER_URL, ENV_RESOLVER_URL)}: {url!r} is not an "
                "https:// URL",
                field="resolver_url",
            )
        if not _STATE_MACHINE_ARN.match(self.state_machine_arn):
            raise InvalidInputError(
                f"{self._named(OUTPUT_STATE_MACHINE_ARN, ENV_STATE_MACHINE_ARN)}: "
                f"{self.state_machine_arn!r} is not a state machine ARN "
                "(arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)",
                field="state_machine_arn",
            )
        if not _TABLE_NAME.match(self.ledger_table_name):
            raise InvalidInputError(
                f"{self._named(OUTPUT_LEDGER_TABLE_NAME, ENV_LEDGER_TABLE_NAME)}: "
                f"{self.ledger_table_name!r} is not a DynamoDB table name",
                field="ledger_table_name",
            )
        topic = self.reconciliation_topic_arn
        if topic is not None and not _TOPIC_ARN.match(topic):
            raise InvalidInputError(
                f"{self._named(OUTPUT_RECONCILIATION_TOPIC_ARN, ENV_RECONCILIATION_TOPIC_ARN)}: "
                f"{topic!r} is not an SNS topic ARN",
                field="reconciliation_topic_arn",
            )
        alias = self.alias_arn
        if alias is not None:
            machine, _, qualifier = alias.rpartition(":")
            if machine != self.state_machine_arn or not _QUALIFIER.match(qualifier):
                raise InvalidInputError(
                    f"{self._named(OUTPUT_STATE_MACHINE_ALIAS_ARN, ENV_STATE_MACHINE_ALIAS_ARN)}: "
                    f"{alias!r} is not an alias of {self.state_machine_arn} "
                    "(<state machine ARN>:<alias>)",
                    field="alias_arn",
                )

    @property
    def start_target(self) -> str:
        """What ``StartExecution`` names: the alias, else the unqualified state machine."""
        return self.alias_arn or self.state_machine_arn

    def _named(self, output: str, variable: str) -> str:
        return variable if self.source == "environment" else f"output {output} of {self.source}"

    @property
    def region(self) -> str:
        """The state machine's region (the table lives beside it)."""
        return self._arn_part("region")

    @property
    def state_machine_name(self) -> str:
        return self._arn_part("name")

    def execution_arn(self, name: str) -> str:
        """The ARN an execution called ``name`` of this state machine has."""
        return naming.execution_arn(self.state_machine_arn, name)

    def owns(self, execution_arn: str) -> bool:
        """Whether ``execution_arn`` is an execution of this state machine."""
        prefix = self.execution_arn("")
        return execution_arn.startswith(prefix) and len(execution_arn) > len(prefix)

    def _arn_part(self, part: str) -> str:
        match = _STATE_MACHINE_ARN.match(self.state_machine_arn)
        assert match is not None  # checked in __post_init__
        return match.group(part)


def load_settings(
    *,
    stack: str | None,
    environ: Mapping[str, str],
    cloudformation: Callable[[], CloudFormationClient],
) -> AwsSettings:
    """The settings from ``stack`` (or ``$STEPSAGA_STACK``), else from the environment."""
    name = (stack or environ.get(ENV_STACK) or "").strip()
    if name:
        return settings_from_stack(cloudformation(), name)
    return settings_from_environment(environ)


def settings_from_environment(environ: Mapping[str, str]) -> AwsSettings:
    machine = environ.get(ENV_STATE_MACHINE_ARN, "").strip()
    table = environ.get(ENV_LEDGER_TABLE_NAME, "").strip()
    topic = environ.get(ENV_RECONCILIATION_TOPIC_ARN, "").strip() or None
    alias = environ.get(ENV_STATE_MACHINE_ALIAS_ARN, "").strip() or None
    resolver = environ.get(ENV_RESOLVER_URL, "").strip() or None
    bucket = environ.get(ENV_AUDIT_BUCKET, "").strip() or None
    if not machine and not table:
        raise InvalidInputError(f"--backend aws is not configured: {_WHAT_TO_SET}", field="stack")
    for value, variable in ((machine, ENV_STATE_MACHINE_ARN), (table, ENV_LEDGER_TABLE_NAME)):
        if not value:
            raise InvalidInputError(
                f"--backend aws: {variable} is not set ({_WHAT_TO_SET})", field=variable
            )
    return AwsSettings(
        machine,
        table,
        topic,
        source="environment",
        alias_arn=alias,
        resolver_url=resolver,
        audit_bucket=bucket,
    )


def settings_from_stack(client: CloudFormationClient, stack: str) -> AwsSettings:
    """``DescribeStacks`` outputs of ``stack`` (a name or a stack ARN)."""
    if not _STACK_NAME.match(stack):
        raise InvalidInputError(f"--stack: {stack!r} is not a stack name", field="stack")
    with aws_call("cloudformation:DescribeStacks"):
        try:
            described = client.describe_stacks(StackName=stack)
        except ClientError as exc:
            if error_code(exc) == "ValidationError" and "does not exist" in error_message(exc):
                raise NotFoundError(
                    f"stack {stack} does not exist in region {client.meta.region_name} "
                    "(check --stack, AWS_REGION and AWS_PROFILE)",
                    stack=stack,
                ) from exc
            raise
    stacks = described.get("Stacks", [])
    if not stacks:
        raise NotFoundError(f"stack {stack} does not exist", stack=stack)
    outputs = {
        str(output.get("OutputKey")): str(output.get("OutputValue", ""))
        for output in stacks[0].get("Outputs", [])
    }
    status = stacks[0].get("StackStatus", "?")
    for key in (OUTPUT_STATE_MACHINE_ARN, OUTPUT_LEDGER_TABLE_NAME):
        if not outputs.get(key):
            raise InvalidInputError(
                f"stack {stack} ({status}) has no output {key}: is it a stepsaga stack, "
                "and is it deployed?",
                field="stack",
            )
    return AwsSettings(
        outputs[OUTPUT_STATE_MACHINE_ARN],
        outputs[OUTPUT_LEDGER_TABLE_NAME],
        outputs.get(OUTPUT_RECONCILIATION_TOPIC_ARN) or None,
        source=f"stack {stack}",
        alias_arn=outputs.get(OUTPUT_STATE_MACHINE_ALIAS_ARN) or None,
        resolver_url=outputs.get(OUTPUT_RESOLVER_URL) or None,
        audit_bucket=outputs.get(OUTPUT_AUDIT_BUCKET_NAME) or None,
    )


def wait_seconds_from(environ: Mapping[str, str]) -> float:
    """``$STEPSAGA_AWS_WAIT_SECONDS`` (default 60): a finite number >= 0."""
    text = environ.get(ENV_WAIT_SECONDS, "").strip()
    if not text:
        return DEFAULT_WAIT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (seconds >= 0 and math.isfinite(seconds)):
        raise InvalidInputError(
            f"{ENV_WAIT_SECONDS} must be a number of seconds >= 0, got {text!r}",
            field=ENV_WAIT_SECONDS,
        )
    return seconds
