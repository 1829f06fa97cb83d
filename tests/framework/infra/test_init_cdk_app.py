"""The project ``stepsaga init`` writes has a CDK app that synthesizes through
``stepsaga.cdk``: its asset holds every module its functions load, cdk-nag finds nothing
unsuppressed. Run in a subprocess from the project's folder, so its ``workflows``/``tasks``
are the ones imported (this session already imported the reference app's)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stepsaga._project import deployment
from stepsaga.scaffold import create_project

pytestmark = pytest.mark.slow


def asset_modules_missing(outdir: Path, template: dict[str, Any]) -> list[str]:
    """Modules the template's functions load (handler, saga, dependencies, each handler
    reference in the description) that their asset folder lacks."""
    missing = []
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        asset = outdir / f"asset.{properties['Code']['S3Key'].removesuffix('.zip')}"
        assert asset.is_dir(), asset
        variables = properties["Environment"]["Variables"]
        refs = [properties["Handler"].rpartition(".")[0]]
        if deployment.ENV_FUNCTION in variables:
            refs.append(properties["Description"].rpartition(": ")[2].partition(":")[0])
            refs.append(variables[deployment.ENV_SAGA].partition(":")[0])
            refs.append(variables[deployment.ENV_DEPENDENCIES].partition(":")[0])
        for module in refs:
            path = module.replace(".", "/")
            if not ((asset / f"{path}.py").is_file() or (asset / path / "__init__.py").is_file()):
                missing.append(f"{properties['Description']}: {module}")
    return missing


def synth_project(root: Path, outdir: Path, python: str = sys.executable) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSAGA_")}
    env.update(
        CDK_OUTDIR=str(outdir),
        CDK_CONTEXT_JSON=json.dumps({"bundling": "sources"}),
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
    )
    done = subprocess.run(
        [python, "-m", "infra.app"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (template,) = outdir.glob("stepsaga-dev-subscription-upgrade.template.json")
    loaded: dict[str, Any] = json.loads(template.read_text())
    return loaded


def unsuppressed_nag_findings(outdir: Path) -> list[str]:
    (report,) = outdir.glob("AwsSolutions-*-NagReport.csv")
    with report.open() as f:
        rows = list(csv.DictReader(f))
    assert rows, "cdk-nag ran"
    return [
        f"{r['Rule ID']} {r['Resource ID']}" for r in rows if r["Compliance"] == "Non-Compliant"
    ]


def test_the_init_projects_cdk_app_synthesizes(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    written = create_project(root, now=datetime.now(UTC))
    assert root / "infra" / "app.py" in written
    assert json.loads((root / "cdk.json").read_text())["app"] == "python -m infra.app"
    outdir = tmp_path / "cdk.out"
    template = synth_project(root, outdir)
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    # 3 steps, 1 compensation, the reconciler, the overdue check, the ingress starter, the
    # redriver, the resolver, the audit copier
    assert len(functions) == 10
    assert asset_modules_missing(outdir, template) == []
    assert unsuppressed_nag_findings(outdir) == []
