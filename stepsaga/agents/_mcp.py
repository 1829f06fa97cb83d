"""MCP tools through the ledger (seed 001), on the ``mcp`` SDK's ``MCPServer``.

A thin adapter: each mutating tool runs through ``Ledger.run`` with a scope the adapter
builds from the server's authenticated tenant and an issued idempotency key
(``stepsaga.agents._keys``) — never from the model's tool-call id. The key comes from the
request's ``_meta["stepsaga/idempotencyKey"]`` when the host puts it there (preferred: it
never passes through the model), else from the ``idempotencyKey`` argument.

* The key's ``Grant`` binds the call: another tool, other arguments or arguments outside
  its limits are refused, nothing written — one key is one effect across all tools.
* An uncertain outcome (``UNKNOWN``) goes through automatic reconciliation with the tool's
  ``lookup`` (``Found``/``Absent``, as saga steps do) and otherwise opens a reconciliation
  item in the ledger (``stepsaga recon list``/``resolve``); the result names the item.
* A concurrent duplicate waits (bounded) for the holder, then replays or says when to retry.
* Every error result is a ``ToolFailure`` (``stepsaga.agents._results``) in
  ``structuredContent`` plus one sentence for the model.
* Input schemas are strict (``additionalProperties: false``, no coercion, every parameter
  described, human titles); ``outputSchema`` comes from the return annotation.

    server = MCPServer("refunds")
    tools = LedgeredTools(server, ledger=open_ledger(url), tenant="acme")

    @tools.mutating(effect=EffectClass.KEYED_WRITE, lookup=find_refund)
    def create_refund(
        order_id: Annotated[str, Field(description="The order to refund.")],
        amount_cents: Annotated[int, Field(description="Amount in cents.")],
        *,
        scope: ActionScope,
    ) -> dict[str, Any]: ...

Needs the ``mcp`` extra (``pip install 'stepsaga[mcp]'``).
"""

from __future__ import annotations

import inspect
import json
import logging
import time
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any, Final

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from stepsaga._model.inputs import describe_validation_error
from stepsaga._reconciliation.lookup import Lookup
from stepsaga.agents._keys import (
    MAX_KEY_LENGTH,
    MIN_KEY_LENGTH,
    Grant,
    KeyBook,
    Limits,
    check_key,
)
from stepsaga.agents._results import SAME_KEY, ToolFailure, failure
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    BusinessRejectedError,
    ConditionFailedError,
    InvalidInputError,
    OutcomeUnknownError,
    StepSagaError,
    TransientError,
)
from stepsaga.ledger._models import Action, EffectClass
from stepsaga.ledger._rules import Ledger
from stepsaga.ledger._tools import ActionScope, consequential, count_tool_metric
from stepsaga.ledger._writes import Writes

if typing.TYPE_CHECKING:
    from stepsaga._handlers.metrics import MetricsSink

log = logging.getLogger(__name__)

#: The argument a mutating tool takes the key in (seed 001's name, camel case as in its schema).
KEY_ARGUMENT: Final = "idempotencyKey"
#: The request ``_meta`` entry a host puts the key in, out of the model's hands.
KEY_META: Final = "stepsaga/idempotencyKey"
#: The tool's ``_meta`` entry naming its effect class.
EFFECT_META: Final = "stepsaga/effect"
_CONTEXT = "ctx"
_SCOPE = "scope"
#: How often a concurrent duplicate looks whether the holder finished.
_POLL_S = 0.05

KEY_DESCRIPTION: Final = (
    "The idempotency key the approval flow issued for exactly this call. Reuse the SAME "
    "key on every retry of this call; never make one up, and never ask for a new key to "
    "retry: a new key is a new effect."
)

ToolFn = Callable[..., Mapping[str, Any] | BaseModel]
LookupFn = Callable[..., Lookup | None]


