"""What the framework's own access to the ledger, topic and state machine is, per function.

The construct grants each function exactly its :class:`FunctionAccess`, derived from the
saga (never edited by an app): a step or compensation handler is a ledger writer, the
built-in reconciler also notifies the topic and resumes a waiting case, the scheduled
overdue check only scans the open-items index. Access to the app's *own* resources (its
secrets, queues, buckets) is the app's: ``FunctionSettings.grant``.

Kept free of CDK imports (plain data, unit-testable). Note on transactions: IAM has no
``TransactWriteItems`` action. A transaction is authorized item by item (``PutItem``,
``UpdateItem``, ``DeleteItem``, ``ConditionCheckItem``), so the claim-with-budget-debit
transaction needs exactly the item actions below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from stepsaga._aws.signing import SignedService
from stepsaga.ledger._table import (
    ACTION_PREFIX,
    AUDIT_PREFIX,
    BUDGET_PREFIX,
    BY_CASE_INDEX,
    CASE_PREFIX,
    GSIS,
    OPEN_ITEMS_INDEX,
    RECON_PREFIX,
)
from stepsaga.workflow._saga import RECONCILER_FUNCTION, RECONCILER_HANDLER

__all__ = [
    "APP_WRITE_ACTIONS",
    "DELETE_ITEM",
    "INGRESS_POINTER_ACTIONS",
    "INVOKE_RESOLVER",
    "INVOKE_SIGNED",
    "LEDGER_WRITER",
    "OPERATOR",
    "OVERDUE_CHECK",
    "POINTER_ACTIONS",
    "POINTER_CONDITIONS",
    "RECONCILER",
    "RESOLVER",
    "WRITE_ACTIONS",
    "FunctionAccess",
    "OperatorAccess",
    "access_for",
    "leading_key_conditions",
]

GET_ITEM: Final = "dynamodb:GetItem"
PUT_ITEM: Final = "dynamodb:PutItem"
UPDATE_ITEM: Final = "dynamodb:UpdateItem"
DELETE_ITEM: Final = "dynamodb:DeleteItem"
CONDITION_CHECK_ITEM: Final = "dynamodb:ConditionCheckItem"
QUERY: Final = "dynamodb:Query"
SCAN: Final = "dynamodb:Scan"

#: What a role needs to call a signed API of each kind (``FunctionSettings.signed_apis``),
#: and the condition that keeps it to IAM-authorized function URLs.
INVOKE_SIGNED: Final[dict[SignedService, tuple[str, dict[str, dict[str, str]]]]] = {
    SignedService.EXECUTE_API: ("execute-api:Invoke", {}),
    SignedService.LAMBDA: (
        "lambda:InvokeFunctionUrl",
        {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
    ),
}

_KNOWN_DYNAMODB_ACTIONS: Final = frozenset(
    {GET_ITEM, PUT_ITEM, UPDATE_ITEM, DELETE_ITEM, CONDITION_CHECK_ITEM, QUERY, SCAN}
)
#: The item actions that write (or condition a write on) one item: granted only under
#: ``dynamodb:LeadingKeys`` (:func:`leading_key_conditions`), never table-wide.
WRITE_ACTIONS: Final = frozenset({PUT_ITEM, UPDATE_ITEM, DELETE_ITEM, CONDITION_CHECK_ITEM})


#: What the app's own extra writes (``stepsaga.ledger._writes``: ``Writes``, ``ExtraWrite``)
#: are, item by item in the ledger's transaction: an ``Update``, or a ``ConditionCheck``
#: for a write with no attributes. Granted on ``FunctionSettings.ledger_write_prefixes``.
APP_WRITE_ACTIONS: Final = (UPDATE_ITEM, CONDITION_CHECK_ITEM)


#: Case pointers (``stepsaga.backends._aws.pointers``): what a start path writes and a lookup
#: reads, granted on the ledger table under :data:`POINTER_CONDITIONS` only.
POINTER_ACTIONS: Final = (GET_ITEM, PUT_ITEM, QUERY)


def leading_key_conditions(*prefixes: str) -> Mapping[str, Mapping[str, object]]:
    """IAM conditions: every item a request touches has a partition key starting with one
    of ``prefixes`` (each key of a transaction too). ``ForAllValues`` is vacuously true
    when a request carries no ``dynamodb:LeadingKeys`` (a Scan does not), so ``Null``
    requires the key to be there."""
    return {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{p}*" for p in prefixes]},
        "Null": {"dynamodb:LeadingKeys": "false"},
    }


#: The ingress starter's: it reads the case's pointers (one ``Query``: the start rule for
#: revisions) and records the start's (a conditional ``PutItem`` whose refusal returns the
#: stored pointer); never a ``GetItem``.
INGRESS_POINTER_ACTIONS: Final = (PUT_ITEM, QUERY)

#: Only items whose partition key starts ``CASE#``.
POINTER_CONDITIONS: Final = leading_key_conditions(CASE_PREFIX)


@dataclass(frozen=True)
class FunctionAccess:
    """The AWS calls one function makes against the framework's resources.

    ``table_actions`` are reads (``GetItem``, ``Query``) on the ledger table's ARN;
    ``write_actions`` are granted on it only for items whose partition key starts with one
    of ``write_prefixes`` (``dynamodb:LeadingKeys``: the item kinds the function owns, every
    key of a transaction included). ``index_actions`` apply to the ARNs of exactly the
    ``indexes`` named (``stepsaga.ledger._table.GSIS``). ``publish_reconciliation`` grants
    ``sns:Publish`` on the reconciliation topic (plus the KMS calls SNS makes for an
    encrypted topic); ``send_task_success`` grants ``states:SendTaskSuccess`` on this saga's
    state machine, for a handler that resumes a case waiting on a task token.
    """

    table_actions: tuple[str, ...] = ()
    write_actions: tuple[str, ...] = ()
    write_prefixes: tuple[str, ...] = ()
    index_actions: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    publish_reconciliation: bool = False
    send_task_success: bool = False

    def __post_init__(self) -> None:
        for action in (*self.table_actions, *self.write_actions, *self.index_actions):
            if action not in _KNOWN_DYNAMODB_ACTIONS:
                raise ValueError(f"{action!r}: not an action stepsaga's functions use")
        if set(self.table_actions) & WRITE_ACTIONS:
            raise ValueError("table_actions: reads only; writes go in write_actions")
        if not set(self.write_actions) <= WRITE_ACTIONS:
            raise ValueError("write_actions: only item writes (Put, Update, Delete, Check)")
        if bool(self.write_actions) != bool(self.write_prefixes):
            raise ValueError("write_actions and write_prefixes go together")
        if not set(self.index_actions) <= {QUERY, SCAN}:
            raise ValueError("index_actions: only Query and Scan read an index")
        if bool(self.index_actions) != bool(self.indexes):
            raise ValueError("index_actions and indexes go together")
        for index in self.indexes:
            if index not in GSIS:
                raise ValueError(f"{index!r}: not an index of the ledger table")


#: Claim, complete/fail/release (conditional writes of its ``ACTION#`` record), the budget
#: debit in the claim's transaction (``BUDGET#``) and the read of the tenant's budget
#: shards before it; a revision far above the last one finds its case's earlier records in
#: ``by-case``. Never a reconciliation item, an audit record or a case pointer.
LEDGER_WRITER: Final = FunctionAccess(
    table_actions=(GET_ITEM, QUERY),
    write_actions=(PUT_ITEM, UPDATE_ITEM),
    write_prefixes=(ACTION_PREFIX, BUDGET_PREFIX),
    index_actions=(QUERY,),
    indexes=(BY_CASE_INDEX,),
)

#: The saga's own reconciler: opens reconciliation items with the record's outcome (one
#: transaction), and records automatic decisions (``stepsaga:auto``, looked up by the
#: action key) with their audit record; reads the tenant's budget shards (``Query``) before
#: releasing an action refused for money; notifies the topic and resumes a waiting case.
#: No index: it reads records and items by key only.
RECONCILER: Final = FunctionAccess(
    table_actions=(GET_ITEM, QUERY),
    write_actions=(PUT_ITEM, UPDATE_ITEM),
    write_prefixes=(ACTION_PREFIX, BUDGET_PREFIX, RECON_PREFIX, AUDIT_PREFIX),
    publish_reconciliation=True,
    send_task_success=True,
)

#: The resolver (``stepsaga._aws.resolver``): people's decisions. Resolving writes the item, its
#: record (or checks an unclaimed action's absent), the refund and the audit record in one
#: transaction; stopping settles the case's records and opens items for their unknown
#: outcomes. It finds and checks an execution as ``status`` does: the case's pointers
#: (``Query``), its records and items (``by-case``); never a listing index.
RESOLVER: Final = FunctionAccess(
    table_actions=(GET_ITEM, QUERY),
    write_actions=(PUT_ITEM, UPDATE_ITEM, CONDITION_CHECK_ITEM),
    write_prefixes=(ACTION_PREFIX, BUDGET_PREFIX, RECON_PREFIX, AUDIT_PREFIX),
    index_actions=(QUERY,),
    indexes=(BY_CASE_INDEX,),
    send_task_success=True,
)

#: The scheduled overdue check reads only the sparse index of open items.
OVERDUE_CHECK: Final = FunctionAccess(index_actions=(SCAN,), indexes=(OPEN_ITEMS_INDEX,))


def access_for(functions: Mapping[str, str]) -> Mapping[str, FunctionAccess]:
    """Logical function name → its access, from a saga's functions (``Saga.functions``:
    name → handler reference): the built-in reconciler is a ``RECONCILER``, every step and
    compensation handler a ``LEDGER_WRITER``."""
    return {
        name: RECONCILER
        if (name, ref) == (RECONCILER_FUNCTION, RECONCILER_HANDLER)
        else LEDGER_WRITER
        for name, ref in functions.items()
    }


@dataclass(frozen=True)
class OperatorAccess:
    """What a person running ``stepsaga --backend aws --stack …`` calls, per resource.

    Reads, plus invoking the resolver: every decision (resolve, approve, stop, redrive) is a
    request to it, signed by the person (``stepsaga.backends._aws.decisions``), so no write
    to a reconciliation item, an audit record or an action record is the operator's.
    Starting cases is the ingress's job and is not here: grant ``states:StartExecution`` on
    the state machine separately to operators who start cases by hand.
    """

    #: ``DescribeStacks`` on this stack (the CLI reads its outputs).
    stack_actions: tuple[str, ...]
    #: On the state machine: find a case's executions.
    state_machine_actions: tuple[str, ...]
    #: On its executions: status and history.
    execution_actions: tuple[str, ...]
    #: On the ledger table: reads only (recon show, ledger show, the case's records).
    table_actions: tuple[str, ...]
    #: On exactly the ``indexes`` (recon list, ledger list, ledger sweep: never a Scan).
    index_actions: tuple[str, ...]
    indexes: tuple[str, ...]
    #: On the resolver's function URL (``lambda:InvokeFunctionUrl`` for ``AWS_IAM`` URLs, and
    #: ``lambda:InvokeFunction`` only through a URL: a direct invocation's event, request
    #: context included, would be the caller's to write).
    resolver_actions: tuple[tuple[str, Mapping[str, Mapping[str, object]]], ...] = ()
    #: On the audit bucket, and on its copies (``audit/*``): ``recon verify-audit
    #: --against-copies`` finds each record's first, locked version and reads it.
    audit_bucket_actions: tuple[str, ...] = ()
    audit_copy_actions: tuple[str, ...] = ()
    #: On the table, only on items whose partition key starts with ``budget_key_prefix``
    #: (:func:`leading_key_conditions`): ``Ledger.set_budget`` replaces a tenant's budget
    #: shards in one transaction and deletes the shards it no longer uses.
    budget_actions: tuple[str, ...] = ()
    budget_key_prefix: str = BUDGET_PREFIX
    #: On case pointer items only (:data:`POINTER_CONDITIONS`): find a case's executions
    #: (and record one for an operator who also starts cases).
    pointer_actions: tuple[str, ...] = POINTER_ACTIONS


#: Calling an ``AWS_IAM`` function URL: both actions, the second only through the URL.
INVOKE_RESOLVER: Final = (
    ("lambda:InvokeFunctionUrl", {"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}}),
    ("lambda:InvokeFunction", {"Bool": {"lambda:InvokedViaFunctionUrl": "true"}}),
)

OPERATOR: Final = OperatorAccess(
    stack_actions=("cloudformation:DescribeStacks",),
    state_machine_actions=("states:ListExecutions",),
    execution_actions=("states:DescribeExecution", "states:GetExecutionHistory"),
    table_actions=(GET_ITEM, QUERY),
    index_actions=(QUERY,),
    indexes=tuple(GSIS),
    resolver_actions=INVOKE_RESOLVER,
    audit_bucket_actions=("s3:ListBucketVersions",),
    audit_copy_actions=("s3:GetObjectVersion",),
    budget_actions=(PUT_ITEM, DELETE_ITEM),
)

#: What the resolver's role calls on the state machine and its executions: find and check
#: the execution (``ListExecutions``, ``DescribeExecution``), resume, stop, redrive.
RESOLVER_STATE_MACHINE_ACTIONS: Final = ("states:ListExecutions", "states:SendTaskSuccess")
RESOLVER_EXECUTION_ACTIONS: Final = (
    "states:DescribeExecution",
    "states:GetExecutionHistory",
    "states:StopExecution",
    "states:RedriveExecution",
)
#: What the resolver's role calls for ``cancel``'s undo: read the definition the execution
#: ran (on the state machine and its versions) and invoke the compensations and the
#: reconciler it names (on their ``live`` aliases only: ``cancel.undo_functions``).
RESOLVER_DEFINITION_ACTIONS: Final = ("states:DescribeStateMachine",)
RESOLVER_UNDO_ACTIONS: Final = ("lambda:InvokeFunction",)
