"""``python -m build`` gives an sdist and a wheel that ``twine check --strict`` passes (what
``make dist`` runs); the wheel holds ``stepsaga/`` and its metadata only, and the sdist none
of a working tree's clutter (virtualenvs, node_modules, the built docs site, cdk.out).

Built from a copy of the tree with that clutter put in place, so the exclusions are tested
whatever the machine's tree holds. Slow: the build environment comes from the package index.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[3]
#: Left out of the copy: caches, and the clutter put back below as real folders.
NOT_COPIED = shutil.ignore_patterns(
    ".git",
    "__pycache__",
    "*_cache",
    ".hypothesis",
    ".nox",
    "*.egg-info",
    "build",
    "dist",
    ".stepsaga*",
    ".venv*",
    "node_modules",
    "site",
    "cdk.out",
)
#: A working tree's clutter that no distribution may carry.
CLUTTER = {
    ".venv": "lib/python3.11/site-packages/stray.py",
    "node_modules": "jsonata/index.js",
    "site": "index.html",
    "cdk.out": "manifest.json",
}


def _run(*command: str, cwd: Path) -> None:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("release")
    source = work / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_COPIED)
    for folder, file in CLUTTER.items():
        (source / folder / file).parent.mkdir(parents=True)
        (source / folder / file).write_text("not part of stepsaga\n", encoding="utf-8")
    out = work / "dist"
    _run(sys.executable, "-m", "build", "--outdir", str(out), str(source), cwd=work)
    _run(sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir()), cwd=work)
    return out


def test_the_wheel_holds_stepsaga_its_license_and_metadata_only(dist: Path) -> None:
    (wheel,) = dist.glob("stepsaga-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    info = metadata_name.split("/")[0]
    assert {name.split("/")[0] for name in names} == {"stepsaga", info}
    assert f"{info}/licenses/LICENSE" in names
    # The package data the framework reads at run time.
    assert {
        "stepsaga/py.typed",
        "stepsaga/cdk/lambda-requirements.lock",
        "stepsaga/scaffold/template/pyproject.toml",
    } <= set(names)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    requires = metadata.get_all("Requires-Dist") or []
    runtime = [r for r in requires if "extra ==" not in r]
    assert runtime
    assert all("<" in r and ">=" in r for r in runtime)


def test_the_sdist_holds_none_of_the_working_trees_clutter(dist: Path) -> None:
    (sdist,) = dist.glob("stepsaga-*.tar.gz")
    with tarfile.open(sdist) as archive:
        paths = [Path(*Path(name).parts[1:]) for name in archive.getnames()]
    assert not [p for p in paths if set(p.parts) & set(CLUTTER)]
    assert {Path("LICENSE"), Path("README.md"), Path("pyproject.toml")} <= set(paths)
    # The framework only: the reference application beside it is not distributed.
    assert {p.parts[0] for p in paths if p.parts} <= {
        "stepsaga",
        "stepsaga.egg-info",
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "PKG-INFO",
        "setup.cfg",
    }
