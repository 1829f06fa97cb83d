"""What looking downstream for an effect can prove: it is there, or it is not.

Step handlers (``stepsaga.StepHandler``) return these from ``lookup``; automatic
reconciliation and the handlers' "look before acting" rule act on them. A lookup that
cannot decide raises ``TransientError`` (or the operation has no lookup at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Found:
    """The effect exists downstream. ``result``/``reference`` are what the ledger records
    (the same shape the operation returns when it performs the effect); ``evidence`` says
    how it was found, for the audit note."""

    evidence: str
    result: Mapping[str, Any] = field(default_factory=dict)
    reference: str | None = None


@dataclass(frozen=True)
class Absent:
    """The downstream proves the effect does not exist."""

    evidence: str


Lookup = Found | Absent
