"""The console serves nothing from outside the wheel: every template and asset is in it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.framework.functional.cli_support import ROOT
from tests.framework.functional.test_wheel_project import build_wheel

pytestmark = pytest.mark.slow


def test_the_wheel_ships_the_consoles_templates_and_assets(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    shipped = set(zipfile.ZipFile(wheel).namelist())
    console = ROOT / "stepsaga" / "console"
    wanted = {
        str(path.relative_to(ROOT))
        for folder in ("templates", "static")
        for path in (console / folder).iterdir()
    }
    assert wanted
    assert wanted <= shipped


def test_no_page_names_an_outside_asset() -> None:
    console = ROOT / "stepsaga" / "console"
    for path in [*(console / "templates").iterdir(), *(console / "static").iterdir()]:
        text = path.read_text()
        assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', ""), path
        assert "https://" not in text, path
        assert "//cdn" not in text, path
