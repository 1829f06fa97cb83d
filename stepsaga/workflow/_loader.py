"""Find a saga by reference: ``package.module:attr`` (``attr`` defaults to ``saga``).

Every failure is one ``InvalidInputError`` line. Projects name their sagas in
``[tool.stepsaga]`` (``stepsaga._project.project``); this is the loader both use.
"""

from __future__ import annotations

from stepsaga._model.refs import load_ref
from stepsaga.errors import InvalidInputError, SagaDefinitionError
from stepsaga.workflow._saga import Saga


def load_saga(ref: str, what: str = "workflow") -> Saga:
    try:
        saga = load_ref(ref, what, default_attr="saga")
    except SagaDefinitionError as exc:
        raise InvalidInputError(f"{what} {ref!r}: {exc}", field=what) from None
    if not isinstance(saga, Saga):
        attr = ref.partition(":")[2] or "saga"
        raise InvalidInputError(
            f"{what} {ref!r}: {attr} is a {type(saga).__name__}, not a stepsaga Saga", field=what
        )
    return saga
