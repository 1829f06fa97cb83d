"""Test-wide isolation: no real AWS, no shared state folder."""

from __future__ import annotations

from pathlib import Path

import pytest


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
