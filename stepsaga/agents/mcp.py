"""MCP tools through the ledger (seed 001), on the ``mcp`` SDK's ``MCPServer``.

A thin adapter: each mutating tool is a ``ledgered_tool`` whose scope the adapter builds
from the server's authenticated tenant and the call's ``idempotencyKey`` (an issued key,
``stepsaga.agents.keys``) — never from the model's tool-call id. Its input schema is the
function's parameters plus a required ``idempotencyKey`` of 16 to 128 characters. A duplicate
delivery returns the recorded result; the same key with changed arguments is refused
with both digests in the tool result; read tools (effect class ``read``) are registered
as read-only and never touch the ledger.

    server = MCPServer("refunds")
    tools = LedgeredTools(server, ledger=open_ledger(url), tenant="acme")

    @tools.mutating(effect=EffectClass.KEYED_WRITE)
    def create_refund(order_id: str, amount_cents: int, *, scope: ActionScope) -> dict:
        ...

Needs the ``mcp`` extra (``pip install 'stepsaga[mcp]'``).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from stepsaga.agents.keys import MAX_KEY_LENGTH, MIN_KEY_LENGTH, KeyBook
from stepsaga.errors import ActionConflictError, InvalidInputError, StepSagaError
from stepsaga.ledger.models import EffectClass
from stepsaga.ledger.rules import Ledger
from stepsaga.ledger.tools import ActionScope, ledgered_tool

if typing.TYPE_CHECKING:
    from stepsaga.handlers.metrics import MetricsSink

#: The argument every mutating tool requires (seed 001's name, camel case as in its schema).
KEY_ARGUMENT = "idempotencyKey"
#: The tool's ``_meta`` entry naming its effect class.
EFFECT_META = "stepsaga/effect"
_CONTEXT = "ctx"
_SCOPE = "scope"

IdempotencyKey = Annotated[
    str,
    Field(
        min_length=MIN_KEY_LENGTH,
        max_length=MAX_KEY_LENGTH,
        description="The key the approval flow issued for this intent; reuse it on retry, "
        "ask for a new one for a new intent.",
    ),
]

ToolFn = Callable[..., Mapping[str, Any]]


class LedgeredTools:
    """Registers tools on ``server``: mutating ones through the ledger, reads around it.

    ``tenant`` is the server's authenticated tenant: a fixed id (a stdio server launched
    for one tenant) or a function of the request ``Context`` (an HTTP server reading its
    verified token). ``keys`` defaults to a ``KeyBook`` over the same ledger. ``metrics``
    is flushed after every mutating call; a stdio server must not write EMF to stdout (the
    protocol's channel): give ``EmfMetrics`` a ``write`` to stderr.
    """

    def __init__(
        self,
        server: MCPServer[Any],
        *,
        ledger: Ledger | Callable[[], Ledger],
        tenant: str | Callable[[Context[Any, Any]], str],
        keys: KeyBook | None = None,
        metrics: MetricsSink | None = None,
    ) -> None:
        self.server = server
        self._ledger = ledger
        self._tenant = tenant
        self._keys = keys or KeyBook(ledger)
        self._metrics = metrics

    def mutating(
        self,
        *,
        effect: EffectClass | str | None = None,
        name: str | None = None,
        params: Sequence[str] | None = None,
        cost: int | None = None,
        description: str | None = None,
    ) -> Callable[[ToolFn], ToolFn]:
        """Serve ``fn(..., *, scope: ActionScope)`` as an MCP tool run through the ledger.

        ``effect`` left out means ``physical``; ``read`` is refused here (use ``read``).
        """
        declared = EffectClass.parse(effect if effect is None else str(effect))
        if not declared.recorded:
            raise InvalidInputError(
                "a read tool never touches the ledger: use read()", field="effect"
            )

        def register(fn: ToolFn) -> ToolFn:
            tool = name or fn.__name__
            ledgered = ledgered_tool(
                self._ledger,
                operation=tool,
                effect=declared,
                params=params,
                cost=cost,
                metrics=self._metrics,
            )(fn)

            def call(**arguments: Any) -> dict[str, Any]:
                context = arguments.pop(_CONTEXT)
                key = arguments.pop(KEY_ARGUMENT)
                try:
                    tenant = (
                        self._tenant if isinstance(self._tenant, str) else self._tenant(context)
                    )
                    scope = ActionScope(tenant, self._keys.intent(tenant, key))
                    return ledgered(**arguments, scope=scope)
                except ActionConflictError as conflict:
                    raise ToolError(_conflict_message(tool, conflict)) from conflict
                except StepSagaError as error:
                    raise ToolError(f"{error.error_name()}: {error.message}") from error
                finally:
                    if self._metrics is not None:
                        self._metrics.flush()  # one tool call is one invocation

            self.server.add_tool(
                _with_signature(call, fn, mutating=True),
                name=tool,
                description=description or inspect.getdoc(fn) or "",
                annotations=ToolAnnotations(
                    read_only_hint=False,
                    idempotent_hint=True,  # per key: a repeat returns the recorded result
                    destructive_hint=declared is EffectClass.PHYSICAL,
                ),
                meta={EFFECT_META: declared.value},
                structured_output=True,
            )
            return fn

        return register

    def read(
        self, *, name: str | None = None, description: str | None = None
    ) -> Callable[[ToolFn], ToolFn]:
        """Serve ``fn`` as a read-only tool: no key, no scope, no ledger."""

        def register(fn: ToolFn) -> ToolFn:
            self.server.add_tool(
                fn,
                name=name or fn.__name__,
                description=description or inspect.getdoc(fn) or "",
                annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
                meta={EFFECT_META: EffectClass.READ.value},
            )
            return fn

        return register


def _conflict_message(tool: str, conflict: ActionConflictError) -> str:
    stored, requested = conflict.data.get("stored_digest"), conflict.data.get("request_digest")
    return (
        f"ActionConflictError: {tool}: this idempotencyKey was already used with other "
        f"arguments (stored digest {stored}, this call's digest {requested}); nothing "
        "changed. A corrected request is a new intent: ask the approval flow for a new key."
    )


def _with_signature(call: Callable[..., dict[str, Any]], fn: ToolFn, *, mutating: bool) -> Any:
    """``call`` presented to the SDK with ``fn``'s parameters (less the scope), the
    required ``idempotencyKey`` and the request context, so the input schema is built
    from them."""
    hints = typing.get_type_hints(fn, include_extras=True)
    reserved = {KEY_ARGUMENT, _CONTEXT}
    parameters = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.name == _SCOPE:
            continue
        if parameter.name in reserved:
            raise InvalidInputError(
                f"tool {fn.__name__}: parameter {parameter.name!r} is the adapter's own",
                field=parameter.name,
            )
        parameters.append(
            parameter.replace(
                kind=inspect.Parameter.KEYWORD_ONLY,
                annotation=hints.get(parameter.name, Any),
            )
        )
    if mutating:
        parameters.append(
            inspect.Parameter(
                KEY_ARGUMENT, inspect.Parameter.KEYWORD_ONLY, annotation=IdempotencyKey
            )
        )
    parameters.append(
        inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    )
    wrapper = functools.wraps(fn)(call)
    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=dict[str, Any]
    )
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters} | {
        "return": dict[str, Any]
    }
    del wrapper.__wrapped__
    return wrapper


__all__ = ["EFFECT_META", "KEY_ARGUMENT", "LedgeredTools"]