class _Raw(ArgModelBase):
    """What the SDK validates: nothing. The adapter validates strictly itself, so a
    refusal is a structured ``ToolFailure`` instead of pydantic's text."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return dict(self.__pydantic_extra__ or {})


class _Approve(BaseModel):
    """What the approval asks the person (MCP elicitation: primitive fields only)."""

    approve: bool = Field(title="Approve", description="Approve exactly this call.")


@dataclass(frozen=True)
class _Spec:
    """One mutating tool: its function, strict argument model and ledger settings."""

    name: str
    fn: ToolFn
    arguments: type[BaseModel]
    effect: EffectClass
    params: Sequence[str] | None
    cost: int | None
    lookup: LookupFn | None
    misfit: Callable[[Mapping[str, Any]], str | None] | None = None
    """For a typed tool: what in a result does not fit its published ``outputSchema``."""

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        return _validated(self.arguments, raw)

    def action(self, tenant: str, grant: Grant, arguments: Mapping[str, Any]) -> Action:
        return Action(
            tenant_id=tenant,
            intent=grant.intent,
            operation=self.name,
            effect=self.effect,
            params=consequential(arguments, self.params),
            cost=self.cost,
        )


class LedgeredTools:
    """Registers tools on ``server``: mutating ones through the ledger, reads around it.

    ``tenant`` is the server's authenticated tenant: a fixed id (a stdio server launched
    for one tenant) or a function of the request ``Context`` (an HTTP server reading its
    verified token). ``keys`` defaults to a ``KeyBook`` over the same ledger.
    ``host_key`` reads the host's key for a request (default: ``_meta``'s
    ``stepsaga/idempotencyKey``; an HTTP server may read a verified header instead); it
    wins over the model's argument. ``key_in_meta=True`` takes the key only from
    ``host_key`` (the input schema then has no key argument at all). ``busy_wait_s``
    bounds how long a concurrent duplicate waits for the holder. ``metrics`` is flushed
    after every mutating call; a stdio server must not write EMF to stdout (the
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
        key_in_meta: bool = False,
        host_key: Callable[[Context[Any, Any]], str | None] | None = None,
        busy_wait_s: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if isinstance(busy_wait_s, bool) or not isinstance(busy_wait_s, int | float):
            raise InvalidInputError("busy_wait_s must be a number of seconds", field="busy_wait_s")
        if busy_wait_s < 0:
            raise InvalidInputError("busy_wait_s must not be negative", field="busy_wait_s")
        self.server = server
        self._ledger = ledger
        self._tenant = tenant
        self._keys = keys or KeyBook(ledger)
        self._metrics = metrics
        self._key_in_meta = key_in_meta
        self._host_key = host_key or meta_key
        self._busy_wait_s = float(busy_wait_s)
        self._sleep = sleep
        self._specs: dict[str, _Spec] = {}

    def mutating(
        self,
        *,
        effect: EffectClass | str | None = None,
        name: str | None = None,
        params: Sequence[str] | None = None,
        cost: int | None = None,
        description: str | None = None,
        title: str | None = None,
        lookup: LookupFn | None = None,
        destructive: bool | None = None,
    ) -> Callable[[ToolFn], ToolFn]:
        """Serve ``fn(..., *, scope: ActionScope)`` as an MCP tool run through the ledger.

        ``effect`` left out means ``physical``; ``read`` is refused here (use ``read``).
        Every parameter needs a description (``Annotated[T, Field(description=...)]``).
        ``lookup(..., *, scope)`` takes the same arguments and answers ``Found``/``Absent``
        (or ``None``/``TransientError``: cannot tell) for an uncertain outcome.
        ``destructive`` (the ``destructiveHint``) defaults to true for keyed and physical
        writes, so hosts that confirm destructive tools confirm these.
        """
        declared = EffectClass.parse(effect if effect is None else str(effect))
        if not declared.recorded:
            raise InvalidInputError(
                "a read tool never touches the ledger: use read()", field="effect"
            )

        def register(fn: ToolFn) -> ToolFn:
            tool = name or fn.__name__
            spec = _Spec(
                name=tool,
                fn=fn,
                arguments=_arguments_model(tool, fn, with_key=not self._key_in_meta),
                effect=declared,
                params=params,
                cost=cost,
                lookup=lookup,
            )
            unknown = sorted(set(params or ()) - set(spec.arguments.model_fields))
            if unknown:
                raise InvalidInputError(
                    f"tool {tool} has no parameter {unknown[0]!r}", field="params"
                )
            self._specs[tool] = spec

            def call(ctx: Context[Any, Any], **raw: Any) -> CallToolResult:
                try:
                    return _success(self._answer(self._specs[tool], ctx, raw))
                except _Refused as refused:
                    return _failed(refused.failure)
                except Exception as exc:  # a bug or an unmapped library error: structured too
                    log.exception("tool %s: unexpected %s", tool, type(exc).__name__)
                    return _failed(failure(_unexpected(tool, exc)))
                finally:
                    if self._metrics is not None:
                        self._metrics.flush()  # one tool call is one invocation

            hint = (
                declared in (EffectClass.KEYED_WRITE, EffectClass.PHYSICAL)
                if destructive is None
                else destructive
            )
            misfit = self._add(
                call,
                tool,
                spec.arguments,
                _output_of(fn),
                reconcilable=True,
                title=title or _human(tool),
                description=description or inspect.getdoc(fn) or "",
                annotations=ToolAnnotations(
                    title=title or _human(tool),
                    read_only_hint=False,
                    destructive_hint=hint,
                    idempotent_hint=True,  # per key: a repeat returns the recorded result
                ),
                meta={EFFECT_META: declared.value},
            )
            self._specs[tool] = replace(spec, misfit=misfit)
            return fn

        return register

    def read(
        self, *, name: str | None = None, description: str | None = None, title: str | None = None
    ) -> Callable[[ToolFn], ToolFn]:
        """Serve ``fn`` as a read-only tool: no key, no scope, no ledger; the same strict
        schema and structured failures as the mutating tools."""

        def register(fn: ToolFn) -> ToolFn:
            tool = name or fn.__name__
            model = _arguments_model(tool, fn, with_key=False)

            def call(ctx: Context[Any, Any], **raw: Any) -> CallToolResult:
                try:
                    arguments = _validated(model, raw)
                except InvalidInputError as error:
                    field = error.data.get("field")
                    return _failed(failure(error, advice=f"fix {field} and call again"))
                try:
                    return _success(dict(_as_json(fn(**arguments))))
                except Exception as exc:
                    return _failure_of(tool, exc)

            self._add(
                call,
                tool,
                model,
                _output_of(fn),
                title=title or _human(tool),
                description=description or inspect.getdoc(fn) or "",
                annotations=ToolAnnotations(
                    title=title or _human(tool), read_only_hint=True, idempotent_hint=True
                ),
                meta={EFFECT_META: EffectClass.READ.value},
            )
            return fn

        return register

    def issue(
        self,
        tenant_id: str,
        tool: str,
        *,
        args: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        approved_by: str | None = None,
        approved_at: datetime | None = None,
    ) -> str:
        """Issue a key bound to one approved call of ``tool`` (``KeyBook.issue``), ``args``
        taken as a call's are: checked strictly against the tool's schema, its defaults
        filled in, only its ``params`` digested — so the approved digest is the one the
        call makes. (``KeyBook.issue(args=...)`` digests ``args`` as given: they must hold
        every digested argument, defaults included.) ``limits`` must name parameters."""
        spec = self._spec(tool)
        if args is not None:
            args = self._approvable(spec, args)
        if isinstance(limits, Limits):
            unknown = sorted({*limits.fixed, *limits.at_most} - set(spec.arguments.model_fields))
            if unknown:
                raise InvalidInputError(
                    f"limits: tool {tool} has no parameter {unknown[0]!r}", field="limits"
                )
        return self._keys.issue(
            tenant_id,
            tool=tool,
            args=args,
            limits=limits,
            approved_by=approved_by,
            approved_at=approved_at,
        )

    def approval(self, *, name: str = "request_approval") -> None:
        """An approval tool: the model names a mutating tool and its arguments, a person
        approves them through MCP elicitation, and the server mints a key bound to exactly
        that call (``KeyBook.issue(tool=..., args=...)``) and returns it. A client that
        cannot elicit gets a ``ToolFailure``: the host's own approval flow must issue keys.
        """

        async def approve(
            ctx: Context[Any, Any],
            tool: Annotated[str, Field(description="The tool to call once approved.")],
            arguments: Annotated[
                dict[str, Any],
                Field(description="Its exact arguments, without the idempotencyKey."),
            ],
        ) -> CallToolResult:
            try:
                return _success(await self._approve(ctx, tool, arguments))
            except Exception as exc:
                return _failure_of(name, exc)

        self._add(
            approve,
            name,
            _approval_model(name),
            _Approved,
            title="Request approval",
            description=(
                "Ask a person to approve one call of a mutating tool with exact arguments; "
                "returns the idempotencyKey bound to that call. Use it on that call and its "
                "retries only."
            ),
            annotations=ToolAnnotations(
                title="Request approval", read_only_hint=False, destructive_hint=False
            ),
            meta={EFFECT_META: "approval"},
        )

    # --- one call --------------------------------------------------------------------

    def _answer(self, spec: _Spec, ctx: Context[Any, Any], raw: dict[str, Any]) -> dict[str, Any]:
        """The call's result, held to the published ``outputSchema`` (a lookup's or a
        person's result included) so the client never meets a result it must reject."""
        result = self._call(spec, ctx, raw)
        misfit = spec.misfit(result) if spec.misfit is not None else None
        if misfit is not None:
            raise _Refused(
                failure(
                    StepSagaError(
                        f"{spec.name}: the recorded result does not fit the outputSchema ({misfit})"
                    ),
                    advice="do not retry now: an operator must look at this action's record; "
                    + SAME_KEY,
                    reuse_same_key=True,
                )
            )
        return result

    def _call(self, spec: _Spec, ctx: Context[Any, Any], raw: dict[str, Any]) -> dict[str, Any]:
        tenant = self._tenant_of(ctx)
        raw = dict(raw)
        hosts = self._host_key(ctx)
        if hosts is not None and not self._key_in_meta:
            raw[KEY_ARGUMENT] = hosts  # the host's key wins over the model's
        try:
            arguments = spec.validate(raw)
        except InvalidInputError as error:
            field = error.data.get("field")
            if self._key_in_meta:  # the model holds no key: nothing to keep
                raise _Refused(
                    failure(
                        error,
                        reuse_same_key=False,
                        advice=f"nothing was recorded; fix {field} and call again",
                    )
                ) from None
            raise _Refused(
                failure(
                    error,
                    reuse_same_key=True,
                    advice=f"nothing was recorded; fix {field} and " + SAME_KEY,
                )
            ) from None
        key = hosts if self._key_in_meta else arguments.pop(KEY_ARGUMENT)
        grant = self._grant(tenant, key)
        try:
            action = spec.action(tenant, grant, arguments)
        except StepSagaError as error:  # arguments the digest cannot take (money's precision)
            raise _Refused(failure(error)) from None
        try:
            grant.check(spec.name, action, arguments)
        except StepSagaError as error:
            count_tool_metric(self._metrics, action, error=error)
            raise _Refused(failure(error)) from None
        bind = self._keys.bind_on_first_use(tenant, grant, spec.name)
        scope = ActionScope(
            tenant, grant.intent, writes=Writes(with_claim=[bind]) if bind else None
        )
        ledger = self._target()  # one per call (a factory may open one)
        try:
            return self._perform(ledger, spec, action, scope, arguments)
        except ConditionFailedError:
            # Another tool's first call bound this unbound key first: refuse as its grant says.
            refusal = self._refusal(self._grant(tenant, key), spec, action, arguments)
            count_tool_metric(self._metrics, action, error=ActionConflictError(refusal.message))
            raise refusal from None
        except OutcomeUnknownError as error:
            settled = self._uncertain(ledger, spec, action, scope, arguments, grant, error)
            if isinstance(settled, ToolFailure):
                raise _Refused(settled) from None
            return settled
        except StepSagaError as error:
            count_tool_metric(self._metrics, action, error=error)
            raise _Refused(failure(error)) from None

    def _perform(
        self,
        ledger: Ledger,
        spec: _Spec,
        action: Action,
        scope: ActionScope,
        arguments: dict[str, Any],
    ) -> dict[str, Any]:
        """Run once per key; a concurrent duplicate waits for the holder (bounded). Only the
        ledger's refusal to claim waits: the same error raised by the tool itself has the
        fate the error table gives it, like any other."""
        deadline = time.monotonic() + self._busy_wait_s
        while True:
            entered = False

            def run(_claim: object) -> Mapping[str, Any]:
                nonlocal entered
                entered = True
                result = _as_json(spec.fn(**arguments, scope=scope))
                misfit = spec.misfit(result) if spec.misfit is not None else None
                if misfit is not None:  # after the effect: unrecorded, as an unstorable result
                    raise TypeError(
                        f"{spec.name} returned a result outside its outputSchema: {misfit}"
                    )
                return result

            try:
                done = ledger.run(action, run, writes=scope.writes)
            except ActionInProgressError:
                remaining = deadline - time.monotonic()
                if entered or remaining <= 0:
                    raise
                self._sleep(min(_POLL_S, remaining))
                continue
            count_tool_metric(self._metrics, action, replayed=done.replayed)
            return done.result

    def _uncertain(
        self,
        ledger: Ledger,
        spec: _Spec,
        action: Action,
        scope: ActionScope,
        arguments: dict[str, Any],
        grant: Grant,
        error: OutcomeUnknownError,
    ) -> dict[str, Any] | ToolFailure:
        """Automatic reconciliation decides what it can (the tool's lookup), as for a saga
        step; otherwise the open item a person resolves. A found effect is the answer."""
        from stepsaga._reconciliation.automatic import reconcile_action
        from stepsaga._reconciliation.reasons import Reason
        from stepsaga.workflow._events import ReconciliationOutcome

        count_tool_metric(self._metrics, action, error=error)
        lookup = spec.lookup

        def look() -> Lookup | None:
            return None if lookup is None else lookup(**arguments, scope=scope)

        try:
            verdict = reconcile_action(
                ledger,
                action,
                step=spec.name,
                reason=Reason.OUTCOME_UNKNOWN,
                failure={"error": error.error_name(), "message": error.message},
                look=look,
                topic=f"agent tool {spec.name}",
                context={"tool": spec.name, "approved": grant.approval()},
            )
        except StepSagaError:  # still uncertain; the next delivery reconciles again
            log.warning("%s: reconciliation did not finish", action.key, exc_info=True)
            return failure(error)
        if verdict.outcome is ReconciliationOutcome.APPLIED:
            record = ledger.get(action.key)
            return dict(record.result or {}) if record is not None else {}
        if verdict.outcome is ReconciliationOutcome.NOT_APPLIED:
            return failure(
                TransientError(f"{action.key}: {verdict.note}; nothing was applied", key=action.key)
            )
        return failure(
            OutcomeUnknownError(
                f"{spec.name}: the outcome is uncertain; reconciliation item "
                f"{verdict.item_id} waits for a person",
                key=action.key,
            ),
            item_id=verdict.item_id,
        )

    def _grant(self, tenant: str, key: str | None) -> Grant:
        try:
            if key is None:
                raise InvalidInputError(
                    f"no idempotencyKey from the host (the request's _meta[{KEY_META!r}])",
                    field=KEY_META,
                )
            return self._keys.grant(tenant, check_key(key))
        except StepSagaError as error:
            raise _Refused(
                failure(
                    error,
                    reuse_same_key=False,
                    advice="use the idempotencyKey the approval flow issued for this call "
                    "(never make one up); without one, ask for an approval",
                )
            ) from None

    def _refusal(
        self, grant: Grant, spec: _Spec, action: Action, arguments: dict[str, Any]
    ) -> _Refused:
        try:
            grant.check(spec.name, action, arguments)
        except StepSagaError as error:
            return _Refused(failure(error))
        return _Refused(failure(TransientError(f"{spec.name}: the key changed; retry")))

    async def _approve(
        self, ctx: Context[Any, Any], tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        try:
            spec = self._spec(tool)
        except InvalidInputError as error:
            raise _Refused(
                failure(error, advice="name one of " + ", ".join(sorted(self._specs)))
            ) from None
        tenant = self._tenant_of(ctx)
        try:
            digest_args = self._approvable(spec, arguments)
        except InvalidInputError as error:
            raise _Refused(failure(error, advice="fix the arguments and ask again")) from None
        capabilities = _capabilities(ctx)
        if capabilities is None or capabilities.elicitation is None:
            raise _Refused(
                failure(
                    BusinessRejectedError(
                        "this client cannot ask a person (no elicitation capability)"
                    ),
                    advice="get the idempotencyKey from the host's approval flow",
                )
            )
        asked = await ctx.elicit(
            f"Approve {tool} with {json.dumps(arguments, sort_keys=True)}?", _Approve
        )
        if asked.action != "accept" or not getattr(asked, "data", None) or not asked.data.approve:
            raise _Refused(
                failure(
                    BusinessRejectedError(f"{tool}: the person did not approve this call"),
                    advice="do not make this call",
                )
            )
        key = await anyio.to_thread.run_sync(
            lambda: self._keys.issue(tenant, tool=tool, args=digest_args)
        )
        return {
            "idempotencyKey": key,
            "tool": tool,
            "approved": self._keys.grant(tenant, key).approval(),
        }

    # --- plumbing --------------------------------------------------------------------

    def _spec(self, tool: str) -> _Spec:
        spec = self._specs.get(tool)
        if spec is None:
            raise InvalidInputError(f"tool: no mutating tool {tool!r}", field="tool")
        return spec

    def _approvable(self, spec: _Spec, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Approved arguments as a call's: strict, defaults filled, the digested ones."""
        if not isinstance(arguments, Mapping):
            raise InvalidInputError("args must be a mapping of the tool's arguments", field="args")
        checked = dict(arguments)
        if not self._key_in_meta:
            checked[KEY_ARGUMENT] = "k" * MIN_KEY_LENGTH  # the key is what gets minted
        valid = spec.validate(checked)
        valid.pop(KEY_ARGUMENT, None)
        return consequential(valid, spec.params)

    def _target(self) -> Ledger:
        return self._ledger if isinstance(self._ledger, Ledger) else self._ledger()

    def _tenant_of(self, ctx: Context[Any, Any]) -> str:
        return self._tenant if isinstance(self._tenant, str) else self._tenant(ctx)

    def _add(
        self,
        call: Callable[..., CallToolResult | Awaitable[CallToolResult]],
        tool: str,
        arguments: type[BaseModel],
        output: Any,
        *,
        reconcilable: bool = False,
        **details: Any,
    ) -> Callable[[Mapping[str, Any]], str | None] | None:
        """Register ``call`` under ``tool`` with ``arguments``' schema as its input schema
        and ``output`` as its output schema; the SDK hands ``call`` the raw arguments.
        A ``reconcilable`` tool with a typed result publishes it or ``RECONCILED``
        (``_or_reconciled``), and the check of that schema is returned."""
        call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context)],
            return_annotation=Annotated[CallToolResult, output],
        )
        call.__annotations__ = {_CONTEXT: Context, "return": Annotated[CallToolResult, output]}
        call.__name__ = tool  # the output schema's title: ``create_refundDictOutput``
        self.server.add_tool(call, name=tool, structured_output=True, **details)
        # The SDK has no door for a tool whose arguments it should not validate: swap its
        # argument model for a pass-through and publish the strict schema instead.
        registered = self.server._tool_manager.get_tool(tool)
        assert registered is not None
        registered.fn_metadata.arg_model = _Raw
        registered.parameters = arguments.model_json_schema()
        declared = registered.fn_metadata.output_schema
        if not reconcilable or output == dict[str, Any] or declared is None:
            return None
        # A typed result may also be a person's note: publish both, and check results
        # here (the SDK's check knows only the declared type). FuncMetadata's fields are
        # read live, and a schema without a model is published and left to its owner.
        published = _or_reconciled(declared)
        registered.fn_metadata.output_schema = published
        registered.fn_metadata.output_model = None
        return _checker(published)


