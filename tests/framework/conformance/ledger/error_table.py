"""docs/explanation/design.md's "what an exception does to a record", written out again for the
tests.

Deliberately not derived from ``stepsaga.ledger._outcomes``: a change to the table there
must also be made here, or the per-cell tests fail.
"""

from __future__ import annotations

from stepsaga import EffectClass
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    AttemptBudgetExhaustedError,
    BusinessRejectedError,
    IllegalTransitionError,
    InvalidActionError,
    InvalidInputError,
    NotFoundError,
    OutcomeUnknownError,
    StoreUnavailableError,
    TransientError,
)
from stepsaga.ledger import Status
from stepsaga.ledger._outcomes import ErrorFamily

F = ErrorFamily
READ, KEYED, BLIND, PHYSICAL = (
    EffectClass.READ,
    EffectClass.KEYED_WRITE,
    EffectClass.BLIND_WRITE,
    EffectClass.PHYSICAL,
)
RELEASED, FAILED, UNKNOWN = Status.RELEASED, Status.FAILED, Status.UNKNOWN
OU, TE = OutcomeUnknownError, TransientError
N = None  # status: nothing recorded; raised: the exception itself

#: (effect class, the exception answers a keyed write's same-key re-call)
COLUMNS = ((READ, False), (KEYED, False), (BLIND, False), (PHYSICAL, False), (KEYED, True))

Expected = tuple[Status | None, type[Exception] | None]

# fmt: off
GRID: dict[ErrorFamily, tuple[Expected, Expected, Expected, Expected, Expected]] = {
    #                   read     keyed_write    blind_write    physical       keyed, re-called
    F.BEFORE_DISPATCH: ((N, N),  (RELEASED, N), (RELEASED, N), (RELEASED, N), (UNKNOWN, OU)),
    F.REFUSED:         ((N, N),  (FAILED, N),   (FAILED, N),   (FAILED, N),   (UNKNOWN, OU)),
    F.KEY_CONFLICT:    ((N, TE), (FAILED, N),   (FAILED, N),   (FAILED, N),   (UNKNOWN, OU)),
    F.KEY_BUSY:        ((N, TE), (RELEASED, N), (RELEASED, N), (UNKNOWN, OU), (RELEASED, N)),
    F.UNCERTAIN:       ((N, TE), (UNKNOWN, OU), (RELEASED, TE), (UNKNOWN, OU), (UNKNOWN, OU)),
    F.UNEXPECTED:      ((N, TE), (UNKNOWN, OU), (RELEASED, TE), (UNKNOWN, OU), (UNKNOWN, OU)),
}
# fmt: on

#: (family, effect, recalled) → (status written, class raised; None: the exception itself).
EXPECTED: dict[tuple[ErrorFamily, EffectClass, bool], Expected] = {
    (family, effect, recalled): row[column]
    for family, row in GRID.items()
    for column, (effect, recalled) in enumerate(COLUMNS)
}

#: The cells where a keyed write's handler calls again with the same key (once).
RECALLS = {(F.UNCERTAIN, KEYED, False), (F.UNCERTAIN, KEYED, True)}

#: Exception classes of each family, every one the rule names and a few it does not.
EXAMPLES: dict[ErrorFamily, tuple[type[Exception], ...]] = {
    F.BEFORE_DISPATCH: (TransientError,),
    F.REFUSED: (BusinessRejectedError, InvalidInputError, InvalidActionError, NotFoundError),
    F.KEY_CONFLICT: (ActionConflictError,),
    F.KEY_BUSY: (ActionInProgressError,),
    F.UNCERTAIN: (OutcomeUnknownError,),
    F.UNEXPECTED: (
        RuntimeError,
        KeyError,
        TimeoutError,
        StoreUnavailableError,
        IllegalTransitionError,
        AttemptBudgetExhaustedError,
    ),
}


def make_error(cls: type[Exception], text: str = "it failed") -> Exception:
    """An instance of ``cls`` as a downstream adapter would raise it."""
    if issubclass(cls, ActionInProgressError):
        return cls(text, retry_after_seconds=1.0)
    return cls(text)


#: (family, effect, recalled, an example exception class): one parametrized test case.
Case = tuple[ErrorFamily, EffectClass, bool, type[Exception]]


def cases(*, recalled: bool | None = None) -> list[Case]:
    """(family, effect, recalled, example class) for every cell and example."""
    return [
        (family, effect, again, cls)
        for (family, effect, again) in EXPECTED
        if recalled is None or again is recalled
        for cls in EXAMPLES[family]
    ]


def case_id(case: Case) -> str:
    family, effect, recalled, cls = case
    return f"{family.value}-{effect.value}{'-recalled' if recalled else ''}-{cls.__name__}"
