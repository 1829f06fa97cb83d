"""Release hygiene, read from ``pyproject.toml``: a library's requirements are ranges (a lower
bound ``nox -s lowest`` tests, an upper bound at the next major of the version tested), the
noxfile covers every one of them, the dev extra pins what ``make test`` runs, and the
metadata PyPI shows (license, classifiers) is valid."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import nox
import pytest
import trove_classifiers
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import noxfile

ROOT = Path(__file__).resolve().parents[4]
PROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "project"
]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]


def _is_alias(extra: str) -> bool:
    """An extra that only names other extras of stepsaga (``infra = ["stepsaga[cdk]"]``)."""
    return all(Requirement(r).name == "stepsaga" for r in EXTRAS[extra])


#: The extras a user installs: all but the repository's own tools and aliases.
LIBRARY_EXTRAS = sorted(e for e in EXTRAS if e != "dev" and not _is_alias(e))
LIBRARY = [Requirement(r) for r in PROJECT["dependencies"]] + [
    Requirement(r) for extra in LIBRARY_EXTRAS for r in EXTRAS[extra]
]
DEV_PINS = {
    canonicalize_name(r.name): r for r in map(Requirement, EXTRAS["dev"]) if r.name != "stepsaga"
}


def _bound(requirement: Requirement, operator: str) -> Version:
    (version,) = [Version(c.version) for c in requirement.specifier if c.operator == operator]
    return version


@pytest.mark.parametrize("requirement", LIBRARY, ids=str)
def test_every_library_requirement_is_a_range_up_to_the_next_major(
    requirement: Requirement,
) -> None:
    lower, upper = _bound(requirement, ">="), _bound(requirement, "<")
    assert {c.operator for c in requirement.specifier} == {">=", "<"}
    # The version make test runs (the dev extra's exact pin) is inside the range, and the
    # range ends at its next major.
    (pin,) = [Version(c.version) for c in DEV_PINS[canonicalize_name(requirement.name)].specifier]
    assert lower <= pin < upper
    assert upper == Version(str(pin.major + 1))


def test_the_dev_extra_pins_every_tool_exactly() -> None:
    loose = [str(r) for r in DEV_PINS.values() if [c.operator for c in r.specifier] != ["=="]]
    assert loose == []


def test_the_noxfile_tests_every_library_requirement_at_its_lower_bound() -> None:
    assert sorted(noxfile.LIBRARY_EXTRAS) == LIBRARY_EXTRAS
    assert sorted(noxfile.lowest_constraints()) == sorted(
        f"{r.name}=={_bound(r, '>=')}" for r in LIBRARY
    )
    assert nox.options.sessions == ["lowest", "highest"]
    # The unit tier's own tools come at the dev extra's exact pins, in both sessions.
    assert [Requirement(t).name for t in noxfile.pinned_test_tools()] == list(noxfile.TEST_TOOLS)
    assert all("==" in t for t in noxfile.pinned_test_tools())


def test_a_requirement_without_a_lower_bound_is_refused_by_the_noxfile() -> None:
    with pytest.raises(ValueError, match="no lower bound"):
        noxfile.lower_bound(Requirement("boto3<2"))
    assert noxfile.lower_bound(Requirement("boto3>=1.40,<2")) == "1.40"


def test_license_metadata_is_the_apache_license_file() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "Copyright 2026 The stepsaga authors" in text
    # PEP 639: the expression replaces license classifiers (a build refuses both).
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]


def test_classifiers_are_ones_pypi_accepts() -> None:
    assert [c for c in PROJECT["classifiers"] if c not in trove_classifiers.classifiers] == []
    supported = {
        c.rsplit(" ", 1)[1]
        for c in PROJECT["classifiers"]
        if c.startswith("Programming Language :: Python :: 3.")
    }
    assert min(supported, key=Version) == PROJECT["requires-python"].removeprefix(">=")
