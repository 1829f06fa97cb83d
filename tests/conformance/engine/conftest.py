"""One moto backend per module: starting ``mock_aws`` and its IAM/Lambda setup once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.engine.harness import Moto, moto_backend


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    with moto_backend() as backend:
        yield backend
