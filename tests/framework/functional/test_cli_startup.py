"""What ``stepsaga status`` loads (#26: start-up within ``aws --version``'s): the real entry
point in a fresh interpreter, then the modules it left unloaded. A module named here that
status starts importing again is start-up time every ``status`` pays; load it where the
verb that needs it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepsaga._project.home import StateHome
from tests.framework.functional.cli_support import ROOT, cli, write_case

#: Runs ``stepsaga.cli.main`` as the console script does, then prints what is loaded and
#: whether the collector ``main`` paused for start-up runs again.
_PROBE = """
import gc, json, sys
sys.argv = ["stepsaga", *sys.argv[1:]]
from stepsaga.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print("\\n" + json.dumps({"code": code, "gc": gc.isenabled(), "modules": sorted(sys.modules)}))
"""

#: Libraries ``status`` on the embedded backend never calls.
NOT_LIBRARIES = (
    "boto3",
    "botocore",
    "httpx",
    "jinja2",
    "starlette",
    "uvicorn",
    "hypothesis",
    "jsonata",
    "disarm",  # the look-alike comparison of sign-offs (recon resolve)
    "concurrent.futures",  # parallel branches (start, redrive)
)

#: stepsaga modules only other verbs use.
NOT_OURS = (
    "stepsaga.backends._aws",
    "stepsaga.backends._cancel",  # cancel
    "stepsaga.backends._listing",  # list
    "stepsaga.backends._progress",  # live progress of start/redrive
    "stepsaga.backends._bulk_redrive",
    "stepsaga.engine._runner",  # the interpreter
    "stepsaga.engine._definition",  # the ASL parser
    "stepsaga.engine._mockconfig",  # start --mock-config
    "stepsaga._handlers",
    "stepsaga.console",
    "stepsaga.cdk",
    "stepsaga.workflow._compiler",
)


def _probe(home: StateHome, *args: str) -> tuple[dict[str, object], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STEPSAGA_HOME": str(home.root)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    out, _, last = done.stdout.rpartition("\n{")
    return json.loads("{" + last), out


@pytest.fixture(scope="module")
def status_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], str]:
    tmp = tmp_path_factory.mktemp("startup")
    home = StateHome(tmp / "home")
    started = cli(home, "start", str(write_case(tmp, "CASE-1001")), "--json")
    assert started.code == 0, started.err
    return _probe(home, "status", "CASE-1001")


def test_status_answers_through_the_real_entry_point(
    status_run: tuple[dict[str, object], str],
) -> None:
    result, out = status_run
    assert result["code"] == 0
    assert "outcome completed" in out
    assert "RefundPayment" in out
    assert result["gc"] is True  # paused for start-up only


@pytest.mark.parametrize("module", NOT_LIBRARIES + NOT_OURS)
def test_status_does_not_load(status_run: tuple[dict[str, object], str], module: str) -> None:
    loaded = status_run[0]["modules"]
    assert isinstance(loaded, list)
    assert not [m for m in loaded if m == module or m.startswith(module + ".")]


def test_a_usage_error_resumes_the_collector(tmp_path: Path) -> None:
    result, _ = _probe(StateHome(tmp_path / "home"), "status")  # missing CASE_ID
    assert result["code"] == 2
    assert result["gc"] is True
