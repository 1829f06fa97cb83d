"""Effect classes (seed 003's decision tree): what a step does to the world.

The values are the strings DESIGN.md uses, and they travel in every task event, so the
ledger and the handlers can map them to their own rules by value. An undeclared class is
``physical`` — the most dangerous — never ``blind_write``.
"""

from __future__ import annotations

from enum import StrEnum


class EffectClass(StrEnum):
    #: Changes nothing; needs no action key, no compensation and no reconciliation.
    READ = "read"
    #: The downstream deduplicates on our action key (e.g. payments' Idempotency-Key).
    KEYED_WRITE = "keyed_write"
    #: Safe to repeat verbatim (a put to a deterministic key).
    BLIND_WRITE = "blind_write"
    #: Irreversible and unkeyed (a shipment): never repeated on an uncertain outcome.
    PHYSICAL = "physical"

    @property
    def has_effect(self) -> bool:
        return self is not EffectClass.READ


#: What a step is treated as when it declares nothing.
UNDECLARED = EffectClass.PHYSICAL
