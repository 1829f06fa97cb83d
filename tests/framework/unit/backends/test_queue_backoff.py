"""The busy back-off of queued messages: bounded, spread, and growing fast enough that a
message's few receives outlast a long throttling spell."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepsaga._aws.queue_backoff import MAX_VISIBILITY_SECONDS, Backoff, receive_count


@settings(max_examples=60)
@given(message_id=st.text(min_size=1, max_size=40), receives=st.integers(1, 40))
def test_each_timeout_is_within_half_to_all_of_its_step_and_at_most_12_hours(
    message_id: str, receives: int
) -> None:
    backoff = Backoff()
    full = min(MAX_VISIBILITY_SECONDS, backoff.base_seconds * backoff.factor ** (receives - 1))
    seconds = backoff.seconds(receives, message_id)
    assert full // 2 <= seconds <= full
    assert seconds == backoff.seconds(receives, message_id)  # one message, one moment


@settings(max_examples=30)
@given(message_id=st.text(min_size=1, max_size=40))
def test_the_timeout_grows_with_the_receives(message_id: str) -> None:
    timeouts = [Backoff().seconds(n, message_id) for n in range(1, 8)]
    assert timeouts == sorted(timeouts)


def test_five_receives_outlast_an_hour_of_throttling() -> None:
    """With the ingress's 5 receives, the last comes at least ~1.4 h after the first (the
    queue's own 180 s visibility timeout would have dead-lettered it after ~12 min)."""
    least = sum(Backoff().seconds(n, "m") for n in range(1, 5))
    assert least >= 3600


def test_spread_across_messages() -> None:
    assert len({Backoff().seconds(1, f"m{i}") for i in range(50)}) > 25


@pytest.mark.parametrize(
    ("record", "count"),
    [
        ({"attributes": {"ApproximateReceiveCount": "3"}}, 3),
        ({"attributes": {}}, 1),
        ({}, 1),
        ({"attributes": {"ApproximateReceiveCount": "x"}}, 1),
    ],
)
def test_receive_count_of_a_lambda_record(record: dict[str, object], count: int) -> None:
    assert receive_count(record) == count


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="base_seconds"):
        Backoff(base_seconds=0)
