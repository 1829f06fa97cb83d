"""The console's pages: a Starlette app over the same backend the CLI opens.

Every page calls the ``SagaBackend`` verbs (``status``, ``history``, ``redrive``,
``recon_list``/``show``/``resolve``, ``whoami``) and the ledger ``stepsaga ledger`` reads;
nothing here runs, decides or stores anything itself. A backend is opened per request and
closed after it, so a page always shows what the stores say now. Handlers are ``async``
and call the backend directly: SQLite connections stay on the event loop's one thread, and
one operator's console needs no concurrency.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from stepsaga.backends import (
    CaseOutcome,
    ExecutionView,
    ReconFilter,
    SagaBackend,
    SupportsRetryDelays,
    entered_states,
)
from stepsaga.clock import Clock, SystemClock
from stepsaga.console.layout import GraphPicture, layout
from stepsaga.console.security import (
    CSRF_FIELD,
    ForbiddenError,
    TokenGate,
    check_csrf,
    csrf_token,
)
from stepsaga.console.timeline import short_cause, timeline
from stepsaga.engine.models import ExecutionStatus
from stepsaga.errors import (
    IllegalTransitionError,
    InvalidInputError,
    NotFoundError,
    StepSagaError,
)
from stepsaga.ledger import Ledger, Record
from stepsaga.project import Project
from stepsaga.reconciliation import parse_outcome
from stepsaga.reconciliation.overdue import is_overdue
from stepsaga.workflow.graph import Visited, build_graph

#: Statuses an execution can be redriven from (AWS's rule; the backend has the last word).
REDRIVABLE = frozenset({"FAILED", "ABORTED", "TIMED_OUT"})
DEFAULT_OVERDUE_AFTER = timedelta(hours=24)
LEDGER_LIMIT = 500
#: The executions list's filters (``list_executions``' keyword arguments).
_LIST_FILTERS = ("saga", "tenant", "status", "outcome", "since")


@dataclass(frozen=True)
class ConsoleConfig:
    """What the console serves. ``open_backend``/``open_ledger`` are the CLI's own openers
    (``stepsaga.cli.backend.open_backend``, ``stepsaga.cli.ledger.ledger_of``)."""

    project: Project
    open_backend: Callable[[], SagaBackend]
    open_ledger: Callable[[], Ledger | None]
    token: str
    port: int
    #: ``local`` or ``aws``: shown in the header.
    backend_name: str = "local"
    #: Hosts the browser may name (DNS rebinding defence).
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
    #: Age at which an OPEN item is marked overdue (the stack's alarm default: 24 h).
    overdue_after: timedelta = DEFAULT_OVERDUE_AFTER
    #: Executions per page of the list.
    page_size: int = 25
    clock: Clock = field(default_factory=SystemClock)


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("stepsaga.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, sort_keys=True, default=str)
    env.filters["short"] = short_cause
    return env


def _when(value: datetime | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value.tzinfo else value.isoformat()


def age_text(seconds: float) -> str:
    """``3d 4h``, ``2h 5m``, ``4m``: how long an item has waited."""
    minutes = int(seconds // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {mins}m"
    return f"{mins}m"


class Console:
    """The pages (one method each) and the app that routes to them."""

    def __init__(self, config: ConsoleConfig) -> None:
        self.config = config
        self.env = _environment()
        self._graphs: dict[str, Any] = {}

    # --- plumbing --------------------------------------------------------------------------

    def app(self) -> Starlette:
        c = self.config
        routes = [
            Route("/", lambda request: RedirectResponse("/executions", 303)),
            Route("/executions", self.executions),
            Route("/executions/{name}", self.execution),
            Route("/executions/{name}/redrive", self.redrive, methods=["POST"]),
            Route("/executions/{name}/stop", self.stop, methods=["POST"]),
            Route("/reconciliation", self.queue),
            Route("/reconciliation/{item_id}", self.item),
            Route("/reconciliation/{item_id}/resolve", self.resolve, methods=["POST"]),
            Route("/ledger", self.ledger),
            Mount("/static", StaticFiles(packages=[("stepsaga.console", "static")]), name="static"),
        ]
        middleware = [
            Middleware(TrustedHostMiddleware, allowed_hosts=list(c.allowed_hosts)),
            Middleware(TokenGate, token=c.token, port=c.port),
        ]
        return Starlette(routes=routes, middleware=middleware)

    def page(self, template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("csrf", csrf_token(self.config.token))
        values.setdefault("csrf_field", CSRF_FIELD)
        values.setdefault("backend_name", self.config.backend_name)
        values.setdefault("project_sagas", self.config.project.saga_names)
        text = self.env.get_template(template).render(**values)
        return HTMLResponse(text, status_code=status_code)

    @contextmanager
    def backend(self) -> Iterator[SagaBackend]:
        with self.config.open_backend() as backend:
            yield backend

    def refused(self, exc: Exception) -> Response:
        """Our errors as a page: bad input 400, not found 404, a refused change 409."""
        if isinstance(exc, ForbiddenError):
            return PlainTextResponse(str(exc), status_code=403)
        code = 500
        if isinstance(exc, NotFoundError):
            code = 404
        elif isinstance(exc, InvalidInputError):
            code = 400
        elif isinstance(exc, IllegalTransitionError):
            code = 409
        message = exc.message if isinstance(exc, StepSagaError) else f"{type(exc).__name__}: {exc}"
        return self.page("error.html", status_code=code, message=message, code=code)

    async def _form(self, request: Request) -> Any:
        form = await request.form()
        check_csrf(form, self.config.token)
        return form

    # --- executions --------------------------------------------------------------------------

    async def executions(self, request: Request) -> Response:
        """``list_executions`` with the form's filters; ``next`` is the page token."""
        params = request.query_params
        filters = {k: params.get(k, "").strip() for k in _LIST_FILTERS}
        token = params.get("next") or None
        try:
            with self.backend() as backend:
                page = backend.list_executions(
                    saga=filters["saga"] or None,
                    tenant=filters["tenant"] or None,
                    status=filters["status"] or None,
                    outcome=filters["outcome"] or None,
                    since=filters["since"] or None,
                    limit=self.config.page_size,
                    next_token=token,
                )
        except StepSagaError as exc:
            return self.refused(exc)
        given = {k: v for k, v in filters.items() if v}
        return self.page(
            "executions.html",
            executions=page.items,
            filters=filters,
            filtered=bool(given),
            statuses=[s.value for s in ExecutionStatus],
            outcomes=[o.value for o in CaseOutcome],
            next_url=f"/executions?{urlencode({**given, 'next': page.next_token})}"
            if page.next_token
            else None,
            first_url=f"/executions?{urlencode(given)}" if token else None,
        )

    async def execution(self, request: Request) -> Response:
        name = request.path_params["name"]
        tenant = request.query_params.get("tenant") or None
        try:
            with self.backend() as backend:
                view = backend.status(name, tenant=tenant)
                events = backend.history(view.execution_arn)["events"]
                chosen = None
                if isinstance(backend, SupportsRetryDelays):
                    chosen = backend.retry_delays(view.execution_arn)
                items = [backend.recon_show(item_id) for item_id in view.open_items]
                operator = backend.whoami() if view.status == "RUNNING" else None
            records = self._records(view)
        except StepSagaError as exc:
            return self.refused(exc)
        picture = self._picture(view.saga, Visited.from_path(entered_states(events)))
        return self.page(
            "execution.html",
            view=view,
            picture=picture,
            entries=timeline(events, chosen),
            records=records,
            items=items,
            redrivable=_redrivable(view),
            stoppable=view.status == "RUNNING",
            operator=operator,
            message=request.query_params.get("done"),
        )

    async def redrive(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            form = await self._form(request)
            with self.backend() as backend:
                view = backend.redrive(name, tenant=form.get("tenant") or None)
        except (StepSagaError, ForbiddenError) as exc:
            return self.refused(exc)
        return self._to_execution(view, "redriven")

    async def stop(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            form = await self._form(request)
            with self.backend() as backend:
                view = backend.stop(
                    name,
                    tenant=form.get("tenant") or None,
                    by=backend.whoami(),
                    note=str(form.get("note") or ""),
                )
        except (StepSagaError, ForbiddenError) as exc:
            return self.refused(exc)
        return self._to_execution(view, "stopped")

    def _to_execution(self, view: ExecutionView, done: str) -> Response:
        url = request_url("/executions/" + view.name, tenant=view.tenant_id, done=done)
        return RedirectResponse(url, 303)

    def _records(self, view: ExecutionView) -> dict[str, Record]:
        """The ledger records of this execution's revision, by action key."""
        ledger = self.config.open_ledger()
        if ledger is None:
            return {}
        with ledger:
            found = ledger.list(tenant=view.tenant_id, case=view.case_id)
        return {r.key: r for r in found if r.revision == view.revision}

    def _picture(self, saga_name: str, visited: Visited) -> GraphPicture:
        if saga_name not in self._graphs:
            from stepsaga.workflow.compiler import compile  # as `stepsaga graph` does

            saga = self.config.project.saga(saga_name)
            self._graphs[saga_name] = build_graph(compile(saga), saga.name)
        return layout(self._graphs[saga_name], visited)

    # --- reconciliation ----------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        params = request.query_params
        try:
            status = ReconFilter(params.get("status") or ReconFilter.OPEN.value)
        except ValueError:
            status = None
        if status is None:
            return self.refused(
                InvalidInputError("status: must be open, resolved or all", field="status")
            )
        tenant = params.get("tenant") or None
        case = params.get("case") or None
        try:
            with self.backend() as backend:
                items = backend.recon_list(status=status, tenant=tenant, case=case)
        except StepSagaError as exc:
            return self.refused(exc)
        now = self.config.clock.now()
        rows = [
            {
                "item": item,
                "age": age_text((now - item.created_at).total_seconds()),
                "overdue": item.status == "OPEN"
                and is_overdue(item.created_at, now=now, threshold=self.config.overdue_after),
            }
            for item in items
        ]
        return self.page(
            "queue.html",
            rows=rows,
            status=status.value,
            tenant=tenant or "",
            case=case or "",
            overdue_hours=self.config.overdue_after.total_seconds() / 3600,
        )

    async def item(self, request: Request) -> Response:
        item_id = request.path_params["item_id"]
        try:
            with self.backend() as backend:
                item = backend.recon_show(item_id)
                operator = backend.whoami()
                continuation = None
                if item.status == "RESOLVED":
                    continuation = backend.status(item.case_id, tenant=item.tenant_id)
        except StepSagaError as exc:
            return self.refused(exc)
        now = self.config.clock.now()
        return self.page(
            "item.html",
            item=item,
            operator=operator,
            continuation=continuation,
            age=age_text((now - item.created_at).total_seconds()),
            overdue=item.status == "OPEN"
            and is_overdue(item.created_at, now=now, threshold=self.config.overdue_after),
        )

    async def resolve(self, request: Request) -> Response:
        item_id = request.path_params["item_id"]
        try:
            form = await self._form(request)
            outcome = parse_outcome(str(form.get("outcome") or ""))
            note = str(form.get("note") or "").strip()
            if not note:
                raise InvalidInputError("note: say why (it is kept on the item)", field="note")
            with self.backend() as backend:
                backend.recon_resolve(item_id, outcome, backend.whoami(), note)
        except (StepSagaError, ForbiddenError) as exc:
            return self.refused(exc)
        return RedirectResponse(f"/reconciliation/{_path(item_id)}", 303)

    # --- ledger ------------------------------------------------------------------------------

    async def ledger(self, request: Request) -> Response:
        tenant = request.query_params.get("tenant") or None
        case = request.query_params.get("case") or None
        try:
            ledger = self.config.open_ledger()
            records: list[Record] = []
            if ledger is not None:
                with ledger:
                    records = ledger.list(tenant=tenant, case=case, limit=LEDGER_LIMIT)
        except StepSagaError as exc:
            return self.refused(exc)
        return self.page(
            "ledger.html",
            records=records,
            tenant=tenant or "",
            case=case or "",
            limit=LEDGER_LIMIT,
        )


def _redrivable(view: ExecutionView) -> bool:
    """What the backend says (``redriveStatus``), else AWS's rule on the status."""
    if view.redrive_status is not None:
        return view.redrive_status == "REDRIVABLE"
    return view.status in REDRIVABLE


def _path(segment: str) -> str:
    return quote(segment, safe="")


def request_url(path: str, **query: str | None) -> str:
    """``path`` (its last segment quoted) with the non-empty ``query`` values."""
    head, _, last = path.rpartition("/")
    given = {k: v for k, v in query.items() if v}
    return f"{head}/{_path(last)}" + (f"?{urlencode(given)}" if given else "")


def create_app(config: ConsoleConfig) -> Starlette:
    """The console as an ASGI app (``serve`` runs it with uvicorn)."""
    return Console(config).app()
