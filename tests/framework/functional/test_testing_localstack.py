"""The LocalStack backend: starts within its bound or says why in one line, never hangs,
stops what it started; the session fixture skips locally and fails under CI=true; a new
mock config takes effect at once on the running server; moto serves mock configs too."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stepsaga.errors import LocalStackError
from stepsaga.testing import MockConfigBuilder, Return, StepFunctionsBackend, Throw
from stepsaga.testing._localstack import LocalStack
from stepsaga.testing._moto import moto_stepfunctions

ONE_TASK = {
    "StartAt": "Work",
    "States": {
        "Work": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "Work", "Payload.$": "$"},
            "End": True,
        }
    },
}


def fake_python(tmp_path: Path, body: str) -> Path:
    """An executable standing in for LocalStack's interpreter."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_an_interpreter_without_localstack_fails_at_once_with_its_log(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(LocalStackError) as failure:
        LocalStack(sys.executable, startup_timeout=60).start()  # has no localstack module
    assert time.monotonic() - started < 30
    first, _, log = str(failure.value).partition("\n")
    assert first == "LocalStack exited with code 1 while starting"
    assert "No module named 'localstack'" in log


def test_one_that_never_answers_is_given_up_on_and_stopped(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    server = LocalStack(
        fake_python(tmp_path, f"echo $$ > {marker}; exec sleep 600"),
        startup_timeout=1.5,
        stop_timeout=1,
    )
    started = time.monotonic()
    with pytest.raises(LocalStackError, match=r"did not become healthy on .* within 1.5 s"):
        server.start()
    assert time.monotonic() - started < 10
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):  # the whole process group was ended
        os.kill(pid, 0)


PROJECT_TEST = """
def test_backend(localstack_backend):
    raise AssertionError("LocalStack ran without an interpreter that has it")
"""


def run_project(tmp_path: Path, *, ci: bool, ini: str = "") -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(PROJECT_TEST, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(f"[pytest]\n{ini}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("CI", None)
    env["STEPSAGA_LOCALSTACK_PYTHON"] = str(fake_python(tmp_path, "exit 3"))
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_locally_a_localstack_that_will_not_start_skips_in_one_line(tmp_path: Path) -> None:
    result = run_project(tmp_path, ci=False, ini="stepsaga_localstack = required-on-ci")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "needs LocalStack: LocalStack exited with code 3 while starting\n" in result.stdout


def test_under_ci_it_fails_the_run(tmp_path: Path) -> None:
    result = run_project(tmp_path, ci=True, ini="stepsaga_localstack = required-on-ci")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CI=true needs LocalStack: LocalStack exited with code 3" in result.stdout


def test_a_project_that_does_not_require_it_skips_under_ci_too(tmp_path: Path) -> None:
    result = run_project(tmp_path, ci=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout


def test_a_misspelt_mode_is_a_usage_error_naming_the_option(tmp_path: Path) -> None:
    result = run_project(tmp_path, ci=False, ini="stepsaga_localstack = required")
    assert result.returncode == 4, result.stdout + result.stderr
    assert (
        "ini option stepsaga_localstack: 'required' is not one of optional, required-on-ci"
        in result.stderr
    )


def _cases(outcome: Return | Throw) -> MockConfigBuilder:
    return MockConfigBuilder().test_case("one-task", "Case", {"Work": (outcome,)})


@pytest.mark.localstack
def test_a_new_mock_config_applies_to_the_next_execution(localstack: LocalStack) -> None:
    backend = StepFunctionsBackend(localstack.get_client(), poll_interval=0.05)
    arn = backend.deploy("one-task", ONE_TASK)
    localstack.use_mock_config(_cases(Return.payload({"n": 1})))
    first = backend.run(arn, {}, test_case="Case")
    localstack.use_mock_config(_cases(Throw("Rejected", "no")))  # within the same second
    second = backend.run(arn, {}, test_case="Case")
    assert (first.status, first.output["Payload"]) == ("SUCCEEDED", {"n": 1})
    assert (second.status, second.error) == ("FAILED", "Rejected")


def test_moto_serves_mock_configs_and_refuses_an_unknown_test_case() -> None:
    with moto_stepfunctions(_cases(Return.payload({"n": 1}))) as client:
        backend = StepFunctionsBackend(client, poll_interval=0.02)
        arn = backend.deploy("one-task", ONE_TASK)
        assert backend.run(arn, {}, test_case="Case").output["Payload"] == {"n": 1}
        with pytest.raises(client.exceptions.InvalidName, match="Nope"):
            backend.run(arn, {}, test_case="Nope")
