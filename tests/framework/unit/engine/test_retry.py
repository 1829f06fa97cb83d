from __future__ import annotations

import random

import pytest

from stepsaga.engine._retry import JitterStrategy, Retrier, decide, error_matches


def test_delay_grows_by_backoff_and_is_capped() -> None:
    retrier = Retrier(("X",), interval_seconds=2, backoff_rate=3.0, max_delay_seconds=10)
    rng = random.Random(0)
    assert [retrier.delay(n, rng) for n in (1, 2, 3)] == [2.0, 6.0, 10.0]


def test_full_jitter_is_uniform_below_the_capped_delay() -> None:
    retrier = Retrier(
        ("X",),
        interval_seconds=4,
        backoff_rate=2.0,
        max_delay_seconds=5,
        jitter=JitterStrategy.FULL,
    )
    rng = random.Random(3)
    delays = [retrier.delay(3, rng) for _ in range(500)]
    assert all(0.0 <= d <= 5.0 for d in delays)
    assert min(delays) < 0.5
    assert max(delays) > 4.5


def test_first_matching_retrier_decides_and_counts_alone() -> None:
    retriers = [Retrier(("A",), max_attempts=1), Retrier(("States.ALL",), max_attempts=2)]
    counts = [0, 0]
    rng = random.Random(0)
    assert decide(retriers, counts, "A", rng).retry
    assert not decide(retriers, counts, "A", rng).retry  # exhausted: no fall-through
    assert decide(retriers, counts, "B", rng).attempt == 1
    assert decide(retriers, counts, "B", rng).attempt == 2
    assert not decide(retriers, counts, "B", rng).retry
    assert counts == [1, 2]


def test_max_attempts_zero_never_retries() -> None:
    assert not decide([Retrier(("X",), max_attempts=0)], [0], "X", random.Random()).retry


@pytest.mark.parametrize(
    ("patterns", "error", "expected"),
    [
        (["States.ALL"], "Anything", True),
        (["States.TaskFailed"], "TransientError", True),
        (["States.TaskFailed"], "States.Timeout", False),
        (["States.Timeout"], "States.Timeout", True),
        (["A", "B"], "B", True),
        (["A"], "a", False),
    ],
)
def test_error_matching(patterns: list[str], error: str, expected: bool) -> None:
    assert error_matches(patterns, error) is expected
