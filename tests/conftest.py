"""Test-wide isolation (no real AWS, no shared state folder) and the tiers.

Tiers: every test under ``tests/framework/{functional,conformance,infra,chaos}`` is marked
``integration`` here, by its directory; a test that takes seconds carries ``slow`` itself.
``make check`` runs ``tests/framework/unit`` and ``tests/app`` without either, under the
``fast`` Hypothesis profile; ``make test`` runs everything at full example counts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

#: Directories whose tests drive whole systems (engines, CLIs, browsers, stacks, chaos).
INTEGRATION_DIRECTORIES = ("functional", "conformance", "infra", "chaos")
_FRAMEWORK = Path(__file__).parent / "framework"

#: ``STEPSAGA_HYPOTHESIS_PROFILE=fast`` (``make check``): every property gets at most this
#: many examples, whatever its own ``@settings`` ask. Unset, Hypothesis keeps its own choice
#: (``default``, or ``ci`` under ``CI=true``).
FAST_EXAMPLES = 10
settings.register_profile("fast", max_examples=FAST_EXAMPLES)
if profile := os.environ.get("STEPSAGA_HYPOTHESIS_PROFILE"):
    settings.load_profile(profile)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Fake credentials so nothing can reach a real account, and a private state folder.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("STEPSAGA_HOME", str(tmp_path / "stepsaga-home"))
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "stepsaga-tests")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "stepsaga")


def pytest_configure(config: pytest.Config) -> None:
    """The CLI app with this repository's project commands (``demo``, ``sim``) mounted,
    as the ``stepsaga`` script mounts them (tests invoke ``app`` directly)."""
    from stepsaga.cli._app import project_commands

    project_commands(["--project", str(Path(__file__).resolve().parents[1])])


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration = [_FRAMEWORK / name for name in INTEGRATION_DIRECTORIES]
    fast = settings.get_current_profile_name() == "fast"
    for item in items:
        if any(item.path.is_relative_to(directory) for directory in integration):
            item.add_marker(pytest.mark.integration)
        if fast:
            _cap_examples(item)


def _cap_examples(item: pytest.Item) -> None:
    """Lower a property's own ``max_examples`` to the fast profile's. Hypothesis lets a
    test's ``@settings`` win over any profile and has no public cap, so this replaces the
    settings object Hypothesis keeps on the test (read when the test runs)."""
    if not isinstance(item, pytest.Function):
        return
    test = getattr(item.obj, "__func__", item.obj)  # a method's function
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(own, settings) and own.max_examples > FAST_EXAMPLES:
        test._hypothesis_internal_use_settings = settings(own, max_examples=FAST_EXAMPLES)
