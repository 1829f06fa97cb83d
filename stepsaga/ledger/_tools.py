"""A decorator for agent tool calls (seeds 000/001, docs/explanation/background.md): the ledger
outside sagas.

The action key comes from an explicit ``ActionScope`` argument that the caller got from the
validated, authorized request — never from a model tool-call id, a request id or a uuid
made inside the tool (those identify attempts, not intents).

    @ledgered_tool(lambda: ledger, operation="create_refund", effect=EffectClass.KEYED_WRITE)
    def create_refund(order_id: str, amount: dict, *, scope: ActionScope) -> dict:
        return payments.refund(order_id, amount, idempotency_key=scope.key("create_refund"))

The scope may carry ``Writes`` (the session cursor of seed 000) that commit with the claim
and the outcome; ``metrics`` counts replays, exhausted budgets and conflicts per tenant
(the tenant in metadata, never a dimension). ``stepsaga.agents._mcp`` serves such tools
over MCP.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec

from stepsaga._aws import metric_names
from stepsaga._model.keys import action_key
from stepsaga.errors import InvalidActionError, InvalidInputError, StepSagaError
from stepsaga.ledger._models import Action, EffectClass, Intent, check_tenant
from stepsaga.ledger._rules import Ledger
from stepsaga.ledger._writes import Writes

if TYPE_CHECKING:
    from stepsaga._handlers.metrics import MetricsSink

P = ParamSpec("P")


@dataclass(frozen=True)
class ActionScope:
    """The trusted tenant and approved intent a tool call acts for."""

    tenant_id: str
    intent: Intent
    writes: Writes | None = None
    """Extra writes for this call (not part of the key): they commit with the claim and
    the outcome, never on a replay."""

    def __post_init__(self) -> None:
        check_tenant(self.tenant_id)
        if not isinstance(self.intent, Intent):
            raise InvalidActionError("intent must be an Intent", field="intent")
        if self.writes is not None and not isinstance(self.writes, Writes):
            raise InvalidInputError("writes must be a Writes", field="writes")

    def key(self, operation: str) -> str:
        """The action key the ledger uses (and a keyed downstream should receive)."""
        return action_key(self.tenant_id, self.intent.case_id, self.intent.revision, operation)


def ledgered_tool(
    ledger: Ledger | Callable[[], Ledger],
    *,
    operation: str,
    effect: EffectClass | str | None = None,
    scope_arg: str = "scope",
    params: Sequence[str] | None = None,
    cost: int | None = None,
    metrics: MetricsSink | None = None,
) -> Callable[[Callable[P, Mapping[str, Any]]], Callable[P, dict[str, Any]]]:
    """Run the tool through ``ledger.perform``: once per intent, replayed afterwards.

    ``params`` names the consequential arguments (the digest); by default every argument
    but the scope. ``effect`` left out means ``physical``. ``ledger`` may be a factory so
    decorating a module-level tool opens nothing at import time. ``metrics`` (a
    ``stepsaga._handlers.metrics.MetricsSink``; the caller flushes it) counts
    :func:`count_tool_metric`'s events.
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
            arguments = {n: v for n, v in bound.arguments.items() if n != scope_arg}
            action = Action(
                tenant_id=scope.tenant_id,
                intent=scope.intent,
                operation=operation,
                effect=declared,
                params=consequential(arguments, params),
                cost=cost,
            )
            target = ledger if isinstance(ledger, Ledger) else ledger()
            try:
                done = target.run(
                    action, lambda _claim: fn(*bound.args, **bound.kwargs), writes=scope.writes
                )
            except StepSagaError as error:
                count_tool_metric(metrics, action, error=error)
                raise
            count_tool_metric(metrics, action, replayed=done.replayed)
            return done.result

        return wrapper

    return decorate


def consequential(arguments: Mapping[str, Any], params: Sequence[str] | None) -> dict[str, Any]:
    """The arguments that make the request digest: ``params``, or all of them."""
    names = params if params is not None else list(arguments)
    return {name: arguments[name] for name in names}


def count_tool_metric(
    metrics: MetricsSink | None,
    action: Action,
    *,
    replayed: bool = False,
    error: StepSagaError | None = None,
) -> str | None:
    """Count what a tool call says about the seeds' checklist (duplicate replayed, quota
    exhausted, transaction conflict, key conflict) and return the metric's name.

    The names and the error → metric table are the saga handlers' own
    (``stepsaga._handlers.metrics.metric_for``); the tenant, the tool and the action key go
    in metadata, never in a dimension (``stepsaga._aws.metric_names`` says why).
    """
    if metrics is None:
        return None
    from stepsaga._handlers.metrics import metric_for  # deferred: Powertools loads on use

    name = metric_names.DUPLICATE_REPLAYED if replayed else None
    if error is not None:
        name = metric_for(error)
    if name is not None:
        metrics.count(
            name,
            {"tenant_id": action.tenant_id, "tool": action.operation, "action_key": action.key},
        )
    return name
