"""Build the Lambda code asset on this machine, without Docker.

No Docker daemon runs on the development and CI machines, so the asset is built by
``ILocalBundling.try_bundle``: ``pip install`` of the runtime dependencies for Lambda's
platform (``--platform manylinux2014_aarch64 --only-binary=:all:``, CPython of the Lambda
runtime) into the asset directory, then a copy of the project's packages. Nothing is
imported: handler modules are referenced only by their path strings.

One asset serves every function (each sets its own handler), so a synth bundles once.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from infra.config import BundlingMode

#: Lambda runtime and the matching wheel tags (keep the three in step).
RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE: Final = lambda_.Architecture.ARM_64
PYTHON_VERSION: Final = "3.14"
PLATFORM: Final = "manylinux2014_aarch64"

#: Project paths copied into the asset (relative to the repository root). ``infra/runtime``
#: holds the stack's own monitoring handler; ``infra/__init__.py`` imports nothing.
SOURCE_PATHS: Final = (
    "stepsaga",
    "tasks",
    "compensations",
    "workflows",
    "services",
    "infra/__init__.py",
    "infra/runtime",
)
#: Never needed inside Lambda: the operator CLI (and the project's CLI commands) and the
#: test helpers
#: (their dependencies, typer/rich/testcontainers/moto, are not installed there).
EXCLUDED_PATHS: Final = (
    "stepsaga/cli",
    "stepsaga/testing",
    "stepsaga/__main__.py",
    "services/cli.py",
    "workflows/demo.py",
)
_IGNORED: Final = ("__pycache__", "*.pyc", ".mypy_cache")

#: Runtime dependencies from pyproject.toml that the asset leaves out, and why.
EXCLUDED_DEPENDENCIES: Final = {
    "boto3": "the Lambda Python runtime ships boto3/botocore",
    "typer": "CLI only",
    "rich": "CLI only",
}

REPO_ROOT: Final = Path(__file__).resolve().parent.parent


def runtime_requirements(root: Path = REPO_ROOT) -> list[str]:
    """The pinned ``[project].dependencies`` of pyproject.toml, minus the exclusions."""
    with (root / "pyproject.toml").open("rb") as f:
        dependencies: list[str] = tomllib.load(f)["project"]["dependencies"]
    return [d for d in dependencies if _distribution(d) not in EXCLUDED_DEPENDENCIES]


def _distribution(requirement: str) -> str:
    for separator in ("==", ">=", "<=", "~=", "!=", "<", ">", "[", ";", " "):
        requirement = requirement.split(separator, 1)[0]
    return requirement.strip().lower()


def source_files(root: Path = REPO_ROOT) -> Iterator[Path]:
    """Every file the asset copies, in a stable order (for the asset hash)."""
    excluded = [root / p for p in EXCLUDED_PATHS]
    for relative in SOURCE_PATHS:
        path = root / relative
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in candidates:
            if not file.is_file() or any(file.is_relative_to(e) for e in excluded):
                continue
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            yield file


def asset_hash(mode: BundlingMode, root: Path = REPO_ROOT) -> str:
    """Changes whenever the asset's inputs change: sources, requirements, target platform."""
    digest = hashlib.sha256()
    digest.update(f"{mode}|{PYTHON_VERSION}|{PLATFORM}|".encode())
    if mode is BundlingMode.PIP:
        digest.update("\n".join(runtime_requirements(root)).encode())
    for file in source_files(root):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def copy_sources(root: Path, target: Path) -> None:
    for relative in SOURCE_PATHS:
        source = root / relative
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_file():
            shutil.copy2(source, destination)
        else:
            shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*_IGNORED))
    for relative in EXCLUDED_PATHS:
        left_out = target / relative
        if left_out.is_dir():
            shutil.rmtree(left_out)
        else:
            left_out.unlink(missing_ok=True)


def pip_install_command(target: Path, requirements: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",  # .pyc for this machine's Python would be useless on the runtime's
        "--platform",
        PLATFORM,
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        "--target",
        str(target),
        *requirements,
    ]


@jsii.implements(ILocalBundling)
class LocalPythonBundling:
    """CDK calls ``try_bundle`` before it would fall back to Docker. It never returns False:
    a failure raises, because the Docker fallback cannot work here and would only hide the
    real error."""

    def __init__(self, mode: BundlingMode, root: Path = REPO_ROOT) -> None:
        self.mode = mode
        self.root = root

    def try_bundle(self, output_dir: str, *, image: DockerImage, **_options: Any) -> bool:
        """jsii passes the ``BundlingOptions`` struct as keywords; none of them is used."""
        target = Path(output_dir)
        if self.mode is BundlingMode.PIP:
            command = pip_install_command(target, runtime_requirements(self.root))
            result = subprocess.run(  # noqa: S603 - fixed argv, no shell
                command, capture_output=True, text=True, check=False
            )
            if result.returncode != 0:
                raise RuntimeError(
                    f"pip install for the Lambda asset failed:\n{result.stderr[-4000:]}"
                )
            shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts: unused
        copy_sources(self.root, target)
        return True


def lambda_code(mode: BundlingMode, root: Path = REPO_ROOT) -> lambda_.AssetCode:
    """The one code asset of the stack's functions."""
    return lambda_.Code.from_asset(
        str(root),
        asset_hash=asset_hash(mode, root),
        asset_hash_type=AssetHashType.CUSTOM,
        bundling=BundlingOptions(
            # Required by the API; never pulled, since local bundling always succeeds or raises.
            image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
            local=LocalPythonBundling(mode, root),
        ),
    )
