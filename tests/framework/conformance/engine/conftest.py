"""The reference interpreters the engine is compared with: moto (one backend per module:
``mock_aws`` and its IAM/Lambda setup once) and LocalStack (the session's server).

``reference`` runs a test on each. ``@deviates(moto=reason, localstack=reason)`` (the
plugin's ``deviates`` marker, checked for names) marks where one deviates from AWS's
documentation: that run is a strict xfail with the documented behaviour as its reason; the
other runs as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from stepsaga.testing._localstack import LocalStack
from stepsaga.testing.pytest_plugin import expect_deviation
from tests.framework.conformance.engine.harness import (
    LocalStackReference,
    Moto,
    Reference,
    moto_backend,
)

F = TypeVar("F", bound=Callable[..., Any])


def deviates(**reasons: str) -> Callable[[F], F]:
    """Where a reference (``moto``, ``localstack``) deviates from AWS: its reason."""
    unknown = set(reasons) - {"moto", "localstack"}
    assert not unknown, f"no reference named {unknown}"
    mark: Callable[[F], F] = pytest.mark.deviates(**reasons)
    return mark


def unsupported(**reasons: str) -> Callable[[F], F]:
    """Where a reference cannot run the case here at all (not run): its reason."""
    unknown = set(reasons) - {"moto", "localstack"}
    assert not unknown, f"no reference named {unknown}"
    mark: Callable[[F], F] = pytest.mark.unsupported(**reasons)
    return mark


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    with moto_backend() as backend:
        yield backend


@pytest.fixture(
    params=[
        pytest.param("moto", id="moto"),
        pytest.param("localstack", id="localstack", marks=pytest.mark.localstack),
    ]
)
def reference(request: pytest.FixtureRequest) -> Reference:
    expect_deviation(request, request.param)
    if request.param == "moto":
        found: Moto = request.getfixturevalue("moto")
        return found
    server: LocalStack = request.getfixturevalue("localstack")
    return LocalStackReference(server)
