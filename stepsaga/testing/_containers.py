"""Step Functions Local and DynamoDB Local in throwaway containers, and a fast Docker probe.

Why the probe: where no Docker daemon runs (this project's CI) every container test must
skip with one line, quickly, and never hang. :func:`docker_available` answers within its
timeout whatever the daemon does — no socket, a socket that never answers, a slow lookup.

Why readiness polls the API: both emulators open their port (and Step Functions Local
prints its banner) seconds before they answer requests, so an open port is not readiness;
the first answered API call is. The poll is bounded, and stops early if the container died.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import WaitStrategy
from testcontainers.core.waiting_utils import WaitStrategyTarget

from stepsaga.testing._backends import DEFAULT_ACCOUNT
from stepsaga.testing._mockconfig import MockConfigBuilder

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_stepfunctions import SFNClient

STEPFUNCTIONS_LOCAL_IMAGE = "amazon/aws-stepfunctions-local:2.0.0"
DYNAMODB_LOCAL_IMAGE = "amazon/dynamodb-local:3.3.1"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class DockerStatus:
    """Whether a Docker daemon answered, and if not, why (one line, for a skip reason)."""

    available: bool
    reason: str

    def __bool__(self) -> bool:
        return self.available


def docker_available(timeout: float = 2.0) -> DockerStatus:
    """Ping the Docker daemon testcontainers would use; never takes much longer than
    ``timeout`` seconds (the ping runs in a daemon thread that is abandoned if it hangs)."""
    result: list[DockerStatus] = []
    probe = threading.Thread(
        target=lambda: result.append(_ping(timeout)), name="stepsaga-docker-probe", daemon=True
    )
    probe.start()
    probe.join(timeout)
    if result:
        return result[0]
    return DockerStatus(
        False, f"no Docker daemon answered at {_host() or 'the default host'} within {timeout:g} s"
    )


def _host() -> str | None:
    """``DOCKER_HOST`` as testcontainers resolves it (its properties file, the environment,
    the current docker context); ``None`` means docker's platform default."""
    try:
        from testcontainers.core.docker_client import get_docker_host

        return get_docker_host()
    except Exception:  # a broken docker context must not break the probe
        return None


def _ping(timeout: float) -> DockerStatus:
    host = _host()
    where = host or "the default host"
    try:
        import docker  # type: ignore[import-untyped]

        if host is None:
            client = docker.from_env(timeout=timeout)
        else:
            client = docker.DockerClient(
                base_url=host, timeout=timeout, use_ssh_client=host.startswith("ssh://")
            )
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return DockerStatus(False, _one_line(f"Docker is not reachable at {where}: {exc}"))
    return DockerStatus(True, f"Docker answered at {where}")


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _ApiAnswers(WaitStrategy):
    """Ready once ``call(endpoint_url)`` returns without raising (bounded)."""

    def __init__(
        self, port: int, call: Callable[[str], object], timeout: float, poll: float = 0.5
    ) -> None:
        super().__init__()
        self._port = port
        self._call = call
        self._timeout = timeout
        self._every = poll

    def wait_until_ready(self, container: WaitStrategyTarget) -> None:
        url = f"http://{container.get_container_host_ip()}:{container.get_exposed_port(self._port)}"
        deadline = time.monotonic() + self._timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                self._call(url)
                return
            except Exception as exc:  # connection refused/reset while the JVM starts
                last = exc
            container.reload()
            if container.status in ("exited", "dead"):
                raise RuntimeError(
                    f"the container stopped while starting ({url}): {_tail(container)}"
                )
            time.sleep(self._every)
        raise TimeoutError(
            _one_line(f"{url} did not answer within {self._timeout:g} s: {last}")
            + f"\n{_tail(container)}"
        )


def _tail(container: WaitStrategyTarget, lines: int = 20) -> str:
    try:
        stdout, stderr = container.get_logs()
    except Exception:
        return "(no logs)"
    text = (stdout + stderr).decode("utf-8", "replace").splitlines()
    return "\n".join(text[-lines:])


def _boto3_client(service: str, endpoint_url: str, region: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",  # noqa: S106 (emulators accept any key)
        config=Config(connect_timeout=2, read_timeout=10, retries={"max_attempts": 1}),
    )


