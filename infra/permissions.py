"""What each Lambda function may do: data, reviewed next to the saga's function list.

The stack grants a function exactly its :class:`FunctionAccess` and nothing else; a saga
function without an entry here fails the synth, so a new handler cannot be deployed with
permissions nobody declared. Keep these lists equal to the calls the handler's code makes
(``stepsaga.ledger``'s DynamoDB adapter for the ledger operations).

Note on transactions: IAM has no ``TransactWriteItems`` action. A transaction is authorized
item by item (``PutItem``, ``UpdateItem``, ``DeleteItem``, ``ConditionCheckItem``), so the
claim-with-budget-debit transaction needs exactly the item actions below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

GET_ITEM: Final = "dynamodb:GetItem"
PUT_ITEM: Final = "dynamodb:PutItem"
UPDATE_ITEM: Final = "dynamodb:UpdateItem"
CONDITION_CHECK_ITEM: Final = "dynamodb:ConditionCheckItem"
QUERY: Final = "dynamodb:Query"
SCAN: Final = "dynamodb:Scan"

_KNOWN_DYNAMODB_ACTIONS: Final = frozenset(
    {GET_ITEM, PUT_ITEM, UPDATE_ITEM, CONDITION_CHECK_ITEM, QUERY, SCAN}
)


@dataclass(frozen=True)
class FunctionAccess:
    """The AWS calls one function makes.

    ``table_actions`` apply to the ledger table's ARN, ``index_actions`` to the ARN of the
    ``open-items-by-tenant`` index only. ``publish_reconciliation`` grants ``sns:Publish`` on
    the reconciliation topic (plus the KMS calls SNS makes for an encrypted topic);
    ``send_task_success`` grants ``states:SendTaskSuccess`` on this stack's state machine,
    for a handler that resumes a case waiting on a task token.
    """

    table_actions: tuple[str, ...] = ()
    index_actions: tuple[str, ...] = ()
    publish_reconciliation: bool = False
    send_task_success: bool = False

    def __post_init__(self) -> None:
        for action in (*self.table_actions, *self.index_actions):
            if action not in _KNOWN_DYNAMODB_ACTIONS:
                raise ValueError(f"{action!r}: not an action stepsaga's functions use")
        if not set(self.index_actions) <= {QUERY, SCAN}:
            raise ValueError("index_actions: only Query and Scan read an index")


#: Claim, complete/fail/release (conditional writes) and the budget debit transaction.
LEDGER_WRITER: Final = FunctionAccess(
    table_actions=(GET_ITEM, PUT_ITEM, UPDATE_ITEM, CONDITION_CHECK_ITEM),
)

#: Writes reconciliation items and ledger outcomes (one transaction), notifies the topic,
#: and resumes a waiting case when automatic reconciliation decides.
RECONCILER: Final = FunctionAccess(
    table_actions=(GET_ITEM, PUT_ITEM, UPDATE_ITEM, CONDITION_CHECK_ITEM),
    publish_reconciliation=True,
    send_task_success=True,
)

#: The scheduled overdue check reads only the sparse index of open items.
OVERDUE_CHECK: Final = FunctionAccess(index_actions=(SCAN,))

#: Access of the replacement-order saga's functions, by logical function name.
REPLACEMENT_ORDER_ACCESS: Final[Mapping[str, FunctionAccess]] = {
    "ReserveStock": LEDGER_WRITER,
    "RefundPayment": LEDGER_WRITER,
    "CreateShipment": LEDGER_WRITER,
    "ReleaseReservation": LEDGER_WRITER,
    "Reconcile": RECONCILER,
}
