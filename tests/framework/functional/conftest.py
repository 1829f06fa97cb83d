"""Fixtures of the CLI's functional tests (helpers live in ``cli_support.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepsaga._project.home import StateHome


@pytest.fixture
def home(tmp_path: Path) -> StateHome:
    """A state home that does not exist yet: "nothing written" means it stays absent."""
    return StateHome(tmp_path / "home")
