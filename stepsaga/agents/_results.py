"""Error results an LLM can act on: one structured shape and one sentence of advice.

Every failed agent tool call answers ``ToolFailure``: the error name (the error family's
contract name, ``StepSagaError.error_name``), whether repeating the same call may succeed
(``retryable``, the class's own flag), when (``retry_after_s``), whether a retry must
carry the same idempotency key (``reuse_same_key``) and the reconciliation item a person
decides (``item_id``). ``advice`` is one plain sentence for the model.

The key rule follows what Stripe promises for its idempotency keys: a request that may
have had an effect, or that has not run yet, is retried with the **same** key and never
with a new one (a new key is a new effect); a request that was refused before any effect
(a conflict, a validation failure, a downstream refusal) is not retried unchanged, and a
different request needs its own approval and key. One table, most specific class first;
a team's own exception subclass takes its nearest base's row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BudgetExhaustedError,
    BusinessRejectedError,
    InvalidInputError,
    NotFoundError,
    OutcomeUnknownError,
    ReplayWindowExpiredError,
    StepSagaError,
    StoreUnavailableError,
    TransientError,
)

SAME_KEY: Final = "retry this call with the SAME idempotencyKey; do not request a new key"


class ToolFailure(BaseModel):
    """The structured content of every error result (MCP ``isError``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error: str = Field(description="The error's name, e.g. OutcomeUnknownError.")
    retryable: bool = Field(description="Whether repeating this exact call may succeed.")
    retry_after_s: float | None = Field(description="Seconds to wait before retrying, when known.")
    reuse_same_key: bool = Field(
        description="A retry must carry the same idempotencyKey (never a new one)."
    )
    item_id: str | None = Field(
        description="The reconciliation item a person decides, when one was opened."
    )
    message: str = Field(description="What happened, in one line.")
    advice: str = Field(description="What to do next, in one sentence.")

    def text(self) -> str:
        """The text block beside the structured content: the message, then the advice."""
        return f"{self.error}: {self.message}. {self.advice[:1].upper()}{self.advice[1:]}."


@dataclass(frozen=True)
class _Row:
    reuse_same_key: bool
    advice: str


#: Error class → what the model should do, most specific first (``isinstance``).
ADVICE: Final[tuple[tuple[type[StepSagaError], _Row], ...]] = (
    (
        OutcomeUnknownError,
        _Row(
            True,
            "the outcome is uncertain and a person decides it; later, " + SAME_KEY,
        ),
    ),
    (ActionInProgressError, _Row(True, "another delivery of this call is running; " + SAME_KEY)),
    (TransientError, _Row(True, "nothing was applied; " + SAME_KEY)),
    (StoreUnavailableError, _Row(True, "nothing was recorded; " + SAME_KEY)),
    (
        ActionConflictError,
        _Row(
            False,
            "do not retry this call: a different request needs its own approval and a new key",
        ),
    ),
    (
        ReplayWindowExpiredError,
        _Row(False, "the approval is too old to act on; ask for a new approval and key"),
    ),
    (
        BudgetExhaustedError,
        _Row(True, "nothing was charged; once the budget is topped up, " + SAME_KEY),
    ),
    (
        AttemptBudgetExhaustedError,
        _Row(True, "do not retry now: an operator must look at this action; " + SAME_KEY),
    ),
    (
        BusinessRejectedError,
        _Row(False, "nothing was applied; do not retry this call unchanged"),
    ),
    (
        InvalidInputError,
        _Row(False, "nothing was applied; do not retry this call unchanged"),
    ),
    (NotFoundError, _Row(False, "nothing was applied; do not retry this call unchanged")),
)
_DEFAULT: Final = _Row(True, SAME_KEY)


def failure(
    error: StepSagaError,
    *,
    item_id: str | None = None,
    advice: str | None = None,
    reuse_same_key: bool | None = None,
) -> ToolFailure:
    """``error`` as the model sees it; ``advice``/``reuse_same_key`` override the table
    where the adapter knows more (a key never issued, arguments refused before a claim)."""
    row = next((row for cls, row in ADVICE if isinstance(error, cls)), _DEFAULT)
    retry_after = error.data.get("retry_after_seconds")
    return ToolFailure(
        error=error.error_name(),
        retryable=type(error).retryable,
        retry_after_s=round(float(retry_after), 3) if retry_after is not None else None,
        reuse_same_key=row.reuse_same_key if reuse_same_key is None else reuse_same_key,
        item_id=item_id,
        message=error.message.rstrip("."),
        advice=advice or row.advice,
    )


__all__ = ["ADVICE", "SAME_KEY", "ToolFailure", "failure"]
