"""pytest fixtures for testing sagas.

``pip install "stepsaga[testing]"`` registers this plugin (entry point ``pytest11``); without
the entry point, list it in your root ``conftest.py``:
``pytest_plugins = ["stepsaga.testing.pytest_plugin"]`` (the entry point has the module's
name, so both together register it once). Disable it with
``-p no:stepsaga.testing.pytest_plugin``.

Override these in a test module or ``conftest.py`` (a fixture with the same name):

* ``stepsaga_mock_config`` — the :class:`~stepsaga.testing.MockConfigBuilder` the engine
  and Step Functions Local load (default: none);
* ``stepsaga_handlers`` — in-process handlers by function name, for states the test case
  does not mock (embedded engine only; any other function fails its task loudly).

Fixtures: ``saga_backend`` (the test runs on the embedded engine, on moto's interpreter,
on LocalStack — marked ``localstack`` — and on Step Functions Local — marked ``docker``),
``local_engine``, ``engine_backend``, ``moto_backend``, ``localstack``,
``localstack_backend``, ``stepfunctions_local``, ``stepfunctions_client``,
``stepfunctions_backend``, ``dynamodb_local``, ``ledger_table`` (moto),
``ledger_table_local`` (DynamoDB Local) and ``docker_status``. The ``docker`` marker, and
every fixture that needs a container, skip the test with one line saying why when no Docker
daemon answers (probed once, within 2 s).

LocalStack (``stepsaga.testing._localstack``) starts once per session, on a free port, from
``$STEPSAGA_LOCALSTACK_PYTHON`` or ``<rootdir>/.venv-localstack``, within
``LOCALSTACK_STARTUP_TIMEOUT`` seconds. When it is missing or will not start, its tests skip
with one line; a project that installs it for its CI sets the ini option
``stepsaga_localstack = "required-on-ci"``, and then under ``CI=true`` they fail instead
(CI must not pass by skipping).

Nothing heavy is imported until a fixture is used, so the plugin costs nothing elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

    from stepsaga.engine import Handler, LocalEngine
    from stepsaga.testing._backends import EngineBackend, SagaRunner, StepFunctionsBackend
    from stepsaga.testing._containers import (
        DockerStatus,
        DynamoDBLocalContainer,
        StepFunctionsLocalContainer,
    )
    from stepsaga.testing._ledger import CreatedLedgerTable
    from stepsaga.testing._localstack import LocalStack
    from stepsaga.testing._mockconfig import MockConfigBuilder

#: How long the Docker probe may take, once per test session.
DOCKER_PROBE_TIMEOUT = 2.0
#: How long LocalStack may take to answer, once per test session (about 5 s when idle).
LOCALSTACK_STARTUP_TIMEOUT = 90.0

_DOCKER_STATUS = pytest.StashKey["DockerStatus"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "stepsaga_localstack",
        "optional (default: LocalStack tests skip when it is missing or will not start) or "
        "required-on-ci (under CI=true they fail instead)",
        default="optional",
    )


#: The ini option ``stepsaga_localstack``'s values.
LOCALSTACK_MODES = ("optional", "required-on-ci")


def pytest_configure(config: pytest.Config) -> None:
    mode = config.getini("stepsaga_localstack")
    if mode not in LOCALSTACK_MODES:
        raise pytest.UsageError(
            f"ini option stepsaga_localstack: {mode!r} is not one of {', '.join(LOCALSTACK_MODES)}"
        )
    config.addinivalue_line(
        "markers", "docker: needs a Docker daemon (skipped, with the reason, when none answers)"
    )
    config.addinivalue_line(
        "markers",
        "deviates(**reasons): where a backend (moto, localstack, stepfunctions-local) "
        "deviates from AWS's documentation: a strict xfail there, with the reason",
    )
    config.addinivalue_line(
        "markers",
        "unsupported(**reasons): a backend cannot run this case here (an xfail, not run)",
    )
    config.addinivalue_line(
        "markers",
        "localstack: runs on LocalStack (skipped with the reason when it will not start; "
        "failed under CI=true)",
    )


def under_ci() -> bool:
    """``CI=true`` (or ``1``): a tool the tests need must be there, not skipped."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is not None:
        _require_docker(item.config)


def _docker_status(config: pytest.Config) -> DockerStatus:
    status = config.stash.get(_DOCKER_STATUS, None)
    if status is None:
        from stepsaga.testing._containers import docker_available

        status = config.stash[_DOCKER_STATUS] = docker_available(DOCKER_PROBE_TIMEOUT)
    return status


def _require_docker(config: pytest.Config) -> None:
    status = _docker_status(config)
    if not status:
        pytest.skip(f"needs Docker: {status.reason}")


# --- override points ---------------------------------------------------------------------


