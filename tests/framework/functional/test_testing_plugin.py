"""The pytest plugin as a user meets it: a fresh project run by a fresh pytest process.

Without a Docker daemon — none at all, or one that accepts connections and never answers —
every container test is skipped with one line, after one bounded probe per session; the
engine and moto fixtures work; and listing the plugin in ``pytest_plugins`` next to the
entry point registers it once."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = """
import pytest

@pytest.mark.docker
def test_marked():
    raise AssertionError("a docker test ran without Docker")

def test_container(stepfunctions_client):
    raise AssertionError("a container fixture worked without Docker")

def test_dynamodb(ledger_table_local):
    raise AssertionError("a container fixture worked without Docker")

def test_status(docker_status):
    assert not docker_status
    assert docker_status.reason

def test_engine(local_engine):
    assert local_engine.time_scale == 0
    assert local_engine.mock_config is None

def test_backend(saga_backend, request):
    assert request.node.callspec.id in ("engine", "moto")  # the other two are skipped

def test_ledger(ledger_table):
    assert ledger_table.client.scan(TableName=ledger_table.name)["Items"] == []
"""


def run_pytest(project: Path, docker_host: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *options],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**_environ(), "DOCKER_HOST": docker_host},
        check=False,
    )


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}


def skip_reasons(output: str) -> list[str]:
    return re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", output, flags=re.MULTILINE)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_plugin_user.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def test_no_daemon_skips_every_container_test_with_one_line(project: Path) -> None:
    # Listed here as well as installed by the entry point: registered once all the same.
    (project / "conftest.py").write_text(
        'pytest_plugins = ["stepsaga.testing.pytest_plugin"]\n', encoding="utf-8"
    )
    result = run_pytest(project, f"unix://{project}/no-docker.sock")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed, 5 skipped" in result.stdout, result.stdout
    reasons = skip_reasons(result.stdout)
    assert reasons, result.stdout
    docker = [r for r in reasons if not r.startswith("needs LocalStack")]
    assert len(docker) == len(reasons) - 1, result.stdout  # one LocalStack skip line
    for reason in docker:
        assert reason.startswith(f"needs Docker: Docker is not reachable at unix://{project}/")


@pytest.fixture
def silent_daemon() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.05)
    stop = threading.Event()
    accepted: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_a_daemon_that_never_answers_costs_one_probe_timeout(
    project: Path, silent_daemon: int
) -> None:
    result = run_pytest(
        project, f"tcp://127.0.0.1:{silent_daemon}", "--durations=0", "--durations-min=0"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed, 5 skipped" in result.stdout, result.stdout
    for reason in skip_reasons(result.stdout):
        if reason.startswith("needs LocalStack"):
            continue
        assert reason.endswith(f"at tcp://127.0.0.1:{silent_daemon} within 2 s"), reason
    # One 2 s probe for the session, in the first container test's setup; a probe per
    # container test would make each of the four setups take 2 s. (Setups, not the whole
    # run: the engine and moto runs beside them take what the machine's load makes them.)
    setups = re.findall(
        r"^([\d.]+)s setup\s+\S+::test_(?:marked|container|dynamodb)", result.stdout, re.M
    )
    assert len(setups) == 3, result.stdout
    assert sum(float(seconds) for seconds in setups) < 4, result.stdout


def test_the_entry_point_is_installed() -> None:
    from importlib.metadata import entry_points

    (plugin,) = [
        ep for ep in entry_points(group="pytest11") if ep.value == "stepsaga.testing.pytest_plugin"
    ]
    assert plugin.name == plugin.value  # so pytest_plugins never registers it a second time