class _Refused(Exception):  # noqa: N818 - a control-flow signal, never raised to callers
    def __init__(self, failed: ToolFailure) -> None:
        super().__init__(failed.message)
        self.failure = failed
        self.message = failed.message


class _Approved(BaseModel):
    model_config = ConfigDict(title="Approved call")

    idempotencyKey: str = Field(  # noqa: N815 - the argument's own name
        title="Idempotency key", description="The key bound to the approved call."
    )
    tool: str
    approved: str


def _validated(model: type[BaseModel], raw: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments, strictly (JSON types, no coercion, nothing extra)."""
    try:
        valid = model.model_validate_json(json.dumps(dict(raw)))
    except ValidationError as exc:
        field, line = describe_validation_error(exc, "arguments")
        raise InvalidInputError(line, field=field) from None
    return {name: getattr(valid, name) for name in type(valid).model_fields}


def _as_json(returned: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    """A tool's return as the JSON object the ledger stores and every delivery answers: a
    pydantic model dumped as on the wire (JSON mode, by alias), so the first call and its
    replays return the same; anything else as returned (the ledger refuses a non-mapping)."""
    if isinstance(returned, BaseModel):
        return returned.model_dump(mode="json", by_alias=True)
    return returned


def _unexpected(tool: str, exc: Exception) -> StepSagaError:
    """What the model reads of a bug: its type only (the server's log has the rest)."""
    return StepSagaError(f"{tool}: unexpected {type(exc).__name__}; the server's log has it")


def _failure_of(tool: str, exc: Exception) -> CallToolResult:
    """A failed call as the model reads it: a refusal as built, our error as raised, anything
    else as unexpected (its type only; logged with its traceback, so call it from the
    ``except`` block)."""
    if isinstance(exc, _Refused):
        return _failed(exc.failure)
    if isinstance(exc, StepSagaError):
        return _failed(failure(exc))
    log.exception("tool %s: unexpected %s", tool, type(exc).__name__)
    return _failed(failure(_unexpected(tool, exc)))


def _success(result: dict[str, Any]) -> CallToolResult:
    text = json.dumps(result, sort_keys=True, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=result)


def _failed(failed: ToolFailure) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=failed.text())],
        structured_content=failed.model_dump(mode="json"),
        is_error=True,
    )


