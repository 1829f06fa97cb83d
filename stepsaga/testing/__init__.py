"""Test helpers for sagas: mock configs, history assertions, backends, containers, scenarios.

Install with ``pip install "stepsaga[testing]"``; the pytest plugin
(``stepsaga.testing.pytest_plugin``) then loads itself and provides the fixtures.

- :class:`MockConfigBuilder`, :class:`Return`, :class:`Throw` — write Step Functions Local
  ``MockConfigFile.json`` files in Python.
- :func:`assert_path`, :func:`assert_visits`, :func:`assert_retries`, :func:`assert_caught`,
  :func:`assert_outcome`, :class:`History` — assertions over any backend's history.
- :class:`EngineBackend`, :class:`StepFunctionsBackend` — deploy and run a saga the same way
  on the embedded engine and on a Step Functions API; :func:`strict_handlers`.
- :class:`StepFunctionsLocalContainer`, :class:`DynamoDBLocalContainer`,
  :func:`docker_available` — testcontainers, and a probe that never hangs.
- :class:`LocalStack` — LocalStack's Step Functions in host mode (no Docker), a second
  reference interpreter; :func:`moto_stepfunctions` — moto's interpreter serving mock
  configs. With the engine and Step Functions Local, ``saga_backend`` runs a test on each.
- :func:`moto_deployment`, :class:`MotoDeployment` — your synthesized stack on moto, every
  Lambda invocation running the function's real handler in-process (end-to-end tests).
- :class:`LedgerTable`, :func:`create_ledger_table` — a ledger table on any DynamoDB.
- :class:`StepEnvironment` — one step's real handler alone, with fake clients and a real
  ledger (like Temporal's ``ActivityEnvironment``).
- :class:`Scenario`, :func:`mock_config` — test cases with their expected paths;
  :func:`step_result`, :func:`reconciliation_result`, :func:`task_error` — every mocked
  task result a saga's mock config needs.

Names load lazily, so importing the plugin costs nothing until a fixture is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.testing._backends import (
        Backend,
        EngineBackend,
        Execution,
        StepFunctionsBackend,
        cap_retry_delays,
        lambda_arn,
        strict_handlers,
    )
    from stepsaga.testing._containers import (
        DockerStatus,
        DynamoDBLocalContainer,
        StepFunctionsLocalContainer,
        docker_available,
    )
    from stepsaga.testing._history import (
        Caught,
        ExecutionEnd,
        History,
        assert_caught,
        assert_outcome,
        assert_path,
        assert_retries,
        assert_visits,
    )
    from stepsaga.testing._ledger import LedgerTable, create_ledger_table
    from stepsaga.testing._localstack import LocalStack, localstack_python
    from stepsaga.testing._mockconfig import MockConfigBuilder, Return, Throw
    from stepsaga.testing._moto import moto_stepfunctions
    from stepsaga.testing._moto_stack import (
        DeployedFunction,
        FunctionCall,
        MotoDeployment,
        moto_deployment,
    )
    from stepsaga.testing._scenarios import (
        Scenario,
        mock_config,
        reconciliation_result,
        step_result,
        task_error,
    )
    from stepsaga.testing._step import StepEnvironment

_MODULES = {
    "backends": (
        "Backend",
        "EngineBackend",
        "Execution",
        "StepFunctionsBackend",
        "cap_retry_delays",
        "lambda_arn",
        "strict_handlers",
    ),
    "containers": (
        "DockerStatus",
        "DynamoDBLocalContainer",
        "StepFunctionsLocalContainer",
        "docker_available",
    ),
    "history": (
        "Caught",
        "History",
        "ExecutionEnd",
        "assert_caught",
        "assert_outcome",
        "assert_path",
        "assert_retries",
        "assert_visits",
    ),
    "ledger": ("LedgerTable", "create_ledger_table"),
    "localstack": ("LocalStack", "localstack_python"),
    "moto": ("moto_stepfunctions",),
    "moto_stack": ("DeployedFunction", "FunctionCall", "MotoDeployment", "moto_deployment"),
    "mockconfig": ("MockConfigBuilder", "Return", "Throw"),
    "step": ("StepEnvironment",),
    "scenarios": (
        "Scenario",
        "mock_config",
        "reconciliation_result",
        "step_result",
        "task_error",
    ),
}
_WHERE = {
    name: f"stepsaga.testing._{module}" for module, names in _MODULES.items() for name in names
}

__all__ = [
    "Backend",
    "Caught",
    "DeployedFunction",
    "DockerStatus",
    "DynamoDBLocalContainer",
    "EngineBackend",
    "Execution",
    "ExecutionEnd",
    "FunctionCall",
    "History",
    "LedgerTable",
    "LocalStack",
    "MockConfigBuilder",
    "MotoDeployment",
    "Return",
    "Scenario",
    "StepEnvironment",
    "StepFunctionsBackend",
    "StepFunctionsLocalContainer",
    "Throw",
    "assert_caught",
    "assert_outcome",
    "assert_path",
    "assert_retries",
    "assert_visits",
    "cap_retry_delays",
    "create_ledger_table",
    "docker_available",
    "lambda_arn",
    "localstack_python",
    "mock_config",
    "moto_deployment",
    "moto_stepfunctions",
    "reconciliation_result",
    "step_result",
    "strict_handlers",
    "task_error",
]


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
