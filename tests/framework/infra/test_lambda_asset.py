"""The artifact we ship, tested as shipped: the Lambda asset is built the way the stack builds
it (``LocalPythonBundling`` in pip mode: the locked closure, the project's packages, stepsaga
minus what never runs in Lambda), with wheels for this interpreter's platform instead of
Lambda's, then every function of the synthesized template has its ``Handler`` imported in a
clean interpreter whose ``sys.path`` is the standard library, the asset, and what Lambda's
Python runtime itself ships (boto3 and its dependencies: ``EXCLUDED_DEPENDENCIES``), never
the development venv or the worktree. One real event, the deployed definition's first task
payload, runs through the saga's first function there.

Needs PyPI (or pip's cache) for the wheels; skipped in one line without it, a failure under
``CI=true``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import DockerImage

from infra.app import EXCLUDE, ROOT
from stepsaga.cdk import BundlingMode
from stepsaga.cdk import _bundling as bundling
from stepsaga.cdk._bundling import AssetLayout
from stepsaga.engine._payload import Env, compile_template
from stepsaga.ledger import Status, open_ledger
from tests.framework.functional.cli_support import case_data
from tests.framework.infra.conftest import Synthesized

pytestmark = pytest.mark.slow

#: What Lambda's Python runtime provides itself (the asset leaves them out on purpose).
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "urllib3")

#: Run in the clean interpreter: puts the asset and the runtime's packages on ``sys.path``,
#: imports each ``Handler``, optionally invokes one, and reports any module that was loaded
#: from anywhere else than the standard library, the asset or the runtime's packages.
CHILD = r"""
import importlib, json, os, sys, sysconfig
asset, runtime, request = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [asset, runtime]
report = {"path": sys.path, "handlers": {}}
for handler in request["handlers"]:
    module, _, attribute = handler.rpartition(".")
    report["handlers"][handler] = callable(getattr(importlib.import_module(module), attribute))
if request.get("invoke"):
    os.environ.update(request["environment"])
    module, _, attribute = request["invoke"].rpartition(".")
    function = getattr(importlib.import_module(module), attribute)
    class Context:
        function_name, aws_request_id = "asset-test", "req-1"
        def get_remaining_time_in_millis(self):
            return 30000
    report["result"] = function(request["event"], Context())
allowed = (asset, runtime, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])
report["outside"] = sorted(
    name for name, module in list(sys.modules.items())
    if getattr(module, "__file__", None)
    and not os.path.realpath(module.__file__).startswith(tuple(map(os.path.realpath, allowed)))
)
print("REPORT " + json.dumps(report, default=str))
"""


@dataclass(frozen=True)
class Built:
    asset: Path
    runtime: Path


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _pip_install(target: Path, requirements: list[str]) -> None:
    command = bundling.pip_command("install", target, requirements, bundling.WheelTarget.host())
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        _skip_or_fail(f"pip could not install the runtime's packages: {done.stderr[-300:]}")


@pytest.fixture(scope="module")
def built(synthesized: Synthesized, tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("lambda")
    layout = AssetLayout.for_saga(ROOT, synthesized.saga, exclude=EXCLUDE)
    bundler = bundling.LocalPythonBundling(
        BundlingMode.PIP, layout, synthesized.saga.references, wheels=bundling.WheelTarget.host()
    )
    try:
        bundler.try_bundle(str(root / "asset"), image=DockerImage.from_registry("unused"))
    except RuntimeError as exc:  # pip failed: no index reachable, no cache
        _skip_or_fail(f"the asset's wheels could not be installed: {str(exc)[-300:]}")
    # The versions this venv tests with stand for the runtime's own.
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in RUNTIME_PACKAGES]
    _pip_install(root / "runtime", pins)
    return Built(root / "asset", root / "runtime")


def _clean_run(built: Built, request: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """Run :data:`CHILD` in the base interpreter (not the venv's), isolated (``-I``: no
    ``PYTHON*`` variables, no user site, no script folder) and without ``site`` (``-S``: no
    site-packages at all)."""
    python = getattr(sys, "_base_executable", sys.executable)
    done = subprocess.run(
        [
            python,
            "-I",
            "-S",
            "-c",
            CHILD,
            str(built.asset),
            str(built.runtime),
            json.dumps(request),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "TZ": "UTC"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("REPORT ")]
    report: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
    return report


def test_every_functions_handler_imports_from_the_asset_alone(
    synthesized: Synthesized, built: Built, tmp_path: Path
) -> None:
    handlers = sorted(
        {
            f["Properties"]["Handler"]
            for f in synthesized.resources("AWS::Lambda::Function").values()
        }
    )
    assert len(handlers) >= 4  # the saga's entry, overdue check, ingress, redriver

    report = _clean_run(built, {"handlers": handlers}, tmp_path)

    assert report["handlers"] == dict.fromkeys(handlers, True)
    assert report["outside"] == []
    assert not any(str(ROOT) in entry or ".venv" in entry for entry in report["path"])
    # What the stack deploys is what was imported: stepsaga came from the asset.
    assert (built.asset / "stepsaga" / "lambda_handler.py").is_file()
    assert not (built.asset / "stepsaga" / "cli").exists()


def _first_task_event(synthesized: Synthesized, case: dict[str, Any]) -> tuple[str, Any]:
    """The function the deployed definition's first state invokes (its logical name), and
    the payload Step Functions builds for it (the template's own ``Parameters``, evaluated)."""
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    definition = json.loads(machine["Properties"]["DefinitionString"])
    first = definition["States"][definition["StartAt"]]
    placeholder = first["Parameters"]["FunctionName"].strip("${}")
    assert placeholder in machine["Properties"]["DefinitionSubstitutions"]
    context = {
        "Execution": {"Input": case, "Name": "acme-CASE-1001-r1"},
        "State": {"Name": definition["StartAt"], "RetryCount": 0},
    }
    payload = compile_template(first["Parameters"]["Payload"], "Payload")
    event = payload.evaluate(Env(input=case, context=context, rng=None))
    return placeholder.removesuffix("FunctionArn"), event


def test_one_event_runs_through_the_first_function_from_the_asset(
    synthesized: Synthesized, built: Built, tmp_path: Path
) -> None:
    """The saga's first step, with the environment the template gives its function (the
    ledger in SQLite and the simulated services instead of DynamoDB and HTTP): the handler
    claims, acts and completes from the asset's code."""
    case = case_data()
    name, event = _first_task_event(synthesized, case)
    _, resource = synthesized.saga_functions()[name]
    environment = {
        k: v
        for k, v in resource["Properties"]["Environment"]["Variables"].items()
        if isinstance(v, str) and not k.startswith("STEPSAGA_LEDGER_TABLE")
    }
    environment |= {
        "STEPSAGA_LEDGER_URL": f"sqlite:///{tmp_path / 'ledger.db'}",
        "STEPSAGA_SERVICES": "simulated",
        "STEPSAGA_HOME": str(tmp_path / "home"),
    }
    request = {
        "handlers": [resource["Properties"]["Handler"]],
        "invoke": resource["Properties"]["Handler"],
        "environment": environment,
        "event": event,
    }

    report = _clean_run(built, request, tmp_path)

    result = report["result"]
    assert (result["status"], result["action_key"]) == (
        "COMPLETED",
        "acme:CASE-1001:r1:reserve_stock",
    )
    assert report["outside"] == []
    with open_ledger(environment["STEPSAGA_LEDGER_URL"]) as ledger:
        record = ledger.get(result["action_key"])
    assert record is not None
    assert (record.status, record.attempts) == (Status.COMPLETED, 1)