@pytest.fixture
def stepsaga_mock_config() -> MockConfigBuilder | None:
    """The mock config tests run with; override it to return your test cases."""
    return None


@pytest.fixture
def stepsaga_handlers() -> Mapping[str, Handler]:
    """In-process handlers (function name → ``handler(event, context)``) for the engine."""
    return {}


# --- embedded engine ---------------------------------------------------------------------


@pytest.fixture
def local_engine(
    tmp_path: Path,
    stepsaga_mock_config: MockConfigBuilder | None,
    stepsaga_handlers: Mapping[str, Handler],
) -> Iterator[LocalEngine]:
    """A ``LocalEngine`` in a fresh state folder, waits skipped (time scale 0), with the
    mock config and the handlers (:func:`~stepsaga.testing.strict_handlers`)."""
    from stepsaga._project.home import StateHome
    from stepsaga.engine import LocalEngine
    from stepsaga.testing._backends import strict_handlers

    engine = LocalEngine(
        StateHome(tmp_path / "stepsaga-engine"),
        strict_handlers(stepsaga_handlers),
        time_scale=0,
        mock_config=None if stepsaga_mock_config is None else stepsaga_mock_config.build(),
    )
    yield engine
    engine.close()


@pytest.fixture
def engine_backend(local_engine: LocalEngine) -> EngineBackend:
    from stepsaga.testing._backends import EngineBackend

    return EngineBackend(local_engine)


# --- moto and LocalStack (no Docker) ------------------------------------------------------


@pytest.fixture
def moto_backend(stepsaga_mock_config: MockConfigBuilder | None) -> Iterator[StepFunctionsBackend]:
    """moto's Step Functions interpreter in-process, serving ``stepsaga_mock_config``."""
    from stepsaga.testing._backends import StepFunctionsBackend
    from stepsaga.testing._moto import moto_stepfunctions

    with moto_stepfunctions(stepsaga_mock_config) as client:
        yield StepFunctionsBackend(client, timeout=60, poll_interval=0.02)


@pytest.fixture(scope="session")
def localstack(pytestconfig: pytest.Config) -> Iterator[LocalStack]:
    """A running LocalStack (Step Functions only), shared by the session, stopped at its
    end. Skips in one line when missing or not starting; fails instead under ``CI=true``
    when the ini option ``stepsaga_localstack`` is ``required-on-ci``."""
    from stepsaga.errors import LocalStackError
    from stepsaga.testing._localstack import LOCALSTACK_VENV, LocalStack, localstack_python

    required = under_ci() and pytestconfig.getini("stepsaga_localstack") == "required-on-ci"
    python = localstack_python(pytestconfig.rootpath)
    if python is None:
        _unavailable(
            f"LocalStack is not installed at {pytestconfig.rootpath / LOCALSTACK_VENV} "
            "(`make localstack`, or set STEPSAGA_LOCALSTACK_PYTHON)",
            required=required,
        )
    server = LocalStack(python, startup_timeout=LOCALSTACK_STARTUP_TIMEOUT)
    try:
        server.start()
    except (LocalStackError, OSError) as exc:
        _unavailable(str(exc), required=required)
    yield server
    server.stop()


def _unavailable(reason: str, *, required: bool) -> NoReturn:
    if required:
        pytest.fail(f"CI=true needs LocalStack: {reason}", pytrace=False)
    pytest.skip(f"needs LocalStack: {reason.partition(chr(10))[0]}")


@pytest.fixture
def localstack_backend(
    localstack: LocalStack, stepsaga_mock_config: MockConfigBuilder | None
) -> StepFunctionsBackend:
    """LocalStack's Step Functions, serving ``stepsaga_mock_config`` from now on."""
    from stepsaga.testing._backends import StepFunctionsBackend

    if stepsaga_mock_config is not None:
        localstack.use_mock_config(stepsaga_mock_config)
    return StepFunctionsBackend(
        localstack.get_client(), timeout=120, poll_interval=0.05, max_retry_delay=1
    )


# --- containers --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def docker_status(pytestconfig: pytest.Config) -> DockerStatus:
    """Whether a Docker daemon answered (probed once per session), and why not."""
    return _docker_status(pytestconfig)


class _Containers:
    """Containers started in this session: one Step Functions Local per distinct mock
    config (it reads the file at start), one DynamoDB Local; stopped at the end."""

    def __init__(self) -> None:
        self._stepfunctions: dict[str, StepFunctionsLocalContainer] = {}
        self._dynamodb: DynamoDBLocalContainer | None = None

    def stepfunctions(self, mock_config: MockConfigBuilder | None) -> StepFunctionsLocalContainer:
        from stepsaga.testing._containers import StepFunctionsLocalContainer

        key = "" if mock_config is None else mock_config.to_json()
        if key not in self._stepfunctions:
            container = StepFunctionsLocalContainer(mock_config=mock_config)
            self._stepfunctions[key] = container.start()
        return self._stepfunctions[key]

    def dynamodb(self) -> DynamoDBLocalContainer:
        from stepsaga.testing._containers import DynamoDBLocalContainer

        if self._dynamodb is None:
            self._dynamodb = DynamoDBLocalContainer().start()
        return self._dynamodb

    def stop(self) -> None:
        containers: list[Any] = [*self._stepfunctions.values(), self._dynamodb]
        for container in containers:
            if container is not None:
                container.stop()