def meta_key(ctx: Context[Any, Any] | None) -> str | None:
    """The key a host put in the request's ``_meta[KEY_META]``, if any."""
    try:
        meta = ctx.request_context.meta if ctx is not None else None
    except ValueError:  # no request (called in process)
        return None
    value = (meta or {}).get(KEY_META)
    return value if isinstance(value, str) else None


def _capabilities(ctx: Context[Any, Any]) -> Any:
    try:
        return ctx.client_capabilities
    except ValueError:
        return None


def _human(name: str) -> str:
    """``create_refund`` → ``Create refund``; ``idempotencyKey`` → ``Idempotency key``."""
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in name).replace("_", " ").split()
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def _arguments_model(tool: str, fn: ToolFn, *, with_key: bool) -> type[BaseModel]:
    """The strict model of ``fn``'s parameters (less the scope), plus the key."""
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.name == _SCOPE:
            continue
        if parameter.name in (KEY_ARGUMENT, _CONTEXT):
            raise InvalidInputError(
                f"tool {tool}: parameter {parameter.name!r} is the adapter's own",
                field=parameter.name,
            )
        annotation = hints.get(parameter.name, Any)
        described = [
            m for m in typing.get_args(annotation)[1:] if isinstance(m, FieldInfo) and m.description
        ]
        if typing.get_origin(annotation) is not Annotated or not described:
            raise InvalidInputError(
                f"tool {tool}: parameter {parameter.name} needs a description "
                "(Annotated[T, Field(description=...)]): the model reads it",
                field=parameter.name,
            )
        typed: Any = Annotated[annotation, Field(title=_human(parameter.name))]
        default = parameter.default
        fields[parameter.name] = (
            (typed, ...) if default is inspect.Parameter.empty else (typed, default)
        )
    if with_key:
        fields[KEY_ARGUMENT] = (
            Annotated[
                str,
                Field(
                    title="Idempotency key",
                    description=KEY_DESCRIPTION,
                    min_length=MIN_KEY_LENGTH,
                    max_length=MAX_KEY_LENGTH,
                ),
            ],
            ...,
        )
    config = ConfigDict(extra="forbid", strict=True, title=f"{_human(tool)} arguments")
    model: type[BaseModel] = create_model(f"{tool}_arguments", __config__=config, **fields)
    return model


