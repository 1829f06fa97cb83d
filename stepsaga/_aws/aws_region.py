"""The AWS region, read the way the CDK CLI and the Lambda runtime read it.

boto3's ``Session().region_name`` reads ``AWS_DEFAULT_REGION`` and the profile, but not
``AWS_REGION`` (the variable the CDK CLI, the other SDKs and Lambda set). Every boto3 client
stepsaga makes takes its region from :func:`region_from`: ``$AWS_REGION``, then
``$AWS_DEFAULT_REGION``, then the profile's. A malformed value is one
``InvalidInputError`` naming the variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from stepsaga.errors import InvalidInputError

__all__ = ["REGION_VARIABLES", "region_from", "valid_region"]

#: Read in this order; the first one set wins.
REGION_VARIABLES: Final = ("AWS_REGION", "AWS_DEFAULT_REGION")
#: botocore's rule for a region name (``eu-west-1``; ``local`` for DynamoDB Local).
_REGION: Final = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$")


def valid_region(value: str) -> bool:
    return bool(_REGION.match(value))


def region_from(environ: Mapping[str, str], profile_region: str | None = None) -> str | None:
    """``$AWS_REGION``, else ``$AWS_DEFAULT_REGION``, else ``profile_region`` (the
    session's, from the profile); None when none is set."""
    for name in REGION_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            if not valid_region(value):
                shown = value if len(value) <= 80 else f"{value[:80]}…"
                raise InvalidInputError(f"${name} {shown!r} is not a region name", field=name)
            return value
    return profile_region or None
