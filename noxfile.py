"""The dependency ranges, tested at both ends (``make deps-bounds``; not part of ``make test``).

``nox -s lowest`` installs every runtime dependency and library extra at the lower bound of
its range in ``pyproject.toml`` (the oldest Python stepsaga supports), ``nox -s highest`` at
the newest versions the ranges allow (the newest Python); both then run the unit tier and a
synth of the reference stack checked by cdk-nag and cfn-lint. The requirements are read
from ``pyproject.toml``, so a dependency added there is covered without touching this file.
Extra arguments replace the tests run: ``nox -s lowest -- tests/framework/unit/ledger -x``.
Each session needs its Python on PATH (``python3.11``, ``python3.13``).
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path
from typing import Any

import nox
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

#: The extras a user installs (``dev`` is this repository's tools; ``infra`` an alias of cdk).
LIBRARY_EXTRAS = ("cdk", "testing", "mcp", "console")
#: What the unit tier needs besides stepsaga and its extras, at the dev extra's exact pins.
TEST_TOOLS = (
    "hypothesis",
    "pytest-httpserver",
    "pytest-timeout",
    "mypy-boto3-dynamodb",
    "mypy-boto3-stepfunctions",
    # tests/framework/unit/core/test_release_metadata.py reads this file and the classifiers.
    "nox",
    "trove-classifiers",
)
#: The unit tier, and one synth of the reference stack checked by cdk-nag and cfn-lint (the
#: cdk extra, which the unit tier does not import).
TESTS = (
    "tests/framework/unit",
    "tests/framework/infra/test_nag.py",
    "tests/framework/infra/test_cfn_lint.py",
    "-q",
    "-p",
    "no:cacheprovider",
)

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["lowest", "highest"]


def _requirements(*groups: str) -> list[Requirement]:
    project = PYPROJECT["project"]
    found = [Requirement(r) for r in project["dependencies"]]
    for group in groups:
        found += [Requirement(r) for r in project["optional-dependencies"][group]]
    return found


def library_requirements() -> list[Requirement]:
    """The runtime dependencies and every library extra's (the ranges a user resolves)."""
    return [r for r in _requirements(*LIBRARY_EXTRAS) if r.name != "stepsaga"]


def lower_bound(requirement: Requirement) -> str:
    """The version its ``>=`` clause names (a requirement without one is refused)."""
    for clause in requirement.specifier:
        if clause.operator == ">=":
            return clause.version
    raise ValueError(f"{requirement}: no lower bound (give it >=, the oldest version tested)")


def lowest_constraints() -> list[str]:
    """Every library requirement pinned at its lower bound (what those pull in themselves is
    resolved to the newest versions allowed, as a user's resolver would)."""
    return [f"{r.name}=={lower_bound(r)}" for r in library_requirements()]


def pinned_test_tools() -> list[str]:
    """The dev extra's pins of :data:`TEST_TOOLS`."""
    pins = {Requirement(r).name: r for r in PYPROJECT["project"]["optional-dependencies"]["dev"]}
    return [pins[name] for name in TEST_TOOLS]


def _install_and_test(session: nox.Session, *install_options: str) -> None:
    extras = ",".join(LIBRARY_EXTRAS)
    session.install(*install_options, "-e", f".[{extras}]", *pinned_test_tools())
    # What was resolved, in the log: the versions a failure names.
    session.run(nox.virtualenv.UV, "pip", "freeze", external=True)
    # The machine's temp folder, not nox's inside the repository: tests that look for a
    # project upward from a temp folder must not find this one.
    env = {"PYTHONPATH": str(ROOT), "TMPDIR": tempfile.gettempdir()}
    session.run("pytest", *(session.posargs or TESTS), env=env)


# --seed: pip in the venv (a unit test builds the wheel with it).
@nox.session(python="3.11", venv_params=["--seed"])
def lowest(session: nox.Session) -> None:
    """The oldest Python and every dependency at the lower bound of its range."""
    constraints = Path(session.create_tmp()) / "lowest-constraints.txt"
    constraints.write_text("\n".join(lowest_constraints()) + "\n", encoding="utf-8")
    _install_and_test(session, "--constraint", str(constraints))


@nox.session(python="3.13", venv_params=["--seed"])
def highest(session: nox.Session) -> None:
    """The newest Python and the newest versions the ranges allow."""
    _install_and_test(session, "--upgrade")