def _approval_model(name: str) -> type[BaseModel]:
    config = ConfigDict(extra="forbid", strict=True, title="Request approval arguments")
    fields: dict[str, Any] = {
        "tool": (
            Annotated[str, Field(title="Tool", description="The tool to call once approved.")],
            ...,
        ),
        "arguments": (
            Annotated[
                dict[str, Any],
                Field(title="Arguments", description="Its exact arguments, without the key."),
            ],
            ...,
        ),
    }
    model: type[BaseModel] = create_model(f"{name}_arguments", __config__=config, **fields)
    return model


#: What a retry answers after a person resolved an uncertain outcome ``applied`` without
#: the tool's own result (``stepsaga recon resolve ID --outcome applied``; the ledger's
#: default note): a typed tool's ``outputSchema`` offers it beside the declared type.
RECONCILED: Final[dict[str, Any]] = {
    "title": "Reconciled",
    "description": (
        "The outcome was uncertain and a person found it applied; the tool's own result "
        "was not recorded. The reconciliation item has the evidence."
    ),
    "type": "object",
    "properties": {
        "reconciled": {
            "type": "object",
            "properties": {
                "item_id": {"type": "string", "description": "The reconciliation item."},
                "outcome": {"const": "applied", "description": "What the person found."},
                "by": {"type": "string", "description": "Who resolved the item."},
            },
            "required": ["item_id", "outcome", "by"],
        }
    },
    "required": ["reconciled"],
}