class StepFunctionsLocalContainer(DockerContainer):
    """``amazon/aws-stepfunctions-local`` on port 8083.

    ``mock_config`` (a :class:`MockConfigBuilder`, a mapping in the file format, or a path)
    is copied into the container and named by ``SFN_MOCK_CONFIG``; start executions with
    ``<stateMachineArn>#<TestCase>`` to use it. ``lambda_endpoint``/``dynamodb_endpoint``
    set ``LAMBDA_ENDPOINT``/``DYNAMODB_ENDPOINT`` for states that are not mocked.
    ``start()`` returns once ``ListStateMachines`` answers (at most ``startup_timeout``
    seconds). Note: Step Functions Local is unsupported by AWS and has no redrive.
    """

    PORT = 8083
    MOCK_CONFIG_PATH = "/home/StepFunctionsLocal/MockConfigFile.json"

    def __init__(
        self,
        image: str = STEPFUNCTIONS_LOCAL_IMAGE,
        *,
        mock_config: MockConfigBuilder | Mapping[str, Any] | str | Path | None = None,
        lambda_endpoint: str | None = None,
        dynamodb_endpoint: str | None = None,
        region: str = DEFAULT_REGION,
        account: str = DEFAULT_ACCOUNT,
        wait_time_scale: float | None = None,
        startup_timeout: float = 90.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.region = region
        self.with_exposed_ports(self.PORT)
        self.with_env("AWS_DEFAULT_REGION", region)
        self.with_env("AWS_ACCOUNT_ID", account)
        if mock_config is not None:
            self.with_copy_into_container(_mock_config_bytes(mock_config), self.MOCK_CONFIG_PATH)
            self.with_env("SFN_MOCK_CONFIG", self.MOCK_CONFIG_PATH)
        if lambda_endpoint is not None:
            self.with_env("LAMBDA_ENDPOINT", lambda_endpoint)
        if dynamodb_endpoint is not None:
            self.with_env("DYNAMODB_ENDPOINT", dynamodb_endpoint)
        if wait_time_scale is not None:
            self.with_env("WAIT_TIME_SCALE", f"{wait_time_scale:g}")
        self.waiting_for(
            _ApiAnswers(
                self.PORT,
                lambda url: _boto3_client("stepfunctions", url, region).list_state_machines(),
                startup_timeout,
            )
        )

    def get_endpoint_url(self) -> str:
        return f"http://{self.get_container_host_ip()}:{self.get_exposed_port(self.PORT)}"

    def get_client(self) -> SFNClient:
        """A boto3 ``stepfunctions`` client for this container (dummy credentials)."""
        client: SFNClient = _boto3_client("stepfunctions", self.get_endpoint_url(), self.region)
        return client


class DynamoDBLocalContainer(DockerContainer):
    """``amazon/dynamodb-local`` on port 8000, in memory, one database for every
    region and key (``-sharedDb``). ``start()`` returns once ``ListTables`` answers."""

    PORT = 8000

    def __init__(
        self,
        image: str = DYNAMODB_LOCAL_IMAGE,
        *,
        region: str = DEFAULT_REGION,
        startup_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, command="-jar DynamoDBLocal.jar -inMemory -sharedDb", **kwargs)
        self.region = region
        self.with_exposed_ports(self.PORT)
        self.waiting_for(
            _ApiAnswers(
                self.PORT,
                lambda url: _boto3_client("dynamodb", url, region).list_tables(),
                startup_timeout,
            )
        )

    def get_endpoint_url(self) -> str:
        return f"http://{self.get_container_host_ip()}:{self.get_exposed_port(self.PORT)}"

    def get_client(self) -> DynamoDBClient:
        """A boto3 ``dynamodb`` client for this container (dummy credentials)."""
        client: DynamoDBClient = _boto3_client("dynamodb", self.get_endpoint_url(), self.region)
        return client


def _mock_config_bytes(mock_config: MockConfigBuilder | Mapping[str, Any] | str | Path) -> bytes:
    if isinstance(mock_config, MockConfigBuilder):
        return mock_config.to_json().encode("utf-8")
    if isinstance(mock_config, Mapping):
        return json.dumps(mock_config, indent=2).encode("utf-8")
    return Path(mock_config).read_bytes()
