"""The automatic redrive's settings: validated at the boundary, one message naming the
variable; the backoff's bounds for any execution and redrive count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from stepsaga._aws.auto_redrive import (
    DEFAULT_BASE_DELAY_SECONDS,
    DEFAULT_MAX_REDRIVES,
    ENV_BASE_DELAY_SECONDS,
    ENV_MAX_REDRIVES,
    MAX_DELAY_SECONDS,
    METRIC_FOR_VERDICT,
    AutoRedrive,
    RedriveVerdict,
)
from stepsaga.errors import InvalidInputError


def test_defaults_are_three_redrives_a_minute_apart_doubling() -> None:
    settings = AutoRedrive.from_environment({})
    assert (settings.max_redrives, settings.base_delay_seconds) == (3, 60)
    assert (DEFAULT_MAX_REDRIVES, DEFAULT_BASE_DELAY_SECONDS) == (3, 60)
    assert AutoRedrive.from_environment(settings.environment()) == settings


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (ENV_MAX_REDRIVES, "three", "is not a whole number"),
        (ENV_MAX_REDRIVES, "0", "greater than or equal to 1"),
        (ENV_MAX_REDRIVES, "11", "less than or equal to 10"),
        (ENV_BASE_DELAY_SECONDS, "1.5", "is not a whole number"),
        (ENV_BASE_DELAY_SECONDS, "0", "greater than or equal to 1"),
        (ENV_BASE_DELAY_SECONDS, "901", "less than or equal to 900"),
    ],
)
def test_a_bad_variable_is_one_error_naming_it(variable: str, value: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        AutoRedrive.from_environment({variable: value})
    assert caught.value.message.startswith(f"{variable}: ")
    assert message in caught.value.message
    assert "\n" not in caught.value.message
    assert caught.value.data["field"] == variable


def test_the_construct_property_is_checked_too() -> None:
    with pytest.raises(ValidationError, match="max_redrives"):
        AutoRedrive(max_redrives=0)
    with pytest.raises(ValidationError, match="max_redrives"):
        AutoRedrive(max_redrives="3")  # type: ignore[arg-type]


ARNS = st.from_regex(r"arn:aws:states:eu-west-1:123456789012:execution:dev-s:[a-z0-9-]{1,40}")


@given(arn=ARNS, count=st.integers(0, 40), base=st.integers(1, MAX_DELAY_SECONDS))
def test_the_wait_is_half_to_all_of_base_times_two_to_the_k_at_most_900(
    arn: str, count: int, base: int
) -> None:
    delay = AutoRedrive(base_delay_seconds=base).delay(count, arn)
    full = base * 2.0**count
    assert min(full / 2, MAX_DELAY_SECONDS) <= delay.total_seconds() <= min(full, 900)
    # the same message gets the same wait on every delivery
    assert delay == AutoRedrive(base_delay_seconds=base).delay(count, arn)


@given(arn=ARNS, count=st.integers(0, 20))
def test_the_wait_never_shrinks_from_one_redrive_to_the_next(arn: str, count: int) -> None:
    """Equal jitter: the next wait's least (base * 2**k) is this one's most."""
    settings = AutoRedrive()
    assert settings.delay(count + 1, arn) >= settings.delay(count, arn)


def test_every_verdict_has_a_metric_and_refusals_share_one() -> None:
    assert set(METRIC_FOR_VERDICT) == set(RedriveVerdict)
    refused = {METRIC_FOR_VERDICT[v] for v in RedriveVerdict if v.refused}
    assert len(refused) == 1
    others = [METRIC_FOR_VERDICT[v] for v in RedriveVerdict if not v.refused]
    assert len(set(others)) == len(others)
    assert refused.isdisjoint(others)
