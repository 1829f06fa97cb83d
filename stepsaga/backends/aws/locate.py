"""Which execution a ``ref`` means on AWS: an execution ARN, an execution name, or a case id.

* An **ARN** must belong to the configured state machine (no redriving someone else's).
* A **name** is tried as an execution of the state machine (one ``DescribeExecution``),
  and as a case id too: a name that is also another execution's case id is refused,
  listing both (``references.py``), never silently chosen.
* A **case id**: one ``ListExecutions`` pass over the state machine (all statuses, 1000 a
  page), keeping the names that can belong to the case — plain names contain
  ``-<case>-r``; hashed names contain it too unless their readable part was cut (80
  characters) — and reading each candidate's input (``DescribeExecution``) to be sure.
  Several tenants: ``--tenant`` is needed; several revisions: the newest wins.
  Executions closed more than 90 days ago are no longer listed by AWS.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from stepsaga.backends.assemble import CaseIdentity
from stepsaga.backends.aws.errors import aws_call
from stepsaga.backends.aws.settings import AwsSettings
from stepsaga.backends.naming import MAX_NAME
from stepsaga.backends.references import Candidate, choose
from stepsaga.engine.errors import ExecutionDoesNotExist
from stepsaga.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

Described = dict[str, Any]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_HASHED = re.compile(r"-[0-9a-f]{12}$")


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


def locate(sfn: SFNClient, settings: AwsSettings, ref: str, tenant: str | None) -> Described:
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
    seen: dict[str, Described] = {}

    def candidate(arn: str) -> Candidate | None:
        described = describe_or_none(sfn, arn)
        identity = _identity(described)
        if described is None or identity is None:
            return None
        seen[arn] = described
        return Candidate(arn, str(described["name"]), identity)

    direct = candidate(settings.execution_arn(ref)) if _NAME.match(ref) else None
    of_case = [c for arn in _candidates(sfn, settings, ref) if (c := candidate(arn)) is not None]
    where = f"on {settings.state_machine_arn}"
    chosen = choose(ref, tenant, named=[direct] if direct else [], of_case=of_case, where=where)
    return seen[chosen.arn]


def _identity(described: Described | None) -> CaseIdentity | None:
    if described is None:
        return None
    try:
        return CaseIdentity.from_input(described["input"])
    except InvalidInputError:
        return None  # not a stepsaga case


def case_executions(
    sfn: SFNClient, settings: AwsSettings, tenant: str, case_id: str
) -> list[Described]:
    """Every execution of this tenant's case, any revision (one ``ListExecutions`` pass,
    then a ``DescribeExecution`` per candidate name)."""
    found: list[Described] = []
    for arn in _candidates(sfn, settings, case_id):
        described = describe_or_none(sfn, arn)
        if described is None:
            continue
        try:
            identity = CaseIdentity.from_input(described["input"])
        except InvalidInputError:
            continue
        if (identity.tenant_id, identity.case_id) == (tenant, case_id):
            found.append(described)
    return found


def _candidates(sfn: SFNClient, settings: AwsSettings, case_id: str) -> list[str]:
    marker = f"-{case_id}-r"
    arns: list[str] = []
    paginator = sfn.get_paginator("list_executions")
    with aws_call("states:ListExecutions"):
        for page in paginator.paginate(
            stateMachineArn=settings.state_machine_arn, PaginationConfig={"PageSize": 1000}
        ):
            for listed in page["executions"]:
                name = listed["name"]
                cut = len(name) == MAX_NAME and _HASHED.search(name) is not None
                if marker in name or cut:
                    arns.append(listed["executionArn"])
    return arns


def _of(tenant: str | None) -> str:
    return f" of tenant {tenant}" if tenant else ""
