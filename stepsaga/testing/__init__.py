"""Test helpers for sagas: one step alone, a whole saga on the engine or a Step Functions
API, mock configs and history assertions.

Install with ``pip install "stepsaga[testing]"``; the pytest plugin
(``stepsaga.testing.pytest_plugin``) then loads itself and provides the fixtures.

- :class:`StepEnvironment` — one step's real handler alone, with fake clients and a real
  ledger (like Temporal's ``ActivityEnvironment``).
- :class:`SagaRunner` (the contract), :class:`EngineBackend`, :class:`StepFunctionsBackend`
  — deploy and run a saga the same way on the embedded engine and on a Step Functions API.
- :class:`MockConfigBuilder`, :class:`Return`, :class:`Throw`, :func:`step_result` — write
  Step Functions Local ``MockConfigFile.json`` files in Python.
- :func:`assert_path`, :func:`assert_retries`, :func:`assert_caught`,
  :func:`assert_outcome`, :class:`History` — assertions over any runner's history.
- :func:`moto_deployment` — your synthesized stack on moto, every Lambda invocation running
  the function's real handler in-process (end-to-end tests).
- :func:`create_ledger_table` — a ledger table on any DynamoDB.
- :class:`SeededScheduler` — one replayable interleaving of ``Parallel`` branches and
  ``Map`` iterations per seed (``LocalEngine(scheduler=…)``, ``LocalBackend(…, scheduler=…)``).

Names load lazily, so importing the plugin costs nothing until a fixture is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepsaga._util.lazy import lazy_getattr

if TYPE_CHECKING:
    from stepsaga.engine._scheduler import SeededScheduler
    from stepsaga.testing._backends import EngineBackend, SagaRunner, StepFunctionsBackend
    from stepsaga.testing._history import (
        History,
        assert_caught,
        assert_outcome,
        assert_path,
        assert_retries,
    )
    from stepsaga.testing._ledger import create_ledger_table
    from stepsaga.testing._mockconfig import MockConfigBuilder, Return, Throw
    from stepsaga.testing._moto_stack import moto_deployment
    from stepsaga.testing._scenarios import step_result
    from stepsaga.testing._step import StepEnvironment

#: Where each public name is defined; loaded on first use (PEP 562).
_WHERE = {
    "SeededScheduler": "stepsaga.engine._scheduler",
    "EngineBackend": "stepsaga.testing._backends",
    "SagaRunner": "stepsaga.testing._backends",
    "StepFunctionsBackend": "stepsaga.testing._backends",
    "History": "stepsaga.testing._history",
    "assert_caught": "stepsaga.testing._history",
    "assert_outcome": "stepsaga.testing._history",
    "assert_path": "stepsaga.testing._history",
    "assert_retries": "stepsaga.testing._history",
    "create_ledger_table": "stepsaga.testing._ledger",
    "MockConfigBuilder": "stepsaga.testing._mockconfig",
    "Return": "stepsaga.testing._mockconfig",
    "Throw": "stepsaga.testing._mockconfig",
    "moto_deployment": "stepsaga.testing._moto_stack",
    "step_result": "stepsaga.testing._scenarios",
    "StepEnvironment": "stepsaga.testing._step",
}

#: The same names (a literal, so linters and type checkers read it; a test keeps the
#: three statements equal).
__all__ = [
    "EngineBackend",
    "History",
    "MockConfigBuilder",
    "Return",
    "SagaRunner",
    "SeededScheduler",
    "StepEnvironment",
    "StepFunctionsBackend",
    "Throw",
    "assert_caught",
    "assert_outcome",
    "assert_path",
    "assert_retries",
    "create_ledger_table",
    "moto_deployment",
    "step_result",
]

if not TYPE_CHECKING:  # so mypy sees only the names imported above
    __getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return __all__
