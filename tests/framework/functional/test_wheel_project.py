"""The wheel alone is enough: built from this tree, installed with its testing and cdk extras
into a fresh venv outside the repository, ``stepsaga init proj`` gives a project whose tests
pass, whose example case completes on the embedded backend, and whose CDK app synthesizes
(pip bundling, the real path) an asset holding every module its functions load, with
cdk-nag finding nothing unsuppressed.

Slow (it installs aws-cdk-lib and friends from the package index) but part of ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.framework.infra.test_init_cdk_app import asset_modules_missing, unsuppressed_nag_findings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[3]


def run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("STEPSAGA_", "PYTHON", "VIRTUAL"))
    }
    environment.update(
        STEPSAGA_HOME=str(cwd / ".stepsaga"),
        STEPSAGA_TIME_SCALE="0",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
        **env,
    )
    done = subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=1200, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def build_wheel(tmp_path: Path) -> Path:
    """From a copy of the sources (a build leaves ``build/`` behind)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "stepsaga", source / "stepsaga", ignore=shutil.ignore_patterns("__pycache__")
    )
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(source)],
        tmp_path,
    )
    (wheel,) = tmp_path.glob("stepsaga-*.whl")
    return wheel


def test_a_project_from_the_installed_wheel_runs_tests_cases_and_synth(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    python = str(bin_dir / "python")
    run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            f"stepsaga[testing,cdk] @ {wheel.as_uri()}",
        ],
        tmp_path,
    )
    work = tmp_path / "work"  # outside the repository, nothing of it on sys.path
    work.mkdir()
    run([str(bin_dir / "stepsaga"), "init", "proj"], work)
    proj = work / "proj"

    tests = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], proj)
    assert "3 passed" in tests.stdout

    stepsaga = str(bin_dir / "stepsaga")
    view: dict[str, Any] = json.loads(
        run([stepsaga, "start", "examples/case.json", "--json"], proj).stdout
    )
    assert (view["status"], view["outcome"]) == ("SUCCEEDED", "completed")
    status = json.loads(run([stepsaga, "status", "UP-1", "--json"], proj).stdout)
    assert status["steps"]
    history = json.loads(run([stepsaga, "history", "UP-1", "--json"], proj).stdout)
    assert history["events"][-1]["type"] == "ExecutionSucceeded"

    outdir = tmp_path / "cdk.out"
    run(
        [python, "-m", "infra.app"],
        proj,
        CDK_OUTDIR=str(outdir),
        CDK_CONTEXT_JSON=json.dumps({"bundling": "pip"}),
    )
    (template_file,) = outdir.glob("stepsaga-dev-subscription-upgrade.template.json")
    template = json.loads(template_file.read_text())
    assert asset_modules_missing(outdir, template) == []
    assets = [p for p in outdir.glob("asset.*") if p.is_dir()]
    (asset,) = assets
    assert (asset / "pydantic_core").is_dir()  # the pip-installed closure
    assert (asset / "tasks" / "charge_card.py").is_file()  # the project's own code
    assert not (asset / "stepsaga" / "cli").exists()
    assert unsuppressed_nag_findings(outdir) == []
