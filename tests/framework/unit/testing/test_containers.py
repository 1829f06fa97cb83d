"""Containers without Docker: the probe never hangs, readiness waits are bounded, and the
containers are configured as Step Functions Local and DynamoDB Local expect."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepsaga.testing import MockConfigBuilder, Return
from stepsaga.testing import _containers as containers_module
from stepsaga.testing._containers import (
    DockerStatus,
    DynamoDBLocalContainer,
    StepFunctionsLocalContainer,
    docker_available,
)

# --- the probe ----------------------------------------------------------------------------


def test_no_daemon_is_reported_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/docker.sock")
    started = time.monotonic()
    status = docker_available(timeout=2.0)
    assert time.monotonic() - started < 1.0
    assert not status
    assert status.available is False
    assert status.reason.startswith(f"Docker is not reachable at unix://{tmp_path}/docker.sock: ")
    assert "\n" not in status.reason


@pytest.fixture
def silent_daemon() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.05)
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


def test_a_daemon_that_never_answers_is_given_up_on_time(
    monkeypatch: pytest.MonkeyPatch, silent_daemon: int
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent_daemon}")
    started = time.monotonic()
    status = docker_available(timeout=0.5)
    assert time.monotonic() - started < 1.5
    assert not status
    assert f"127.0.0.1:{silent_daemon}" in status.reason
    assert "\n" not in status.reason


def test_a_probe_that_hangs_is_abandoned_after_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def hang(timeout: float) -> DockerStatus:
        release.wait(30)
        return DockerStatus(True, "too late")

    monkeypatch.setattr(containers_module, "_ping", hang)
    started = time.monotonic()
    status = docker_available(timeout=0.2)
    release.set()
    assert time.monotonic() - started < 1.0
    assert not status
    assert status.reason.endswith("within 0.2 s")


def test_a_status_is_truthy_when_available() -> None:
    assert DockerStatus(True, "ok")
    assert not DockerStatus(False, "no")


# --- readiness -----------------------------------------------------------------------------


class FakeTarget:
    """What a wait strategy sees of a container."""

    def __init__(self, statuses: list[str]) -> None:
        self._statuses = statuses
        self.status = "created"

    def get_container_host_ip(self) -> str:
        return "localhost"

    def get_exposed_port(self, port: int) -> int:
        return port + 10000

    def get_wrapped_container(self) -> Any:
        return None

    def get_logs(self) -> tuple[bytes, bytes]:
        return b"line 1\nStarting server\n", b"Address already in use\n"

    def reload(self) -> None:
        self.status = self._statuses.pop(0) if len(self._statuses) > 1 else self._statuses[0]


def flaky(failures: int) -> tuple[list[str], Any]:
    calls: list[str] = []

    def call(url: str) -> None:
        calls.append(url)
        if len(calls) <= failures:
            raise ConnectionResetError("socket hang up")

    return calls, call


def test_ready_once_the_api_answers() -> None:
    calls, call = flaky(2)
    containers_module._ApiAnswers(8083, call, timeout=5, poll=0.01).wait_until_ready(
        FakeTarget(["running"])
    )
    assert calls == ["http://localhost:18083"] * 3


def test_a_container_that_never_answers_times_out_with_its_logs() -> None:
    _, call = flaky(10**6)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.2 s: socket hang up") as e:
        containers_module._ApiAnswers(8000, call, timeout=0.2, poll=0.01).wait_until_ready(
            FakeTarget(["running"])
        )
    assert time.monotonic() - started < 1.0
    assert "Address already in use" in str(e.value)


def test_a_container_that_exits_stops_the_wait_at_once() -> None:
    _, call = flaky(10**6)
    with pytest.raises(RuntimeError, match="stopped while starting") as e:
        containers_module._ApiAnswers(8000, call, timeout=60, poll=0.01).wait_until_ready(
            FakeTarget(["running", "exited"])
        )
    assert "Starting server" in str(e.value)


# --- configuration -------------------------------------------------------------------------


class NoDocker:
    """Stands in for testcontainers' Docker client: configuration needs no daemon."""

    def __init__(self, **kwargs: Any) -> None:
        pass


@pytest.fixture
def no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("testcontainers.core.container.DockerClient", NoDocker)


MOCKS = MockConfigBuilder().test_case("m", "c", {"S": Return(1)})


def copied(container: Any) -> tuple[bytes, str]:
    ((data, destination, _mode),) = container._transferable_specs
    return data, destination


@pytest.mark.usefixtures("no_docker")
def test_stepfunctions_local_is_configured_by_its_environment() -> None:
    container = StepFunctionsLocalContainer(
        mock_config=MOCKS,
        lambda_endpoint="http://host.docker.internal:3001",
        dynamodb_endpoint="http://dynamodb:8000",
        wait_time_scale=0,
        region="eu-west-1",
    )
    assert container.image.endswith("amazon/aws-stepfunctions-local:2.0.0")
    assert "8083" in container.ports
    path = StepFunctionsLocalContainer.MOCK_CONFIG_PATH
    assert container.env == {
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCOUNT_ID": "123456789012",
        "SFN_MOCK_CONFIG": path,
        "LAMBDA_ENDPOINT": "http://host.docker.internal:3001",
        "DYNAMODB_ENDPOINT": "http://dynamodb:8000",
        "WAIT_TIME_SCALE": "0",
    }
    assert copied(container) == (MOCKS.to_json().encode(), path)


@pytest.mark.usefixtures("no_docker")
def test_the_mock_config_may_be_a_mapping_or_a_file(tmp_path: Path) -> None:
    as_mapping = StepFunctionsLocalContainer(mock_config=MOCKS.to_dict())
    assert json.loads(copied(as_mapping)[0]) == MOCKS.to_dict()
    as_file = StepFunctionsLocalContainer(mock_config=MOCKS.write(tmp_path / "m.json"))
    assert copied(as_file)[0] == MOCKS.to_json().encode()


@pytest.mark.usefixtures("no_docker")
def test_without_a_mock_config_nothing_is_copied() -> None:
    container = StepFunctionsLocalContainer()
    assert "SFN_MOCK_CONFIG" not in container.env
    assert container._transferable_specs == []


@pytest.mark.usefixtures("no_docker")
def test_dynamodb_local_runs_in_memory_with_one_database() -> None:
    container = DynamoDBLocalContainer()
    assert container.image.endswith("amazon/dynamodb-local:3.3.1")
    assert "8000" in container.ports
    assert container._command == "-jar DynamoDBLocal.jar -inMemory -sharedDb"
