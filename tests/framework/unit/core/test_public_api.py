"""The public API: which names each door exports, once, and nothing private outside stepsaga.

A door is a package or module without a leading underscore (docs/architecture.md); every
module under a door whose name starts with ``_`` is private. Each door states its names
three times — the ``TYPE_CHECKING`` imports (what type checkers and editors read), ``_WHERE``
(where the lazy ``__getattr__`` loads each from) and the literal ``__all__`` (what linters
read) — and this test keeps the three equal.
"""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

import stepsaga
from stepsaga import errors
from stepsaga.scaffold import create_project

REPO = Path(__file__).resolve().parents[4]
PACKAGE = Path(stepsaga.__file__).parent

#: Every door, and how many names it may export (docs/architecture.md gives the reasons).
BUDGET = {
    "stepsaga": 37,
    "stepsaga.errors": 41,
    "stepsaga.workflow": 8,
    "stepsaga.ledger": 15,
    "stepsaga.engine": 6,
    "stepsaga.backends": 9,
    "stepsaga.testing": 16,
    "stepsaga.cdk": 10,
    "stepsaga.agents": 7,
    "stepsaga.console": 3,
    "stepsaga.cli": 18,
    "stepsaga.lambdas": 6,
    "stepsaga.scaffold": 1,
}
#: All doors together (the author's doors — stepsaga, workflow, ledger, engine, backends,
#: testing, cdk, agents — are 106 of them; errors 41; the tools' doors 28).
TOTAL_BUDGET = 177

#: The one top door's names (README and docs import these; errors come from stepsaga.errors).
TOP = {
    *[
        "Saga",
        "Step",
        "Parallel",
        "ForEach",
        "Compensate",
        "Escalate",
        "EffectClass",
        "RetryPolicy",
    ],
    *[
        "ApprovedCase",
        "CaseApproval",
        "TenantId",
        "CaseId",
        "Reference",
        "Text",
        "StrictModel",
        "Money",
        "Amount",
        "Currency",
    ],
    *["StepHandler", "Call", "CallContext", "Outcome", "Found", "Absent", "Lookup"],
    *["Dependencies", "NoDependencies", "LocalContext", "AwsContext", "Project", "StateHome"],
    *["Clock", "SystemClock", "ManualClock", "load_case", "parse_case", "__version__"],
}

#: Exception classes defined outside stepsaga.errors on purpose: control-flow signals and
#: parse errors that never leave their module's caller (each is turned into one of
#: stepsaga.errors' classes, or handled, before a user sees it).
INTERNAL_SIGNALS = {
    "stepsaga/engine/_errors.py": {"StatesError", "QueryEvaluationError"},
    "stepsaga/engine/_run.py": {"_StoppedError", "_CancelledError", "_BranchError"},
    "stepsaga/engine/_store.py": {"LostOwnershipError"},
    "stepsaga/engine/_choice.py": {"ChoiceRuleError"},
    "stepsaga/engine/_paths.py": {"PathSyntaxError", "PathNotFoundError"},
    "stepsaga/engine/_jsonata_eval.py": {"JsonataSyntaxError", "_FunctionError"},
    "stepsaga/engine/_intrinsics.py": {"_ArgError"},
    "stepsaga/engine/_variables.py": {"AssignError"},
    "stepsaga/workflow/_jsonata.py": {"TranslationError"},
    "stepsaga/ledger/_dynamodb.py": {"_ConflictError"},
    "stepsaga/agents/_mcp.py": {"_Refused"},
    "stepsaga/console/_security.py": {"ForbiddenError"},
    "stepsaga/_model/inputs.py": {"_RefusedError", "_TooDeepError"},
    "stepsaga/_aws/auto_redrive.py": {"_MalformedError"},
}


