"""Effect classes (seed 003's decision tree, docs/explanation/background.md), shared with the
ledger.

``EffectClass`` is the ledger's enum (one definition for the whole project); the values
(``read``, ``keyed_write``, ``blind_write``, ``physical``) travel in every task event. A
step that declares nothing is ``physical`` — the most dangerous — never ``blind_write``.
"""

from __future__ import annotations

from stepsaga.ledger._models import EffectClass

#: What a step is treated as when it declares nothing.
UNDECLARED = EffectClass.PHYSICAL


def has_effect(effect: EffectClass) -> bool:
    """Whether the step changes something (needs a key, a disposition, reconciliation)."""
    return effect is not EffectClass.READ


__all__ = ["UNDECLARED", "EffectClass", "has_effect"]
