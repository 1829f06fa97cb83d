"""Private: the action key, built and read in one place.

An action key is ``{tenant}:{case}:r{revision}:{operation}``
(docs/contributing/internals.md): trusted tenant + approved intent + operation, the same for
every attempt. A compensation's
operation (and so its key) derives from the original's: ``{original}:compensate:{undo}``.
The grammar below is what :class:`stepsaga.ledger.Action` accepts; a tenant or case id
never holds ``:``, so a key reads back unambiguously.

Building formats only: the values are validated where they enter (``Action``, ``Intent``,
``ApprovedCase``), and a listing builds the bare prefix of a case's keys (operation ``""``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

#: The grammar of a key's parts (``Action`` and ``Intent`` refuse anything else).
TENANT: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
CASE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAME: Final = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
#: What a compensation's key adds to its original's.
COMPENSATE: Final = ":compensate:"
#: ``op``, ``op#item`` (one item of a per-item step), each optionally ``:compensate:op``.
OPERATION: Final = re.compile(rf"^{NAME}(#{NAME})?({COMPENSATE}{NAME})*$")
#: The operation a compensation names (its own, before it is joined to the original's).
COMPENSATION: Final = re.compile(rf"^{NAME}$")

#: What a key reads back as: the first two parts hold no ``:``; the operation is the rest.
_KEY: Final = re.compile(
    r"(?P<tenant>[^:]+):(?P<case>[^:]+):r(?P<revision>\d+):(?P<operation>.*)\Z", re.DOTALL
)


@dataclass(frozen=True)
class ActionKey:
    """The parts of an action key."""

    tenant: str
    case: str
    revision: int
    operation: str

    def __str__(self) -> str:
        return action_key(self.tenant, self.case, self.revision, self.operation)


def action_key(tenant: str, case: str, revision: int, operation: str) -> str:
    """The action key of ``operation`` for one tenant's case at one approved revision."""
    return f"{tenant}:{case}:r{revision}:{operation}"


def parse_action_key(key: str) -> ActionKey | None:
    """The parts of ``key``, or None when it is not an action key."""
    match = _KEY.match(key)
    if match is None:
        return None
    return ActionKey(match["tenant"], match["case"], int(match["revision"]), match["operation"])


def compensation_of(original: str, undo: str) -> str:
    """The operation (or key) of the compensation ``undo`` of ``original``'s operation
    (or key): the same suffix on either."""
    return f"{original}{COMPENSATE}{undo}"


def is_compensation(operation: str) -> bool:
    """Whether ``operation`` (or a key) is a compensation's."""
    return COMPENSATE in operation
