"""The Lambda asset is built without Docker: pip for Lambda's platform, then our packages."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from aws_cdk import DockerImage

from infra import bundling
from infra.config import BundlingMode

ROOT = bundling.REPO_ROOT


def _bundle(mode: BundlingMode, target: Path) -> set[str]:
    image = DockerImage.from_registry("unused")
    assert bundling.LocalPythonBundling(mode).try_bundle(str(target), image=image)
    return {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}


def test_runtime_requirements_are_the_pinned_dependencies_minus_exclusions() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        declared = tomllib.load(f)["project"]["dependencies"]
    requirements = bundling.runtime_requirements()
    assert all("==" in r for r in requirements)
    assert {r.split("==")[0] for r in requirements} == {d.split("==")[0] for d in declared} - set(
        bundling.EXCLUDED_DEPENDENCIES
    )
    assert any(r.startswith("aws-lambda-powertools==") for r in requirements)
    assert any(r.startswith("pydantic==") for r in requirements)


def test_sources_only_bundle_copies_exactly_the_source_files(tmp_path: Path) -> None:
    files = _bundle(BundlingMode.SOURCES, tmp_path)
    assert files == {p.relative_to(ROOT).as_posix() for p in bundling.source_files()}
    assert "infra/runtime/overdue_reconciliation.py" in files
    assert "stepsaga/errors.py" in files
    assert not any(f.startswith(("stepsaga/cli/", "stepsaga/testing/")) for f in files)
    assert "infra/stack.py" not in files  # the CDK app itself never goes to Lambda
    assert not any("__pycache__" in f for f in files)


def test_asset_hash_follows_the_inputs() -> None:
    assert bundling.asset_hash(BundlingMode.PIP) == bundling.asset_hash(BundlingMode.PIP)
    assert bundling.asset_hash(BundlingMode.PIP) != bundling.asset_hash(BundlingMode.SOURCES)


@pytest.mark.slow
def test_pip_bundle_has_wheels_for_lambda_arm64_python(tmp_path: Path) -> None:
    """The real path: downloads wheels from the package index (cached by pip)."""
    files = _bundle(BundlingMode.PIP, tmp_path)
    native = [f for f in files if f.startswith("pydantic_core/") and f.endswith(".so")]
    assert native == ["pydantic_core/_pydantic_core.cpython-314-aarch64-linux-gnu.so"]
    assert "aws_lambda_powertools/__init__.py" in files
    assert "iso4217/__init__.py" in files
    assert "httpx/__init__.py" in files
    assert not any(f.startswith(("boto3/", "typer/", "rich/", "bin/")) for f in files)
    assert not any(f.endswith(".pyc") for f in files)
    assert "stepsaga/ledger/table.py" in files
