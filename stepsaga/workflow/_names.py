"""Names the compiled machine uses, in one place (the saga validates them, the compiler
emits them, the graph and the engine may read them).

State names are PascalCase ASCII so they also make CloudFormation-safe substitution keys
(``${<Function>FunctionArn}``).
"""

from __future__ import annotations

import re
from enum import StrEnum

STATE_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{0,47}$")
OPERATION = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
SAGA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
HANDLER_REF = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
CASE_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
FIELD_NAME = re.compile(r"^[A-Za-z_]\w{0,63}$")
#: An item's identity in its action key (the ledger's name rule).
ITEM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

#: ASL limit on state names.
MAX_STATE_NAME = 80

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN = "arn:aws:states:::lambda:invoke.waitForTaskToken"  # noqa: S105


class QueryLanguage(StrEnum):
    """The query language a saga compiles to (``Saga.query_language``)."""

    JSONPATH = "JSONPath"
    JSONATA = "JSONata"


#: The Succeed state a saga ends in only when its last element is a group (a Choice cannot
#: end an execution); otherwise the last forward task itself has ``"End": true``.
COMPLETED = "Completed"
COMPENSATED = "Compensated"
COMPENSATION_FAILED = "CompensationFailed"


class StateField(StrEnum):
    """The top-level fields the compiled machine adds to its state data, which starts as the
    case itself (no wrapping state): the one table of names a case may not use at its top
    level (``Saga`` refuses such an input model, ``Saga.check_input`` such an input)."""

    RESULTS = "results"
    COMPENSATIONS = "compensations"
    RECONCILIATION = "reconciliation"
    GROUPS = "groups"
    FAILURE = "failure"
    COMPENSATION_FAILURE = "compensation_failure"


RESERVED_CASE_FIELDS: frozenset[str] = frozenset(field.value for field in StateField)

#: Where every state reads the case: the context object's copy of the execution input (the
#: original input, free to read, and the same after a redrive).
CASE_PATH_ROOT = "$$.Execution.Input"


def reconcile(step: str) -> str:
    return f"Reconcile{step}"


def decision(step: str) -> str:
    return f"{step}Decision"


def await_decision(step: str) -> str:
    return f"AwaitDecision{step}"


def escalate(step: str) -> str:
    return f"Escalate{step}"


def record_failure(compensation: str) -> str:
    return f"Record{compensation}Failure"


def item_operation(operation: str, item: str | None) -> str:
    """The ledger operation of one item of a per-item step: ``create_shipment#L1``
    (``#`` never appears in an operation, so the item cannot be confused with it)."""
    return operation if item is None else f"{operation}#{item}"


# --- parallel groups and per-item steps (stepsaga.workflow._compiler) ---------------------


def group_outcome(group: str) -> str:
    return f"{group}Outcome"


def group_rejected(group: str) -> str:
    return f"{group}Rejected"


def branch_done(group: str, index: int) -> str:
    return f"{group}Branch{index + 1}Done"


def branch_rejected(group: str, index: int) -> str:
    return f"{group}Branch{index + 1}Rejected"


def branch_rejected_later(group: str, index: int) -> str:
    """Where a branch ends when a step after its first is rejected (``$.results`` exists)."""
    return f"{group}Branch{index + 1}RejectedLater"


def item_done(step: str) -> str:
    return f"{step}ItemDone"


def item_rejected(step: str) -> str:
    return f"{step}ItemRejected"


def was_applied(step: str) -> str:
    return f"Was{step}Applied"


def undo_items(step: str) -> str:
    return f"Undo{step}Items"


def undo_outcome(step: str) -> str:
    return f"Undo{step}Outcome"


def item_undone(step: str) -> str:
    return f"{step}ItemUndone"


def item_not_undone(compensation: str) -> str:
    return f"{compensation}ItemFailed"


def substitution_key(function: str) -> str:
    """The ``DefinitionSubstitutions`` key of a function's ARN."""
    return f"{function}FunctionArn"


def placeholder(function: str) -> str:
    """What ``FunctionName`` holds in the compiled ASL until substitution."""
    return "${" + substitution_key(function) + "}"


def snake(name: str) -> str:
    """``ReserveStock`` → ``reserve_stock``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
