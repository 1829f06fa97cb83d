"""``AWS_REGION`` first, then ``AWS_DEFAULT_REGION``, then the profile's region."""

from __future__ import annotations

import pytest

from stepsaga._aws.aws_region import region_from
from stepsaga.errors import InvalidInputError


@pytest.mark.parametrize(
    ("environ", "profile", "expected"),
    [
        ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-east-1"}, "ap-south-1", "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "us-east-1"}, "ap-south-1", "us-east-1"),
        ({"AWS_REGION": "  "}, "ap-south-1", "ap-south-1"),
        ({}, None, None),
    ],
)
def test_region_order(environ: dict[str, str], profile: str | None, expected: str | None) -> None:
    assert region_from(environ, profile) == expected


def test_a_malformed_region_names_the_variable() -> None:
    with pytest.raises(InvalidInputError) as caught:
        region_from({"AWS_REGION": "eu west 1"})
    assert caught.value.data["field"] == "AWS_REGION"
    assert str(caught.value) == "$AWS_REGION 'eu west 1' is not a region name"
