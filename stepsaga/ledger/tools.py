"""A decorator for agent tool calls (seeds 000/001, docs/background.md): the ledger outside sagas.

The action key comes from an explicit ``ActionScope`` argument that the caller got from the
validated, authorized request — never from a model tool-call id, a request id or a uuid
made inside the tool (those identify attempts, not intents).

    @ledgered_tool(lambda: ledger, operation="create_refund", effect=EffectClass.KEYED_WRITE)
    def create_refund(order_id: str, amount: dict, *, scope: ActionScope) -> dict:
        return payments.refund(order_id, amount, idempotency_key=scope.key("create_refund"))
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

from stepsaga.errors import InvalidActionError, InvalidInputError
from stepsaga.ledger.models import Action, EffectClass, Intent, check_tenant
from stepsaga.ledger.rules import Ledger

P = ParamSpec("P")


@dataclass(frozen=True)
class ActionScope:
    """The trusted tenant and approved intent a tool call acts for."""

    tenant_id: str
    intent: Intent

    def __post_init__(self) -> None:
        check_tenant(self.tenant_id)
        if not isinstance(self.intent, Intent):
            raise InvalidActionError("intent must be an Intent", field="intent")

    def key(self, operation: str) -> str:
        """The action key the ledger uses (and a keyed downstream should receive)."""
        return f"{self.tenant_id}:{self.intent.case_id}:r{self.intent.revision}:{operation}"


def ledgered_tool(
    ledger: Ledger | Callable[[], Ledger],
    *,
    operation: str,
    effect: EffectClass | str | None = None,
    scope_arg: str = "scope",
    params: Sequence[str] | None = None,
    cost: int | None = None,
) -> Callable[[Callable[P, Mapping[str, Any]]], Callable[P, dict[str, Any]]]:
    """Run the tool through ``ledger.perform``: once per intent, replayed afterwards.

    ``params`` names the consequential arguments (the digest); by default every argument
    but the scope. ``effect`` left out means ``physical``. ``ledger`` may be a factory so
    decorating a module-level tool opens nothing at import time.
    """
    declared = EffectClass.parse(effect if effect is None else str(effect))

    def decorate(fn: Callable[P, Mapping[str, Any]]) -> Callable[P, dict[str, Any]]:
        signature = inspect.signature(fn)
        if scope_arg not in signature.parameters:
            raise InvalidInputError(
                f"tool {fn.__name__} must take the action scope as parameter {scope_arg!r}",
                field=scope_arg,
            )
        unknown = sorted(set(params or ()) - set(signature.parameters))
        if unknown:
            raise InvalidInputError(
                f"tool {fn.__name__} has no parameter {unknown[0]!r}", field="params"
            )

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            scope = bound.arguments.get(scope_arg)
            if not isinstance(scope, ActionScope):
                raise InvalidInputError(
                    f"{fn.__name__} needs an explicit {scope_arg}=ActionScope(...): "
                    "the action key comes from the approved intent, never from the tool",
                    field=scope_arg,
                )
            names = params if params is not None else list(bound.arguments)
            consequential = {n: bound.arguments[n] for n in names if n != scope_arg}
            action = Action(
                tenant_id=scope.tenant_id,
                intent=scope.intent,
                operation=operation,
                effect=declared,
                params=consequential,
                cost=cost,
            )
            target = ledger if isinstance(ledger, Ledger) else ledger()
            return target.perform(action, lambda _claim: fn(*bound.args, **bound.kwargs))

        return wrapper

    return decorate
