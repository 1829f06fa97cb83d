"""Find a saga by reference: ``package.module:attr`` (``attr`` defaults to ``saga``).

The current directory is importable, so ``--workflow my_sagas:returns`` works from a
user's project without installing it. Every failure is one ``InvalidInputError`` line.
"""

from __future__ import annotations

import importlib
import os
import sys

from stepsaga.errors import InvalidInputError
from stepsaga.workflow.retry import SagaDefinitionError
from stepsaga.workflow.saga import Saga

DEFAULT_WORKFLOW = "workflows.replacement_order:saga"


def load_saga(ref: str = DEFAULT_WORKFLOW) -> Saga:
    module_name, _, attr = ref.partition(":")
    attr = attr or "saga"
    if not module_name or not all(part.isidentifier() for part in module_name.split(".")):
        raise InvalidInputError(
            f"workflow {ref!r}: expected 'package.module:attr'", field="workflow"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise InvalidInputError(
                f"workflow {ref!r}: no module named {exc.name!r}", field="workflow"
            ) from None
        raise
    except SagaDefinitionError as exc:
        raise InvalidInputError(f"workflow {ref!r}: {exc}", field="workflow") from None
    saga = getattr(module, attr, None)
    if saga is None:
        raise InvalidInputError(
            f"workflow {ref!r}: module {module_name} has no attribute {attr!r}", field="workflow"
        )
    if not isinstance(saga, Saga):
        raise InvalidInputError(
            f"workflow {ref!r}: {attr} is a {type(saga).__name__}, not a stepsaga Saga",
            field="workflow",
        )
    return saga