def _or_reconciled(declared: Mapping[str, Any]) -> dict[str, Any]:
    """A typed tool's ``outputSchema``: its declared result, or ``RECONCILED``. The root
    stays an object (MCP requires it); the declared type's ``$defs`` move to the root,
    where its ``#/$defs/...`` references point."""
    own = dict(declared)
    definitions = own.pop("$defs", None)
    title = own.get("title", "Result")
    published: dict[str, Any] = {
        "type": "object",
        "title": f"{title} or Reconciled",
        "description": f"The tool's result ({title}), or Reconciled after a person's resolve.",
        "anyOf": [own, RECONCILED],
    }
    if definitions:
        published["$defs"] = definitions
    return published


def _checker(schema: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], str | None]:
    """What in a result does not fit ``schema`` (compiled once; ``None``: it fits), named
    by path and rule, never by value: it reaches the model, the log and the item."""
    from jsonschema import exceptions, validators  # the mcp SDK's own dependency

    validator = validators.validator_for(schema)(schema)

    def misfit(result: Mapping[str, Any]) -> str | None:
        error = exceptions.best_match(validator.iter_errors(result))
        if error is None:
            return None
        if error.validator == "anyOf" and error.context:  # name what the declared type lacks
            declared = [e for e in error.context if e.relative_schema_path[0] == 0]
            error = exceptions.best_match(declared) or error
        where = "/".join(str(part) for part in error.absolute_path) or "the result"
        if error.validator == "required":  # "'parcel' is a required property": a name
            return f"{where}: {error.message}"
        return f"{where}: fails its schema's {error.validator!r} rule"

    return misfit


def _output_of(fn: ToolFn) -> Any:
    """The output schema's type: ``fn``'s return annotation (a plain mapping: any object)."""
    returned = typing.get_type_hints(fn, include_extras=True).get("return")
    if (
        returned is None
        or typing.get_origin(returned) in (Mapping, dict)
        or returned in (dict, Mapping)
    ):
        return dict[str, Any]
    return returned


__all__ = [
    "EFFECT_META",
    "KEY_ARGUMENT",
    "KEY_DESCRIPTION",
    "KEY_META",
    "RECONCILED",
    "LedgeredTools",
    "meta_key",
]
