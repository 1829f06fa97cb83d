"""The framework stands alone: ``stepsaga/`` imports nothing of the reference app, never
names it, and the wheel installs ``stepsaga`` only."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
#: The reference application's top-level packages (a team's project, as far as the
#: framework is concerned).
APP_PACKAGES = {"workflows", "tasks", "compensations", "infra", "services", "reliability"}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_the_framework_imports_nothing_of_the_reference_app() -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "stepsaga").rglob("*.py"))
        for line, module in _imports(path)
        if module.split(".")[0] in APP_PACKAGES
    ]
    assert problems == []


def test_the_framework_never_names_the_reference_app() -> None:
    named = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "stepsaga").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "replacement" in line.lower()
    ]
    assert named == []


@pytest.mark.slow
def test_the_wheel_holds_stepsaga_only(tmp_path: Path) -> None:
    """Built from a copy of the sources (a build leaves ``build/`` behind)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "stepsaga", source / "stepsaga", ignore=shutil.ignore_patterns("__pycache__")
    )
    for app in APP_PACKAGES:  # present beside it, as in a clone: still not packaged
        shutil.copytree(ROOT / app, source / app, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("stepsaga-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"stepsaga"}
    assert "stepsaga/py.typed" in names
    assert "stepsaga/scaffold/template/workflows/upgrade.py-tpl" in names
    assert "stepsaga/scaffold/template/pyproject.toml" in names