@pytest.fixture(scope="session")
def _stepsaga_containers() -> Iterator[_Containers]:
    containers = _Containers()
    yield containers
    containers.stop()


@pytest.fixture
def stepfunctions_local(
    pytestconfig: pytest.Config,
    _stepsaga_containers: _Containers,
    stepsaga_mock_config: MockConfigBuilder | None,
) -> StepFunctionsLocalContainer:
    """A running Step Functions Local with ``stepsaga_mock_config`` (skips without Docker)."""
    _require_docker(pytestconfig)
    return _stepsaga_containers.stepfunctions(stepsaga_mock_config)


@pytest.fixture
def stepfunctions_client(stepfunctions_local: StepFunctionsLocalContainer) -> SFNClient:
    return stepfunctions_local.get_client()


@pytest.fixture
def stepfunctions_backend(stepfunctions_client: SFNClient) -> StepFunctionsBackend:
    from stepsaga.testing._backends import StepFunctionsBackend

    return StepFunctionsBackend(stepfunctions_client, max_retry_delay=1)


def expect_deviation(request: pytest.FixtureRequest, backend: str) -> None:
    """A strict xfail (``AssertionError``) for ``backend`` where the test's ``deviates``
    marker gives it a reason: the backend deviates from AWS's documentation there. Where the
    ``unsupported`` marker gives one, the backend cannot run the case here at all: an xfail
    that is not run (LocalStack would try to download Java for JSONata)."""
    deviates = request.node.get_closest_marker("deviates")
    reason = deviates.kwargs.get(backend) if deviates is not None else None
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))
    unsupported = request.node.get_closest_marker("unsupported")
    reason = unsupported.kwargs.get(backend) if unsupported is not None else None
    if reason:
        request.applymarker(pytest.mark.xfail(run=False, reason=reason))


#: ``saga_backend``'s parameters: id → the fixture that provides it.
SAGA_BACKENDS = {
    "engine": "engine_backend",
    "moto": "moto_backend",
    "localstack": "localstack_backend",
    "stepfunctions-local": "stepfunctions_backend",
}


@pytest.fixture(
    params=[
        pytest.param("engine", id="engine"),
        pytest.param("moto", id="moto"),
        pytest.param("localstack", id="localstack", marks=pytest.mark.localstack),
        pytest.param("stepfunctions-local", id="stepfunctions-local", marks=pytest.mark.docker),
    ]
)
def saga_backend(request: pytest.FixtureRequest) -> SagaRunner:
    """Each test using it runs on the embedded engine, moto, LocalStack and Step Functions
    Local (``request.param`` names the one). ``@pytest.mark.deviates(localstack="…")`` on
    the test or on one of its parameters makes that backend's run a strict xfail."""
    expect_deviation(request, request.param)
    backend: SagaRunner = request.getfixturevalue(SAGA_BACKENDS[request.param])
    return backend


@pytest.fixture(scope="session")
def dynamodb_local(
    pytestconfig: pytest.Config, _stepsaga_containers: _Containers
) -> DynamoDBLocalContainer:
    """A running DynamoDB Local, shared by the session (skips without Docker)."""
    _require_docker(pytestconfig)
    return _stepsaga_containers.dynamodb()


# --- ledger tables -----------------------------------------------------------------------


@pytest.fixture
def ledger_table() -> Iterator[CreatedLedgerTable]:
    """A fresh ledger table on moto's in-process DynamoDB (no Docker needed); moto stays
    active for the test, so ``ledger_table.open()`` and any boto3 client reach it."""
    import boto3
    from moto import mock_aws

    from stepsaga.testing._ledger import create_ledger_table

    with mock_aws():
        yield create_ledger_table(boto3.client("dynamodb", region_name="us-east-1"))


@pytest.fixture
def ledger_table_local(
    dynamodb_local: DynamoDBLocalContainer, monkeypatch: pytest.MonkeyPatch
) -> CreatedLedgerTable:
    """A fresh ledger table on DynamoDB Local (skips without Docker)."""
    from stepsaga.testing._ledger import create_ledger_table

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        if not os.environ.get(name):  # DynamoDB Local takes any key, boto3 wants one
            monkeypatch.setenv(name, "testing")
    return create_ledger_table(
        dynamodb_local.get_client(), endpoint_url=dynamodb_local.get_endpoint_url()
    )