def _door_file(door: str) -> Path:
    path = PACKAGE.parent / door.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _type_checking_names(door: str) -> set[str] | None:
    tree = ast.parse(_door_file(door).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            return {
                alias.asname or alias.name
                for statement in node.body
                if isinstance(statement, ast.ImportFrom)
                for alias in statement.names
            }
    return None


def _exported() -> dict[str, list[str]]:
    return {door: list(importlib.import_module(door).__all__) for door in BUDGET}


@pytest.mark.parametrize("door", sorted(BUDGET))
def test_every_name_of_a_door_resolves_and_is_stated_once_in_each_place(door: str) -> None:
    module = importlib.import_module(door)
    names = module.__all__
    assert names == sorted(set(names), key=names.index), "a name listed twice"
    for name in names:
        assert getattr(module, name) is not None, name
    assert len(names) <= BUDGET[door], f"{door}: {len(names)} names, budget {BUDGET[door]}"
    declared = _type_checking_names(door)
    if declared is None:  # a module that defines its names itself
        assert door in {"stepsaga.errors", "stepsaga.scaffold"}, door
        return
    assert set(names) - {"__version__"} == declared
    assert set(names) - {"__version__"} == set(module._WHERE)
    assert sorted(dir(module)) == sorted(names)


def test_no_name_is_exported_by_two_doors_and_the_total_keeps_its_budget() -> None:
    exported = _exported()
    seen: dict[str, str] = {}
    for door, names in exported.items():
        for name in names:
            assert name not in seen, f"{name} is exported by {seen[name]} and {door}"
            seen[name] = door
    assert sum(len(names) for names in exported.values()) <= TOTAL_BUDGET
    assert set(exported["stepsaga"]) == TOP


def test_the_errors_door_exports_every_exception_class_it_defines() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }
    assert set(errors.__all__) == defined | {"set_message_redactor"}


def test_every_exception_class_a_user_can_meet_is_defined_in_stepsaga_errors() -> None:
    found: dict[str, set[str]] = {}
    exception_like = ("Error", "Exception", "Exists", "Exist", "Redrivable", "Failure")
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if relative == "stepsaga/errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).endswith(exception_like) for base in node.bases
            ):
                found.setdefault(relative, set()).add(node.name)
    assert found == INTERNAL_SIGNALS


def _private_modules() -> set[str]:
    """Every ``_``-prefixed module or package directly under stepsaga/ or under a door."""

    def private_children(folder: Path, prefix: str) -> set[str]:
        return {
            f"{prefix}.{child.name.removesuffix('.py')}"
            for child in folder.iterdir()
            if child.name.startswith("_")
            and not child.name.startswith("__")
            and (child.suffix == ".py" or (child / "__init__.py").exists())
        }

    found = private_children(PACKAGE, "stepsaga")
    for door in PACKAGE.iterdir():
        if not door.name.startswith("_") and (door / "__init__.py").exists():
            found |= private_children(door, f"stepsaga.{door.name}")
    return found


def test_the_lint_rule_bans_every_private_module() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    banned = config["tool"]["ruff"]["lint"]["flake8-tidy-imports"]["banned-api"]
    assert set(banned) == _private_modules()


def _lint(ruff: str, *paths: str) -> subprocess.CompletedProcess[str]:
    config = str(REPO / "pyproject.toml")
    return subprocess.run(
        [ruff, "check", "--no-cache", "--config", config, "--select", "TID251", *paths],
        capture_output=True,
        text=True,
        check=False,
    )


def _ruff() -> str | None:
    beside = Path(sys.executable).parent / "ruff"  # the venv running the tests
    return str(beside) if beside.exists() else shutil.which("ruff")


def test_a_new_project_imports_only_public_doors(tmp_path: Path) -> None:
    """``stepsaga init``'s project (its tests too) passes the same rule as the reference app."""
    ruff = _ruff()
    if ruff is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ruff is not installed")
        pytest.skip("ruff is not installed")
    project = tmp_path / "upgrade-app"
    written = create_project(project, now=datetime(2026, 12, 1, tzinfo=UTC))
    sources = [str(path) for path in written if path.suffix == ".py"]
    assert sources
    done = _lint(ruff, *sources)
    assert done.returncode == 0, done.stdout + done.stderr
    # The rule does catch a private import there.
    (project / "probe.py").write_text("from stepsaga._util.clock import SystemClock\n")
    probe = _lint(ruff, str(project / "probe.py"))
    assert probe.returncode == 1
    assert "TID251" in probe.stdout
