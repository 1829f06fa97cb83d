"""Where a budget lives across its shards: splitting a total, choosing the shard to debit.

Pure functions, so the DynamoDB store stays about requests. A debit comes from one shard
(its record remembers which, and a refund goes back there); the store tries the shards
that covered the cost when it read them, in random order, and gathers the budget into
as few shards as cover the cost into one when no single shard covers it alone.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from stepsaga.errors import InvalidInputError


def split(amount: int, shards: int) -> list[int]:
    """``amount`` over ``shards`` parts differing by at most 1, summing to ``amount``."""
    if shards < 1:
        raise InvalidInputError("budget shards must be at least 1", field="shards")
    share, extra = divmod(amount, shards)
    return [share + (1 if i < extra else 0) for i in range(shards)]


def candidates(remaining: Mapping[str, int], cost: int, rng: random.Random) -> list[str]:
    """The shards (sort keys) that covered ``cost`` as read, in random order."""
    fitting = [shard for shard, left in remaining.items() if left >= cost]
    rng.shuffle(fitting)
    return fitting


def gathering(remaining: Mapping[str, int], cost: int) -> list[str]:
    """The fewest shards that cover ``cost`` together, largest first (the first receives
    the others' remaining); all of them when even all do not."""
    ordered = sorted(remaining, key=lambda shard: (-remaining[shard], shard))
    total = 0
    for count, shard in enumerate(ordered, start=1):
        total += remaining[shard]
        if total >= cost:
            return ordered[:count]
    return ordered


__all__ = ["candidates", "gathering", "split"]
