"""Which execution a ``ref`` means on AWS: an execution ARN, an execution name, or a case id.

Every lookup costs a fixed number of AWS calls, however many executions the state machine
has (no ``ListExecutions``):

* An **ARN** must belong to the configured state machine (no redriving someone else's):
  one ``DescribeExecution``.
* A **case id**: one ``Query`` of its pointers (``pointers.py``: every tenant and revision
  the start paths recorded), then one ``DescribeExecution`` of the chosen one. Several
  tenants: ``--tenant`` is needed; several revisions: the newest wins. A pointer whose
  execution AWS does not know is reported as never started, or as closed more than 90 days
  ago (AWS keeps 90 days), never as "not found".
* A **name** is tried as an execution (one ``DescribeExecution``) and, through the same
  ``Query``, as a case id: a name that is also another execution's case id is refused,
  listing both (``references.py``), never silently chosen.

No pointer means not found: executions started before stepsaga wrote pointers are found
by their ARN or exact name only (a fallback listing would cost O(executions) per miss).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from stepsaga.backends._assemble import CaseIdentity
from stepsaga.backends._aws.errors import aws_call
from stepsaga.backends._aws.pointers import case_pointers, why_missing
from stepsaga.backends._aws.settings import AwsSettings
from stepsaga.backends._naming import execution_name
from stepsaga.backends._references import Candidate, choose
from stepsaga.errors import ExecutionDoesNotExist, InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

Described = dict[str, Any]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


def describe(sfn: SFNClient, execution_arn: str) -> Described:
    """``DescribeExecution`` as a plain dict (``ExecutionDoesNotExist`` if there is none)."""
    with aws_call("states:DescribeExecution"):
        response = sfn.describe_execution(executionArn=execution_arn)
    described = dict(response)
    described.pop("ResponseMetadata", None)
    return described


def describe_or_none(sfn: SFNClient, execution_arn: str) -> Described | None:
    try:
        return describe(sfn, execution_arn)
    except ExecutionDoesNotExist:
        return None


def locate(
    sfn: SFNClient,
    ddb: DynamoDBClient,
    settings: AwsSettings,
    ref: str,
    tenant: str | None,
    *,
    now: datetime,
) -> Described:
    """The described execution ``ref`` names (see the module docstring)."""
    ref = ref.strip()
    if not ref:
        raise InvalidInputError("execution or case id: must not be empty", field="ref")
    if ref.startswith("arn:"):
        if not settings.owns(ref):
            raise InvalidInputError(
                f"{ref} is not an execution of {settings.state_machine_arn}", field="ref"
            )
        described = describe_or_none(sfn, ref)
        identity = _identity(described)
        if described is None or identity is None or tenant not in (None, identity.tenant_id):
            raise NotFoundError(f"no execution {ref}{_of(tenant)}", ref=ref)
        return described
    direct = describe_or_none(sfn, settings.execution_arn(ref)) if _NAME.match(ref) else None
    named = _identity(direct)
    pointers = {p.execution_arn: p for p in case_pointers(ddb, settings.ledger_table_name, ref)}
    chosen = choose(
        ref,
        tenant,
        named=[Candidate(direct["executionArn"], ref, named)] if direct and named else [],
        of_case=[Candidate(arn, p.execution_name, p.identity) for arn, p in pointers.items()],
        where=f"on {settings.state_machine_arn} ({_NO_POINTER})",
    )
    if direct is not None and chosen.arn == direct["executionArn"]:
        return direct
    described = describe_or_none(sfn, chosen.arn)
    if described is None:
        raise NotFoundError(why_missing(pointers[chosen.arn], now), ref=ref)
    return described


_NO_POINTER = (
    "a case id is found by the pointer its start recorded; executions started before "
    "stepsaga recorded pointers are found by ARN or exact name"
)


def _identity(described: Described | None) -> CaseIdentity | None:
    if described is None:
        return None
    try:
        return CaseIdentity.from_input(described["input"])
    except InvalidInputError:
        return None  # not a stepsaga case


def case_executions(
    sfn: SFNClient,
    ddb: DynamoDBClient,
    settings: AwsSettings,
    case: CaseIdentity,
    *,
    previous_by_name: bool = False,
) -> list[Described]:
    """Every started execution of this tenant's case, any revision: one ``Query`` of its
    pointers, then a ``DescribeExecution`` each (a revision that never started is left
    out). ``previous_by_name``: revision ``case.revision - 1`` without a pointer (started
    before pointers existed) is described by its derived name too, so the start rule
    (``lifecycle.start_refusal``) still waits for it; one call, not one per revision
    (revisions go up to a million)."""
    pointers = [
        p
        for p in case_pointers(ddb, settings.ledger_table_name, case.case_id)
        if p.tenant_id == case.tenant_id
    ]
    arns = [p.execution_arn for p in pointers]
    previous = case.revision - 1
    if previous_by_name and previous >= 1 and previous not in {p.revision for p in pointers}:
        name = execution_name(case.tenant_id, case.case_id, previous)
        arns.append(settings.execution_arn(name))
    found: list[Described] = []
    for arn in arns:
        described = describe_or_none(sfn, arn)
        identity = _identity(described)
        whose = (identity.tenant_id, identity.case_id) if identity is not None else None
        if described is not None and whose == (case.tenant_id, case.case_id):
            found.append(described)
    return found


def _of(tenant: str | None) -> str:
    return f" of tenant {tenant}" if tenant else ""
