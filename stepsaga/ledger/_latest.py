"""A case's latest acting revision: the ledger's own half of "revisions supersede".

The start rule (``stepsaga.backends._lifecycle.start_refusal``) keeps two revisions of a
case from running at once, but queues are unordered, dead letters replay and people
redrive. So the ledger refuses, by itself, to act for revision N once a later revision of
the same case has claimed anything: every claim (first claim, re-claim, takeover, and the
adopt/question records of a later revision) carries one more conditional write in its own
transaction (SQLite) / ``TransactWriteItems`` (DynamoDB) — the item
``ACTION#{tenant}:{case}`` / ``LATEST_REVISION`` whose ``revision`` may only move up:
"absent or at most N, then N". A claim whose condition fails writes nothing and raises
:class:`~stepsaga.errors.RevisionSupersededError`.

A later revision also moves the item up *before* it reads the earlier revisions' records
(``Ledger.claim``): from then on no earlier revision can claim, so what it read cannot
change under it (an earlier claim that committed first is in what it reads).
Recording the outcome of a claim already made (complete, fail, release) is not acting and
is never refused: the effect was dispatched, and the ledger must know how it ended.
"""

from __future__ import annotations

from typing import Final

from stepsaga.errors import RevisionSupersededError
from stepsaga.ledger._models import Action
from stepsaga.ledger._store import LedgerStore
from stepsaga.ledger._table import ACTION_PREFIX
from stepsaga.ledger._writes import LedgerWrite, at_most

SORT: Final = "LATEST_REVISION"
ATTRIBUTE: Final = "revision"


def item_key(tenant_id: str, case_id: str) -> tuple[str, str]:
    """``pk``/``sk`` of the case's item (beside its records' ``ACTION#{tenant}:{case}:…``;
    the sort key keeps it apart from every action record)."""
    return f"{ACTION_PREFIX}{tenant_id}:{case_id}", SORT


def guard(action: Action) -> LedgerWrite:
    """The write every claim of ``action`` carries: the case's latest revision becomes the
    action's, if no later one has acted."""
    pk, sk = item_key(action.tenant_id, action.intent.case_id)
    revision = action.intent.revision
    return LedgerWrite(pk, sk, {ATTRIBUTE: revision}, at_most(ATTRIBUTE, revision))


def latest(store: LedgerStore, tenant_id: str, case_id: str) -> int | None:
    """The latest revision that has acted on the case (None: none has)."""
    stored = store.get_extra(*item_key(tenant_id, case_id))
    value = None if stored is None else stored.get(ATTRIBUTE)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def superseded(store: LedgerStore, action: Action) -> RevisionSupersededError:
    """The error a refused claim raises, naming the revision that acted."""
    case, revision = action.intent.case_id, action.intent.revision
    later = latest(store, action.tenant_id, case)
    return RevisionSupersededError(
        f"{action.key}: revision {later or 'later'} of case {case} has already acted, so "
        f"revision {revision} is superseded and acts no more (nothing was written)",
        key=action.key,
        case_id=case,
        revision=revision,
        latest_revision=later,
    )
