"""LocalStack's Step Functions in host mode (no Docker): a second reference interpreter.

Why: the embedded engine is checked against an independent interpreter. moto's is a copy of
LocalStack's, so LocalStack is the same vote — but it is the maintained original, it loads
Step Functions Local mock configs (``SFN_MOCK_CONFIG``) and it runs here without Docker, in
a venv of its own (``make .venv-localstack``; it needs Python >= 3.12 and pins that clash
with ours). Its Lambda, DynamoDB and JSONata need Docker or a Java download: tests mock every
``Task`` with the mock config.

Why the process is started this way: a fresh free port and a private filesystem root per
server, nothing downloaded (no certificate, no analytics), its own process group so
:meth:`LocalStack.stop` ends LocalStack and whatever it forked (and, on Linux, it is killed
if the test process dies first). :meth:`LocalStack.start` returns once
``/_localstack/health`` reports Step Functions available, and gives up after
``startup_timeout`` seconds or as soon as the process exits — it never hangs.

LocalStack re-reads the mock config file when its modification time (whole seconds) changes;
:meth:`LocalStack.use_mock_config` rewrites it and moves the time on, so one server serves a
whole test session.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepsaga.errors import LocalStackError
from stepsaga.testing._backends import DEFAULT_ACCOUNT
from stepsaga.testing._mockconfig import MockConfigBuilder

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

__all__ = [
    "LOCALSTACK_VENV",
    "LOCALSTACK_VERSION",
    "LocalStack",
    "LocalStackError",
    "localstack_python",
]

LOCALSTACK_VERSION = "2026.3.0"
#: Where ``make .venv-localstack`` installs it, relative to the project root.
LOCALSTACK_VENV = ".venv-localstack"
#: Overrides the interpreter (a Python whose environment has ``localstack-core``).
PYTHON_ENV = "STEPSAGA_LOCALSTACK_PYTHON"
DEFAULT_REGION = "us-east-1"

#: Host mode, Step Functions only, nothing fetched from outside, nothing kept.
_ENVIRONMENT = {
    "SERVICES": "stepfunctions",
    "OVERRIDE_IN_DOCKER": "0",
    "DNS_ADDRESS": "0",
    "SKIP_SSL_CERT_DOWNLOAD": "1",
    "DISABLE_EVENTS": "1",
    "SKIP_INFRA_DOWNLOADS": "1",
    "PERSISTENCE": "0",
    "LOCALSTACK_CLI": "0",
}


def localstack_python(root: str | Path) -> Path | None:
    """The interpreter to run LocalStack with: ``$STEPSAGA_LOCALSTACK_PYTHON``, else
    ``<root>/.venv-localstack/bin/python``; ``None`` when neither exists."""
    configured = os.environ.get(PYTHON_ENV)
    candidate = Path(configured) if configured else Path(root) / LOCALSTACK_VENV / "bin" / "python"
    return candidate if candidate.exists() else None


def _die_with_parent() -> None:
    """Linux: SIGKILL the child when the test process dies without stopping it (a killed
    pytest must not leave LocalStack running); elsewhere nothing."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class LocalStack:
    """One LocalStack process serving Step Functions on ``127.0.0.1:<port>``."""

    def __init__(
        self,
        python: str | Path,
        *,
        port: int | None = None,
        workdir: str | Path | None = None,
        region: str = DEFAULT_REGION,
        account: str = DEFAULT_ACCOUNT,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.python = Path(python).absolute()  # not resolve(): a venv's python is a link
        self.port = port or _free_port()
        self.region = region
        self.account = account
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._owned_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="stepsaga-localstack-"))
        self.mock_config_path = self.workdir / "MockConfigFile.json"
        self.log_path = self.workdir / "localstack.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._mtime = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalStack:
        """Start it and return once Step Functions answers; :class:`LocalStackError` if it
        exits or does not become healthy within ``startup_timeout`` seconds."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.use_mock_config({"StateMachines": {}, "MockedResponses": {}})
        env = {
            **os.environ,
            **_ENVIRONMENT,
            "GATEWAY_LISTEN": f"127.0.0.1:{self.port}",
            "FILESYSTEM_ROOT": str(self.workdir / "filesystem"),
            "SFN_MOCK_CONFIG": str(self.mock_config_path),
            "AWS_DEFAULT_REGION": self.region,
        }
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(  # noqa: S603 (our interpreter, fixed args)
                [str(self.python), "-m", "localstack.runtime.main"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # only prctl, between fork and exec
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise LocalStackError(
                    f"LocalStack exited with code {code} while starting\n{self.log_tail()}"
                )
            try:
                status = self.health().get("services", {}).get("stepfunctions")
                if status in ("available", "running"):
                    return
                last = f"stepfunctions is {status!r}"
            except (OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise LocalStackError(
            f"LocalStack did not become healthy on {self.endpoint_url} within "
            f"{self.startup_timeout:g} s ({last})\n{self.log_tail()}"
        )

    def health(self) -> dict[str, Any]:
        """``GET /_localstack/health`` (raises ``OSError`` while nothing listens)."""
        url = f"{self.endpoint_url}/_localstack/health"
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 (loopback http)
            parsed: dict[str, Any] = json.loads(answer.read())
            return parsed

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])

    def use_mock_config(self, mock_config: MockConfigBuilder | Mapping[str, Any]) -> None:
        """Make ``mock_config`` the one executions started with ``<arn>#<TestCase>`` use
        from now on (LocalStack notices a new modification time, in whole seconds)."""
        text = (
            mock_config.to_json()
            if isinstance(mock_config, MockConfigBuilder)
            else json.dumps(mock_config, indent=2)
        )
        self.mock_config_path.write_text(text, encoding="utf-8")
        self._mtime = max(self._mtime + 1, int(time.time()))
        os.utime(self.mock_config_path, (self._mtime, self._mtime))

    def get_client(self) -> SFNClient:
        """A boto3 ``stepfunctions`` client for this server (dummy credentials)."""
        import boto3
        from botocore.config import Config

        client: SFNClient = boto3.client(
            "stepfunctions",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 (LocalStack accepts any key)
            config=Config(connect_timeout=2, read_timeout=30, retries={"max_attempts": 1}),
        )
        return client

    def stop(self) -> None:
        """End the process group: SIGTERM, then SIGKILL after ``stop_timeout`` seconds."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            for sig, wait in ((signal.SIGTERM, self.stop_timeout), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._owned_workdir:
            import shutil

            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
