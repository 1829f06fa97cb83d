"""The Lambda asset is built without Docker: pip for Lambda's platform, then the project's
packages and stepsaga (from the installed package)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import DockerImage
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import stepsaga
from infra.app import EXCLUDE, ROOT, SAGA
from stepsaga._project.project import Project
from stepsaga.cdk import BundlingMode
from stepsaga.cdk import _bundling as bundling
from stepsaga.cdk._bundling import AssetLayout
from stepsaga.cdk._saga_deployment import SagaDeployment
from stepsaga.errors import DeploymentError

LAYOUT = AssetLayout.for_saga(ROOT, SagaDeployment.of(Project.load(ROOT), SAGA), exclude=EXCLUDE)


def _bundle(mode: BundlingMode, target: Path) -> set[str]:
    image = DockerImage.from_registry("unused")
    assert bundling.LocalPythonBundling(mode, LAYOUT).try_bundle(str(target), image=image)
    return {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}


def test_the_asset_holds_the_packages_the_saga_references() -> None:
    assert set(LAYOUT.packages) == {"workflows", "tasks", "compensations", "services"}
    assert LAYOUT.framework_root == Path(stepsaga.__file__).parent


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project: dict[str, Any] = tomllib.load(f)["project"]
    return project


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_runtime_requirements_are_the_declared_dependencies_minus_exclusions() -> None:
    requirements = bundling.framework_requirements()
    assert _names(requirements) == _names(_pyproject()["dependencies"]) - set(
        bundling.EXCLUDED_DEPENDENCIES
    )
    assert {"aws-lambda-powertools", "pydantic"} <= _names(requirements)


def test_the_lock_pins_and_hashes_the_whole_closure_of_the_requirements() -> None:
    locked = bundling.locked_requirements()
    pins = {line.split(" ", 1)[0] for line in locked}
    assert all(re.fullmatch(r"\S+==\S+ --hash=sha256:[0-9a-f]{64}", line) for line in locked)
    versions = dict(pin.split("==") for pin in pins)
    # Every direct requirement locked inside its pyproject range, at the version the dev
    # extra pins: Lambda runs what `make test` ran (else: refresh the lock).
    dev_pins = {
        canonicalize_name(Requirement(r).name): str(Requirement(r).specifier)
        for r in _pyproject()["optional-dependencies"]["dev"]
    }
    for declared in map(Requirement, _pyproject()["dependencies"]):
        name = canonicalize_name(declared.name)
        if name in bundling.EXCLUDED_DEPENDENCIES:
            continue
        assert declared.specifier.contains(versions[name]), (name, versions[name])
        assert dev_pins[name] == f"=={versions[name]}", name
    names = set(versions)
    # The closure, not only the direct requirements.
    assert {"pydantic-core", "annotated-types", "httpcore", "anyio"} <= names
    assert not names & set(bundling.EXCLUDED_DEPENDENCIES)
    assert LAYOUT.requirement_list() == locked


def test_sources_only_bundle_copies_exactly_the_source_files(tmp_path: Path) -> None:
    files = _bundle(BundlingMode.SOURCES, tmp_path)
    assert files == LAYOUT.asset_paths()
    assert "stepsaga/_reconciliation/overdue.py" in files
    assert "stepsaga/lambda_handler.py" in files
    assert "stepsaga/errors.py" in files
    assert "tasks/reserve_stock.py" in files
    assert "services/dependencies.py" in files
    assert not any(
        f.startswith(("stepsaga/cli/", "stepsaga/testing/", "stepsaga/scaffold/")) for f in files
    )
    assert "stepsaga/__main__.py" not in files
    assert not any(f.startswith("infra/") for f in files)  # the CDK app never goes to Lambda
    assert not {"services/cli.py", "workflows/demo.py"} & files  # the app's exclusions
    assert not any("__pycache__" in f for f in files)


def test_asset_hash_follows_the_inputs() -> None:
    assert LAYOUT.asset_hash(BundlingMode.PIP) == LAYOUT.asset_hash(BundlingMode.PIP)
    assert LAYOUT.asset_hash(BundlingMode.PIP) != LAYOUT.asset_hash(BundlingMode.SOURCES)
    more = AssetLayout.for_saga(
        ROOT, SagaDeployment.of(Project.load(ROOT), SAGA), exclude=EXCLUDE, include=["bench"]
    )
    assert more.asset_hash(BundlingMode.SOURCES) != LAYOUT.asset_hash(BundlingMode.SOURCES)


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
    # .pyc only from an interpreter of the runtime's version (none of another version).
    pycs = [f for f in files if f.endswith(".pyc")]
    assert all(".cpython-314." in f for f in pycs)
    assert bool(pycs) == (bundling.runtime_python() is not None)
    assert "stepsaga/ledger/_table.py" in files


# --- what the bundled code imports must exist in Lambda -------------------------------

#: Shipped with the Lambda Python runtime.
_RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six"}
_BUNDLED_SOURCES = {"stepsaga", *LAYOUT.packages}


def _requirement_closure(names: set[str]) -> set[str]:
    """Distribution names reachable from ``names`` through their (unconditional) requires."""
    seen: set[str] = set()
    todo = [n.lower().replace("_", "-") for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # a marker-only dependency (older Pythons): not installed, not needed
        seen.add(name)
        for requirement in requirements:
            if ";" in requirement and "extra ==" in requirement:
                continue
            dependency = re.split(r"[\s<>=!~\[;(]", requirement, maxsplit=1)[0]
            todo.append(dependency.lower().replace("_", "-"))
    return seen


def _importable_in_lambda() -> set[str]:
    distributions = _requirement_closure(_names(bundling.framework_requirements()))
    modules = {
        module
        for module, dists in importlib.metadata.packages_distributions().items()
        if any(d.lower().replace("_", "-") in distributions for d in dists)
    }
    return modules | set(sys.stdlib_module_names) | _RUNTIME_PROVIDED | _BUNDLED_SOURCES


def _imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Absolute imports, skipping ``if TYPE_CHECKING:`` blocks (never executed)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (item for child in node.orelse for item in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST) -> Iterator[tuple[int, str]]:
    if isinstance(node, ast.Import):
        yield from ((node.lineno, alias.name) for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        yield node.lineno, node.module
    else:
        yield from _imports(node)


def test_bundled_code_imports_only_what_lambda_has() -> None:
    allowed = _importable_in_lambda()
    excluded = (
        *(p.removesuffix(".py").replace("/", ".") for p in EXCLUDE),
        *(
            f"stepsaga.{p.removesuffix('.py').replace('/', '.')}"
            for p in bundling.FRAMEWORK_EXCLUDED
        ),
    )
    problems = []
    for file, relative in LAYOUT.files():
        if file.suffix != ".py":
            continue
        for line, module in _imports(ast.parse(file.read_text(), str(file))):
            where = f"{relative}:{line} imports {module}"
            if module.split(".")[0] not in allowed:
                problems.append(f"{where} (not bundled, not in the Lambda runtime)")
            elif module in excluded or module.startswith(tuple(f"{e}." for e in excluded)):
                problems.append(f"{where} (left out of the asset)")
    assert problems == []


def test_the_built_folder_is_checked_for_every_referenced_module(tmp_path: Path) -> None:
    references = SagaDeployment.of(Project.load(ROOT), SAGA).references
    _bundle(BundlingMode.SOURCES, tmp_path / "ok")
    LAYOUT.check(references, in_dir=tmp_path / "ok")
    (tmp_path / "ok" / "tasks" / "reserve_stock.py").unlink()
    with pytest.raises(DeploymentError, match=r"^ReserveStock handler 'tasks\.reserve_stock:"):
        LAYOUT.check(references, in_dir=tmp_path / "ok")


def test_pyc_are_written_by_an_interpreter_of_the_runtimes_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    monkeypatch.delenv(bundling.ENV_LAMBDA_PYTHON, raising=False)
    assert not bundling.precompile(tmp_path, version="3.99")  # no such interpreter
    assert not list(tmp_path.rglob("*.pyc"))
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert bundling.precompile(tmp_path, version=here)
    (pyc,) = tmp_path.rglob("*.pyc")
    assert pyc.name == f"mod.{sys.implementation.cache_tag}.pyc"
    monkeypatch.setenv(bundling.ENV_LAMBDA_PYTHON, sys.executable)  # as if it were 3.99
    assert bundling.runtime_python("3.99") == sys.executable


def test_an_included_package_must_exist() -> None:
    with pytest.raises(DeploymentError, match=r"include 'nowhere': no package nowhere/"):
        AssetLayout.for_saga(ROOT, SagaDeployment.of(Project.load(ROOT), SAGA), include=["nowhere"])
